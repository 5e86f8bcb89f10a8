import { isAscii } from 'node:buffer';
import { decodeAnswer, hasSuspectEscape, isUnsafeInteger, parseJson, repairStrings } from './json.js';

/*
 * V8 keeps a string longer than 128 KB (64 K characters once one of them is not ASCII: the
 * string then takes two bytes a character) in its large-object space, on pages of its own that
 * the kernel hands out and zeroes for each string and takes back at the next collection. A
 * list page of 200 records is 70-220 KB, so decoding it as one string cost ~1 ms, two-thirds of
 * it in the kernel, before JSON.parse even began. Cut at its records, the same page decodes as
 * 200 small strings that live and die in the young generation: the whole parse takes a third
 * of the time.
 */
const WHOLE_LIMIT_ASCII = 120_000;
const WHOLE_LIMIT = 60_000;

// A piece is decoded as a part of the body, not as a body: a byte-order mark at its start stays
// (and JSON.parse refuses it there, as it does in the whole text) instead of being dropped.
const PIECE = new TextDecoder('utf-8', { ignoreBOM: true });

function decodePiece(b: Uint8Array, from: number, to?: number): string {
  return PIECE.decode(b.subarray(from, to));
}

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
const MINUS = 45;

/** An array that is a member of the top-level object: its brackets and the commas between its elements. */
interface ArrayMember {
  /** Where the member's key string opens and closes (the quotes). */
  keyOpen: number;
  keyClose: number;
  open: number;
  close: number;
  commas: number[];
}

interface Layout {
  members: ArrayMember[];
  /** Spans of every string directly inside the top-level object (keys and values): open and close quote. */
  topStrings: number[];
  /** Start and end of every integer literal of 16 or more digits outside strings. */
  longIntegers: number[];
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 48 && c <= 57;
}

function isSpace(c: number | undefined): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/** The index of the quote that closes the string opening at `open`, or -1 if none does. */
function closingQuote(b: Uint8Array, open: number): number {
  let q = open;
  for (;;) {
    q = b.indexOf(QUOTE, q + 1);
    if (q < 0) return -1;
    let k = q - 1;
    while (b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q;
  }
}

/**
 * One pass over the bytes of a body that should be a JSON object: where its array members and
 * their elements are, and where the long integer literals are. Lexes strings exactly as JSON
 * does and trusts nothing else: anything it misreads leaves a piece that JSON.parse refuses,
 * and the caller then parses the body whole. Null when the body is not an object.
 */
function layoutOf(b: Uint8Array): Layout | null {
  const n = b.length;
  let i = 0;
  while (isSpace(b[i])) i++;
  if (b[i] !== OPEN_OBJECT) return null;
  const members: ArrayMember[] = [];
  const topStrings: number[] = [];
  const longIntegers: number[] = [];
  let depth = 0;
  let keyOpen = -1;
  let keyClose = -1;
  let member: ArrayMember | null = null;
  for (; i < n; i++) {
    const c = b[i]!;
    if (c === QUOTE) {
      const close = closingQuote(b, i);
      if (close < 0) return null;
      if (depth === 1) {
        keyOpen = i;
        keyClose = close;
        topStrings.push(i, close);
      }
      i = close;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      if (depth === 2 && c === OPEN_ARRAY) member = { keyOpen, keyClose, open: i, close: -1, commas: [] };
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 2 && member !== null) {
        member.close = i;
        members.push(member);
        member = null;
      }
      depth--;
      if (depth === 0) return { members, topStrings, longIntegers };
    } else if (c === COMMA) {
      if (depth === 2 && member !== null) member.commas.push(i);
    } else if (c === MINUS || isDigit(c)) {
      const start = i;
      i++;
      while (isDigit(b[i])) i++;
      const next = b[i];
      // A fraction or exponent makes it a non-integer: JSON.parse handles it as usual.
      if (next === 46 /* . */ || next === 101 /* e */ || next === 69 /* E */) {
        while (i < n && (isDigit(b[i]) || b[i] === 46 || b[i] === 101 || b[i] === 69 || b[i] === 43 || b[i] === MINUS)) i++;
      } else if (i - start >= 16) longIntegers.push(start, i);
      i--;
    }
  }
  return null;
}

/**
 * The text of bytes [from, to), with quotes around the integer literals a double cannot hold
 * (as quoteUnsafeIntegers would put them). `at` walks `longIntegers` forward across calls.
 */
function pieceText(b: Uint8Array, from: number, to: number, longIntegers: number[], at: { i: number }): string {
  while (at.i < longIntegers.length && longIntegers[at.i]! < from) at.i += 2;
  if (at.i >= longIntegers.length || longIntegers[at.i]! >= to) return decodePiece(b, from, to);
  let text = '';
  let copied = from;
  while (at.i < longIntegers.length && longIntegers[at.i]! < to) {
    const start = longIntegers[at.i]!;
    const end = longIntegers[at.i + 1]!;
    const literal = decodePiece(b, start, end);
    if (isUnsafeInteger(literal)) {
      text += `${decodePiece(b, copied, start)}"${literal}"`;
      copied = end;
    }
    at.i += 2;
  }
  return text + decodePiece(b, copied, to);
}

/** The elements of one array member, each parsed (and repaired) on its own. Throws on a piece that is not JSON. */
function parseElements(b: Uint8Array, m: ArrayMember, name: string, longIntegers: number[], repaired: string[]): unknown[] {
  const elements: unknown[] = [];
  if (m.commas.length === 0 && blank(b, m.open + 1, m.close)) return elements;
  // pieceText moves past the integers before each piece itself.
  const at = { i: 0 };
  let from = m.open + 1;
  for (let k = 0; k <= m.commas.length; k++) {
    const end = k < m.commas.length ? m.commas[k]! : m.close;
    const text = pieceText(b, from, end, longIntegers, at);
    let value = JSON.parse(text) as unknown;
    if (hasSuspectEscape(text)) value = repairStrings(value, `${name}[${elements.length}]`, repaired);
    elements.push(value);
    from = end + 1;
  }
  return elements;
}

/** The body parsed piece by piece, or undefined when it must be parsed whole. Exported for its tests. */
export function parseInPieces(b: Uint8Array, repaired: string[]): unknown {
  const layout = layoutOf(b);
  if (layout === null || layout.members.length === 0) return undefined;
  const { members, topStrings, longIntegers } = layout;
  const names: string[] = [];
  let skeleton = '';
  let copied = 0;
  try {
    for (const m of members) {
      const name = keyName(b, m, topStrings);
      if (name === undefined) return undefined;
      names.push(name);
      // The skeleton is parsed by parseJson, which quotes its long integers itself.
      skeleton += decodePiece(b, copied, m.open + 1);
      copied = m.close;
    }
    skeleton += decodePiece(b, copied);
    const arrays = members.map((m, k) => parseElements(b, m, names[k]!, longIntegers, repaired));
    const top = parseJson(skeleton, repaired) as Record<string, unknown>;
    for (let k = 0; k < names.length; k++) {
      const placeholder = top[names[k]!];
      if (!Array.isArray(placeholder) || placeholder.length !== 0) return undefined;
      top[names[k]!] = arrays[k];
    }
    return top;
  } catch {
    return undefined;
  }
}

function blank(b: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isSpace(b[i])) return false;
  return true;
}

/**
 * The member's key as JSON.parse would give it, or undefined when it cannot be matched to the
 * parsed skeleton with certainty: an escape in the key, no key, or the same text twice among
 * the top-level strings (a repeated key's last value wins, and the placeholder might not be ours).
 */
function keyName(b: Uint8Array, m: ArrayMember, topStrings: number[]): string | undefined {
  if (m.keyOpen < 0) return undefined;
  const key = b.subarray(m.keyOpen + 1, m.keyClose);
  if (key.includes(BACKSLASH)) return undefined;
  let seen = 0;
  for (let s = 0; s < topStrings.length; s += 2) {
    const open = topStrings[s]!;
    const close = topStrings[s + 1]!;
    if (close - open === m.keyClose - m.keyOpen && equalBytes(b, open + 1, key)) seen++;
  }
  return seen === 1 ? PIECE.decode(key) : undefined;
}

function equalBytes(b: Uint8Array, from: number, other: Uint8Array): boolean {
  for (let i = 0; i < other.length; i++) if (b[from + i] !== other[i]) return false;
  return true;
}

/**
 * An answer's bytes parsed as `parseJson(decodeAnswer(bytes))` would parse them, with the same
 * value, the same repairs and the same errors; a large body is parsed record by record.
 */
export function parseAnswer(bytes: Uint8Array, repaired: string[] = []): unknown {
  if (bytes.length >= WHOLE_LIMIT && (bytes.length >= WHOLE_LIMIT_ASCII || !isAscii(bytes))) {
    const mine: string[] = [];
    const value = parseInPieces(bytes, mine);
    if (value !== undefined) {
      repaired.push(...mine);
      return value;
    }
  }
  return parseJson(decodeAnswer(bytes), repaired);
}
