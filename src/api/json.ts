import { parse as parseLossless, isInteger, isSafeNumber } from 'lossless-json';

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

function parseNumber(text: string): number | string {
  if (isInteger(text) && !isSafeNumber(text)) return text;
  return Number(text);
}

/**
 * JSON.parse that keeps integers too large for a double exact, as strings of their digits
 * (spec 2: identifiers are strings or integers as the responses give them; a record must
 * never silently change its id). Other numbers parse as usual.
 */
export function parseJson(text: string): unknown {
  try {
    if (!LONG_INTEGER.test(text)) return JSON.parse(text) as unknown;
    return parseLossless(text, null, parseNumber);
  } catch (err) {
    const snippet = text.slice(0, 80).replace(/\s+/g, ' ');
    throw new InvalidJsonError(`response body is not valid JSON (${text.length} bytes, starting "${snippet}")`, { cause: err });
  }
}
