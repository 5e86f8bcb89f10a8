import { describe, expect, it } from 'vitest';
import { decodeAnswer, InvalidJsonError, parseJson, quoteUnsafeIntegers } from '../../src/api/json.js';
import { classify } from '../../src/api/classify.js';

describe('parseJson', () => {
  it('keeps an integer too large for a double exact, as its digits', () => {
    const body = parseJson('{"salesorders":[{"salesorder_id":4600000000123456789}]}') as { salesorders: Array<{ salesorder_id: unknown }> };
    expect(body.salesorders[0]!.salesorder_id).toBe('4600000000123456789');
  });

  it.each([
    ['a negative large integer', '{"a":-9007199254740993}', { a: '-9007199254740993' }],
    ['a large integer in an array', '[1,12345678901234567890]', [1, '12345678901234567890']],
    ['a large integer at the top level', '98765432109876543210', '98765432109876543210'],
    [
      'the largest safe integer stays a number',
      '{"a":9007199254740991,"b":12345678901234567}',
      { a: 9007199254740991, b: '12345678901234567' },
    ],
    [
      'decimals next to a large integer stay numbers',
      '{"id":4600000000123456789,"rate":12.5,"qty":3}',
      { id: '4600000000123456789', rate: 12.5, qty: 3 },
    ],
    ['digits inside strings are untouched', '{"ref":"x:1234567890123456789","n":1}', { ref: 'x:1234567890123456789', n: 1 }],
    ['ids sent as strings stay strings', '{"contact_id":"460000000012345"}', { contact_id: '460000000012345' }],
    [
      'ordinary JSON',
      '{"code":0,"message":"success","page_context":{"has_more_page":false}}',
      { code: 0, message: 'success', page_context: { has_more_page: false } },
    ],
  ])('%s', (_name, text, expected) => {
    expect(parseJson(text)).toEqual(expected);
  });

  it.each(['', '<html>502 Bad Gateway</html>', '{"code":0,"users":[', '{"id":46000000001234567890'])(
    'throws InvalidJsonError for %j, which classify() retries',
    (text) => {
      let err: unknown;
      try {
        parseJson(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidJsonError);
      const kind = classify({ method: 'GET', path: '/books/v3/users', status: 200, parseError: err }, 0);
      expect(kind).toMatchObject({ kind: 'retriable', reason: 'invalid_body' });
    },
  );
});

describe('quoteUnsafeIntegers', () => {
  const cases: Array<[string, string]> = [
    ['{"a":4600000000123456789}', '{"a":"4600000000123456789"}'],
    ['[9007199254740991,9007199254740992]', '[9007199254740991,"9007199254740992"]'],
    ['{"a":-46000000001234567890}', '{"a":"-46000000001234567890"}'],
    ['{"a":"x: 4600000000123456789, y"}', '{"a":"x: 4600000000123456789, y"}'],
    ['{"a":"esc \\" 4600000000123456789","b":4600000000123456789}', '{"a":"esc \\" 4600000000123456789","b":"4600000000123456789"}'],
    // A string ending in an escaped backslash ends at the next quote; an escaped backslash then an escaped quote does not.
    ['{"a":"ends in \\\\","b":4600000000123456789}', '{"a":"ends in \\\\","b":"4600000000123456789"}'],
    ['{"a":"\\\\\\" 4600000000123456789"}', '{"a":"\\\\\\" 4600000000123456789"}'],
    ['{"a":"unterminated 4600000000123456789', '{"a":"unterminated 4600000000123456789'],
    ['{"a":46000000001234567.5,"b":1e400}', '{"a":46000000001234567.5,"b":1e400}'],
    ['{"a":12.5,"b":[1,2,3],"c":true}', '{"a":12.5,"b":[1,2,3],"c":true}'],
  ];
  it.each(cases)('%s', (input, expected) => {
    expect(quoteUnsafeIntegers(input)).toBe(expected);
  });

  it('leaves every other value as JSON.parse reads it', () => {
    const text = '{"id":4600000000123456789,"n":123,"f":-0.25,"s":"4600000000123456789 in text","arr":[{"x":9999999999999999999}]}';
    expect(parseJson(text)).toEqual({
      id: '4600000000123456789',
      n: 123,
      f: -0.25,
      s: '4600000000123456789 in text',
      arr: [{ x: '9999999999999999999' }],
    });
  });
});

describe('parseJson: characters no Postgres text holds (A38)', () => {
  it.each([
    // body, the value at "v" after parsing, the paths reported
    ['{"v":"a\\u0000b"}', 'a\uFFFDb', ['v']],
    ['{"v":"x\\ud800"}', 'x\uFFFD', ['v']],
    ['{"v":"\\udc00x"}', '\uFFFDx', ['v']],
    ['{"v":"\\u0000\\ud800\\u0000"}', '\uFFFD\uFFFD\uFFFD', ['v']],
    // A pair is a character (a server that escapes every non-ASCII one): kept.
    ['{"v":"\\ud83d\\ude00"}', '\u{1F600}', []],
    // An escaped backslash before u0000 is text, not an escape: kept.
    ['{"v":"\\\\u0000"}', '\\u0000', []],
    ['{"v":"plain"}', 'plain', []],
  ] as Array<[string, string, string[]]>)('%s', (body, value, paths) => {
    const repaired: string[] = [];
    expect((parseJson(body, repaired) as { v: unknown }).v).toBe(value);
    expect(repaired).toEqual(paths);
  });

  it('names the path of every value it changed, in arrays and nested objects, and repairs keys', () => {
    const repaired: string[] = [];
    const body = parseJson('{"contacts":[{"name":"ok"},{"name":"a\\u0000","tags":["\\ud800"]}],"k\\u0000":1}', repaired);
    expect(body).toEqual({ contacts: [{ name: 'ok' }, { name: 'a\uFFFD', tags: ['\uFFFD'] }], 'k\uFFFD': 1 });
    expect(repaired).toEqual(['contacts[1].name', 'contacts[1].tags[0]', 'k\uFFFD (key)']);
  });

  it('keeps large integers exact on the same pass', () => {
    const repaired: string[] = [];
    expect(parseJson('{"id":12345678901234567890,"n":"\\u0000"}', repaired)).toEqual({ id: '12345678901234567890', n: '\uFFFD' });
    expect(repaired).toEqual(['n']);
  });
});

describe('decodeAnswer', () => {
  it('decodes as Response.text() does: UTF-8, a leading BOM dropped, undecodable bytes replaced', async () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"n":"Zoë 😀"}'), 0xff]);
    const viaResponse = await new Response(bytes).text();
    expect(decodeAnswer(bytes)).toBe(viaResponse);
    expect(decodeAnswer(bytes)).toBe('{"n":"Zoë 😀"}\uFFFD');
  });
});
