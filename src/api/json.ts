/** The response body was not JSON; classify() treats it as retriable (a cut-short body). */
export class InvalidJsonError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InvalidJsonError';
  }
}

// An integer literal of 16+ digits in a value position may not fit a double exactly
// (2^53 has 16 digits). A match inside a string only costs the slow path, never correctness.
const LONG_INTEGER = /(?:^|[:[,])\s*-?\d{16,}/;

const MAX_SAFE = String(Number.MAX_SAFE_INTEGER);

/** Whether an integer literal (optional minus, digits only) is beyond a double's exact range. */
function isUnsafeInteger(digits: string): boolean {
  const d = digits.startsWith('-') ? digits.slice(1) : digits;
  return d.length > MAX_SAFE.length || (d.length === MAX_SAFE.length && d > MAX_SAFE);
}

/**
 * Puts quotes around the integer literals a double cannot hold, outside strings, so that
 * JSON.parse returns them as their exact digits. One pass over the text; strings (with
 * their escapes) are skipped whole, so text that merely looks like a number is untouched.
 */
export function quoteUnsafeIntegers(text: string): string {
  const parts: string[] = [];
  let copied = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 92 /* \ */) i += 2;
        else if (d === 34) break;
        else i++;
      }
      i++;
      continue;
    }
    if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      const start = i;
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d >= 48 && d <= 57) i++;
        else break;
      }
      const next = i < n ? text.charCodeAt(i) : 0;
      // A fraction or exponent makes it a non-integer: JSON.parse handles it as usual.
      if (next === 46 /* . */ || next === 101 /* e */ || next === 69 /* E */) {
        while (i < n && /[0-9.eE+-]/.test(text[i]!)) i++;
        continue;
      }
      const literal = text.slice(start, i);
      if (literal.length >= 16 && isUnsafeInteger(literal)) {
        parts.push(text.slice(copied, start), '"', literal, '"');
        copied = i;
      }
      continue;
    }
    i++;
  }
  if (copied === 0) return text;
  parts.push(text.slice(copied));
  return parts.join('');
}

/**
 * JSON.parse that keeps integers too large for a double exact, as strings of their digits
 * (spec 2: identifiers are strings or integers as the responses give them; a record must
 * never silently change its id). Other numbers parse as usual.
 */
export function parseJson(text: string): unknown {
  try {
    if (!LONG_INTEGER.test(text)) return JSON.parse(text) as unknown;
    return JSON.parse(quoteUnsafeIntegers(text)) as unknown;
  } catch (err) {
    const snippet = text.slice(0, 80).replace(/\s+/g, ' ');
    throw new InvalidJsonError(`response body is not valid JSON (${text.length} bytes, starting "${snippet}")`, { cause: err });
  }
}
