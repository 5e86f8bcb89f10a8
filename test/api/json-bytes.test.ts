import { describe, expect, it } from 'vitest';
import { decodeAnswer, InvalidJsonError, parseJson } from '../../src/api/json.js';
import { parseAnswer, parseInPieces } from '../../src/api/json-bytes.js';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

/** What the body gave when parsed whole: the value (as text, so key order counts too) and the repaired paths. */
function whole(bytes: Uint8Array): { text: string; repaired: string[] } {
  const repaired: string[] = [];
  const value = parseJson(decodeAnswer(bytes), repaired);
  return { text: JSON.stringify(value), repaired: repaired.sort() };
}

/** A seeded generator (mulberry32): the same pages on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Raw JSON fragments a lexer could trip on: brackets, commas and digits inside strings, escaped
// quotes, strings ending in escaped backslashes, escapes of every kind, non-ASCII and long integers.
const STRINGS = [
  '"plain"',
  '"caf\u00e9 \u00fcber \u65e5\u672c"',
  '"emoji \ud83d\ude00 raw"',
  '"\\ud83d\\ude00 escaped pair"',
  '"brackets ],[{}] and , commas"',
  '"x:12345678901234567890,"',
  '"quote \\" inside"',
  '"ends in a backslash \\\\"',
  '"\\\\\\"\\\\"',
  '"tab\\tnew\\nline \\u00e9"',
  '""',
];
const NUMBERS = [
  '0',
  '-1',
  '12.5',
  '1.5e+21',
  '-2E-3',
  '9007199254740991',
  '9007199254740993',
  '-4600000000123456789',
  '4600000000123456789',
];

function value(next: () => number, depth: number): string {
  const r = next();
  if (depth > 2 || r < 0.45)
    return next() < 0.6 ? STRINGS[Math.floor(next() * STRINGS.length)]! : NUMBERS[Math.floor(next() * NUMBERS.length)]!;
  if (r < 0.55) return ['true', 'false', 'null'][Math.floor(next() * 3)]!;
  if (r < 0.75) return `[${Array.from({ length: Math.floor(next() * 4) }, () => value(next, depth + 1)).join(', ')}]`;
  return record(next, depth + 1);
}

function record(next: () => number, depth = 0): string {
  const fields = Array.from({ length: 3 + Math.floor(next() * 6) }, (_, i) => `"f${i}": ${value(next, depth)}`);
  return `{"id": ${NUMBERS[Math.floor(next() * NUMBERS.length)]!}, ${fields.join(',\n ')}}`;
}

function page(seed: number, records = 400): string {
  const next = random(seed);
  const rows = Array.from({ length: records }, () => record(next)).join(' ,\n');
  return `{"code":0,"message":"success","plans":[ ${rows} ],"tags":[],"page_context":{"page":1,"has_more_page":true}}`;
}

describe('parseAnswer: a large body parsed record by record', () => {
  it.each([1, 2, 3, 4, 5])('gives what parsing the whole text gives, key order and exact ids included (seed %i)', (seed) => {
    const bytes = utf8(page(seed));
    expect(bytes.length).toBeGreaterThan(60_000);
    const repaired: string[] = [];
    const pieces = parseInPieces(bytes, repaired);
    expect(pieces).toBeDefined();
    expect({ text: JSON.stringify(pieces), repaired: repaired.sort() }).toEqual(whole(bytes));
    expect(JSON.stringify(parseAnswer(bytes))).toBe(whole(bytes).text);
  });

  it('keeps an id past 2^53 as its digits and a safe one as a number', () => {
    const rows = Array.from({ length: 300 }, (_, i) => `{"id":4600000000123456${String(i).padStart(3, '0')},"n":${i},"s":"caf\u00e9"}`);
    const bytes = utf8(`{"plans":[${rows.join(',')}]}`);
    const body = parseInPieces(bytes, []) as { plans: Array<{ id: unknown; n: unknown }> };
    expect(body.plans[7]).toEqual({ id: '4600000000123456007', n: 7, s: 'caf\u00e9' });
    expect(body.plans).toHaveLength(300);
  });

  it('repairs NUL and unpaired surrogates and names each record by its place in the page', () => {
    const rows = Array.from({ length: 300 }, (_, i) => (i === 3 ? '{"name":"a\\u0000b","x":["\\ud800"]}' : `{"name":"r\u00e9${i}"}`));
    const bytes = utf8(`{"message":"\\u0000","plans":[${rows.join(',')}]}`);
    const repaired: string[] = [];
    const body = parseInPieces(bytes, repaired) as { message: string; plans: Array<{ name: string; x?: string[] }> };
    expect(body.plans[3]).toEqual({ name: 'a\uFFFDb', x: ['\uFFFD'] });
    expect(body.message).toBe('\uFFFD');
    expect(repaired.sort()).toEqual(['message', 'plans[3].name', 'plans[3].x[0]']);
    expect(repaired).toEqual(whole(bytes).repaired);
  });

  it('replaces undecodable bytes inside a record as decoding the whole body does', () => {
    const bytes = utf8(page(7));
    const at = new TextDecoder().decode(bytes).indexOf('caf\u00e9');
    const broken = new Uint8Array(bytes);
    // 'é' is two bytes; dropping its lead byte leaves a lone continuation byte.
    const index = utf8(new TextDecoder().decode(bytes).slice(0, at)).length + 3;
    broken[index] = 0x41;
    expect(parseInPieces(broken, [])).toBeDefined();
    expect(JSON.stringify(parseAnswer(broken))).toBe(whole(broken).text);
  });

  it.each([
    ['a repeated key, whose last value wins', (p: string) => p.replace('"tags":[]', '"plans":[]')],
    ['a key written with an escape', (p: string) => p.replace('"plans"', '"pl\\u0061ns"')],
    ['a leading byte-order mark', (p: string) => `\ufeff${p}`],
    ['an array at the top', (p: string) => `[${p}]`],
  ])('parses %s whole, with the same result', (_name, edit) => {
    const bytes = utf8(edit(page(11)));
    expect(parseInPieces(bytes, [])).toBeUndefined();
    expect(JSON.stringify(parseAnswer(bytes))).toBe(whole(bytes).text);
  });

  it.each([
    ['cut short', (p: string) => p.slice(0, 70_000)],
    ['a trailing comma in the list', (p: string) => p.replace('],"tags"', ',],"tags"')],
    ['two records without a comma', (p: string) => p.replace(' ,\n', ' \n')],
    ['garbage after the body', (p: string) => `${p}x`],
    ['an empty element', (p: string) => p.replace(' ,\n', ',,')],
    // Decoded alone, a piece must not lose a byte-order mark that the whole text would refuse.
    ['a byte-order mark between two records', (p: string) => p.replace(' ,\n', ',\ufeff')],
    ['a byte-order mark after a long integer', (p: string) => p.replace(/(4600000000123456789)([,}])/, '$1\ufeff$2')],
  ])('refuses a body %s with the error parsing it whole gives', (_name, edit) => {
    const bytes = utf8(edit(page(13)));
    expect(parseInPieces(bytes, [])).toBeUndefined();
    let expected: unknown;
    try {
      parseJson(decodeAnswer(bytes));
    } catch (err) {
      expected = err;
    }
    expect(expected).toBeInstanceOf(InvalidJsonError);
    expect(() => parseAnswer(bytes)).toThrow((expected as Error).message);
  });

  it('parses small bodies whole, as before', () => {
    const repaired: string[] = [];
    expect(parseAnswer(utf8('{"users":[{"id":4600000000123456789,"n":"\\u0000"}]}'), repaired)).toEqual({
      users: [{ id: '4600000000123456789', n: '\uFFFD' }],
    });
    expect(repaired).toEqual(['users[0].n']);
  });
});
