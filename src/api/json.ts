/** The decoding `Response.text()` does: UTF-8, undecodable bytes replaced, a leading BOM dropped. */
const UTF8 = new TextDecoder();

/** An answer's bytes as text, exactly as `Response.text()` would have given them. */
export function decodeAnswer(bytes: Uint8Array): string {
  return UTF8.decode(bytes);
}

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
export function isUnsafeInteger(digits: string): boolean {
  const d = digits.startsWith('-') ? digits.slice(1) : digits;
  return d.length > MAX_SAFE.length || (d.length === MAX_SAFE.length && d > MAX_SAFE);
}

/**
 * The index after the string that opens at `open`: the next quote that an even number of
 * backslashes precedes. Jumping from quote to quote (indexOf) instead of stepping through
 * every character makes the pass a third cheaper: most of a page's text is inside strings.
 */
function afterString(text: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return text.length;
    let b = quote - 1;
    while (text.charCodeAt(b) === 92 /* \ */) b--;
    if ((quote - 1 - b) % 2 === 0) return quote + 1;
    from = quote + 1;
  }
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
      i = afterString(text, i);
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

// ES2024 methods Node 20 has (V8 11.3); TypeScript's ES2023 lib does not declare them.
declare global {
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/**
 * The only ways JSON text can carry a character no warehouse text holds: NUL and surrogates
 * arrive as `\u` escapes (a raw control character is not valid JSON, and undecodable bytes
 * were already replaced by the UTF-8 decoder). Escaped pairs (emoji from a server that escapes
 * everything) match too; they only cost the check of each string.
 */
const SUSPECT_ESCAPE = /\\u(?:0000|d[89a-f])/i;
const REPLACEMENT = '\uFFFD';

/** A string Postgres can store: NUL (refused by text and jsonb) and unpaired surrogates (refused by jsonb) become U+FFFD. */
function storable(s: string): string | null {
  const nul = s.includes('\u0000');
  if (!nul && s.isWellFormed()) return null;
  return (nul ? s.replaceAll('\u0000', REPLACEMENT) : s).toWellFormed();
}

/** Whether a JSON text may hold a string that `repairStrings` would change. */
export function hasSuspectEscape(text: string): boolean {
  return SUSPECT_ESCAPE.test(text);
}

/**
 * Replaces, in place, NUL characters and unpaired surrogates in every string and key of a
 * parsed body with U+FFFD, noting the path of each value changed (`organizations[0].name`).
 * SQLite could hold them but Postgres cannot: without this one such character would fail its
 * page on every run, and the stream would never get past it. Both warehouses get the same text.
 */
export function repairStrings(value: unknown, path: string, repaired: string[]): unknown {
  if (typeof value === 'string') {
    const fixed = storable(value);
    if (fixed === null) return value;
    repaired.push(path || '(body)');
    return fixed;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = repairStrings(value[i], `${path}[${i}]`, repaired);
    return value;
  }
  if (value === null || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    const fixedKey = storable(key);
    const at = path ? `${path}.${fixedKey ?? key}` : (fixedKey ?? key);
    const v = repairStrings(object[key], at, repaired);
    if (fixedKey === null) object[key] = v;
    else {
      repaired.push(`${at} (key)`);
      delete object[key];
      object[fixedKey] = v;
    }
  }
  return object;
}

/**
 * JSON.parse that keeps integers too large for a double exact, as strings of their digits
 * (spec 2: identifiers are strings or integers as the responses give them; a record must
 * never silently change its id). Other numbers parse as usual. Strings holding NUL or an
 * unpaired surrogate are repaired (`repairStrings`); the paths changed go to `repaired`.
 */
export function parseJson(text: string, repaired: string[] = []): unknown {
  let value: unknown;
  try {
    value = JSON.parse(LONG_INTEGER.test(text) ? quoteUnsafeIntegers(text) : text) as unknown;
  } catch (err) {
    const snippet = text.slice(0, 80).replace(/\s+/g, ' ');
    throw new InvalidJsonError(`response body is not valid JSON (${text.length} bytes, starting "${snippet}")`, { cause: err });
  }
  return hasSuspectEscape(text) ? repairStrings(value, '', repaired) : value;
}
