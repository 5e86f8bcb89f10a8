import { describe, expect, it } from 'vitest';
import type { ColumnType } from '../../src/catalog/types.js';
import { convertValue, isoUtc, parseDiscount, parseInstant, type Note, type SqlValue } from '../../src/normalize/values.js';

type Case = [input: unknown, value: SqlValue, warns: boolean];

function table(type: ColumnType, cases: Case[]): void {
  describe(type, () => {
    it.each(cases)('%j → %j (warning: %s)', (input, value, warns) => {
      const out = convertValue(type, input);
      expect(out.value).toEqual(value);
      if (warns) expect(out.warning).toEqual(expect.any(String));
      else expect(out.warning).toBeNull();
    });
  });
}

table('id', [
  ['460000000012345', '460000000012345', false],
  ['4600000000123456789', '4600000000123456789', false],
  [' Abc-01 ', ' Abc-01 ', false],
  ['', '', false],
  [460000000012345, '460000000012345', false],
  [0, '0', false],
  [2 ** 60, '1152921504606846976', true],
  [12.5, '12.5', true],
  [null, null, false],
  [true, 'true', true],
]);

table('timestamp', [
  ['2026-11-20T10:15:30+0530', '2026-11-20T04:45:30.000Z', false],
  ['2026-11-20T10:15:30+05:30', '2026-11-20T04:45:30.000Z', false],
  ['2026-11-20T10:15:30-0800', '2026-11-20T18:15:30.000Z', false],
  ['2026-11-20T23:15:30-0800', '2026-11-21T07:15:30.000Z', false],
  ['2026-11-20T10:15:30Z', '2026-11-20T10:15:30.000Z', false],
  ['2026-11-20T10:15:30.123+0530', '2026-11-20T04:45:30.123Z', false],
  ['2026-11-20T10:15:30.5Z', '2026-11-20T10:15:30.500Z', false],
  ['2026-11-20T10:15:30.123456-0800', '2026-11-20T18:15:30.123Z', false],
  ['2026-01-01T02:00:00+0530', '2025-12-31T20:30:00.000Z', false],
  ['2026-11-20T10:15+0530', '2026-11-20T04:45:00.000Z', false],
  ['2026-11-20T10:15:30', '2026-11-20T10:15:30.000Z', true],
  ['2026-11-20 10:15:30', '2026-11-20T10:15:30.000Z', true],
  ['2026-02-30T10:15:30Z', null, true],
  ['2026-11-20T25:15:30Z', null, true],
  ['yesterday', null, true],
  ['', null, false],
  [null, null, false],
  [1763600000000, null, true],
]);

table('hours', [
  [7.5, 7.5, false],
  ['12:30', 12.5, false],
  ['0:05', 5 / 60, false],
  ['7', 7, false],
  ['1.25', 1.25, false],
  ['100:00', 100, false],
  ['', null, false],
  ['12:75', null, true],
  ['soon', null, true],
]);

table('integer', [
  [42, 42, false],
  ['42', 42, false],
  ['-1', -1, false],
  ['12.0', 12, false],
  ['', null, false],
  [12.5, null, true],
  ['1,234', null, true],
  ['ten', null, true],
]);

table('number', [
  [12.34, 12.34, false],
  ['12.34', 12.34, false],
  ['-0.5', -0.5, false],
  ['.5', 0.5, false],
  ['', null, false],
  ['1,234.50', null, true],
  ['12abc', null, true],
  [Number.NaN, null, true],
  [{}, null, true],
]);

table('boolean', [
  [true, true, false],
  [false, false, false],
  ['true', true, false],
  ['false', false, false],
  [1, true, false],
  [0, false, false],
  ['', null, false],
  ['maybe', null, true],
  [2, null, true],
]);

table('date', [
  ['2026-11-20', '2026-11-20', false],
  ['2024-02-29', '2024-02-29', false],
  ['', null, false],
  ['2026-02-29', null, true],
  ['20/11/2026', null, true],
  ['2026-11-20T10:15:30+0530', '2026-11-20', true],
]);

table('text', [
  ['hello', 'hello', false],
  ['', '', false],
  [12, '12', false],
  [false, 'false', false],
  [{ a: 1 }, '{"a":1}', true],
]);

table('json', [
  [['a', 'b'], '["a","b"]', false],
  [{ a: 1 }, '{"a":1}', false],
  [null, null, false],
  ['x', '"x"', false],
]);

describe('id from a bigint', () => {
  it('keeps every digit', () => {
    expect(convertValue('id', 4600000000123456789n)).toEqual({ value: '4600000000123456789', warning: null });
  });
});

describe('parseInstant', () => {
  it.each([
    ['2026-11-20T10:15:30+0530', Date.UTC(2026, 10, 20, 4, 45, 30)],
    ['2026-11-20T04:45:30Z', Date.UTC(2026, 10, 20, 4, 45, 30)],
    ['2026-11-19T20:45:30-0800', Date.UTC(2026, 10, 20, 4, 45, 30)],
    ['2026-11-20T04:45:30.250Z', Date.UTC(2026, 10, 20, 4, 45, 30, 250)],
    ['not a time', null],
  ])('%s is %s', (text, ms) => {
    expect(parseInstant(text)).toBe(ms);
  });

  it('orders instants that string comparison gets wrong', () => {
    const india = '2026-11-20T10:15:30+0530';
    const pacific = '2026-11-19T21:00:00-0800';
    expect(india > pacific).toBe(true);
    expect(parseInstant(india)! < parseInstant(pacific)!).toBe(true);
  });
});

describe('parseDiscount', () => {
  it.each<[unknown, string | null, number | null, number | null, boolean]>([
    ['12.5%', '12.5%', null, 12.5, false],
    ['10 %', '10 %', null, 10, false],
    [25, '25', 25, null, false],
    ['25.00', '25.00', 25, null, false],
    [0, '0', 0, null, false],
    ['', null, null, null, false],
    [null, null, null, null, false],
    ['half', 'half', null, null, true],
  ])('%j → text %j, amount %j, percentage %j', (input, text, amount, percentage, warns) => {
    const note: Note = { message: null };
    expect(parseDiscount(input, note)).toEqual({ text, amount, percentage });
    expect(note.message !== null).toBe(warns);
  });
});

describe('timestamp shapes the fast reader and the regex must agree on', () => {
  it.each([
    '2026-11-20T10:15:30+0530',
    '2026-11-20T10:15:30.1+05:30',
    '2026-11-30T23:59:59.999-0800',
    '2024-02-29T00:00:00Z',
    '2026-11-20T10:15:30.Z',
    '2026-11-20T10:15:30+053',
    '2026-11-20T10:15:30+05:3x',
    '2026-11-20T10:15:30Zjunk',
    '2026-13-20T10:15:30Z',
    '2026-11-20T10:60:30Z',
  ])('%s', (text) => {
    const reference = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})$/.exec(text);
    const parsed = parseInstant(text);
    if (!reference || Number(reference[2]) > 12 || Number(reference[5]) > 59) {
      expect(parsed).toBeNull();
      return;
    }
    const [, year, month, day, hour, minute, second, fraction, zone] = reference;
    const millis = (fraction ?? '').padEnd(3, '0').slice(0, 3);
    const offset = zone === 'Z' ? 'Z' : `${zone!.slice(0, 3)}:${zone!.slice(-2)}`;
    const iso = `${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}${offset}`;
    expect(parsed).toBe(new Date(iso).getTime());
  });
});

describe('isoUtc writes what toISOString writes', () => {
  it.each([
    ['the epoch', 0],
    ['the last ms of a leap day', Date.UTC(2024, 1, 29, 23, 59, 59, 999)],
    ['1 March of a century year that is not a leap year', Date.UTC(2100, 2, 1)],
    ['29 February 2000 (a leap century)', Date.UTC(2000, 1, 29, 12, 0, 0, 7)],
    ['the last ms of a year', Date.UTC(2026, 11, 31, 23, 59, 59, 999)],
    ['before the epoch', Date.UTC(1969, 11, 31, 23, 59, 59, 999)],
    ['the first ms of year 1000', Date.UTC(1000, 0, 1)],
    ['the last ms of year 9999', Date.UTC(9999, 11, 31, 23, 59, 59, 999)],
    ['a year of three digits (toISOString pads it)', Date.UTC(999, 11, 31, 23, 59, 59, 999)],
    ['a year of five digits (toISOString signs it)', Date.UTC(10000, 0, 1)],
    ['a fraction of a ms (toISOString truncates it)', Date.UTC(2026, 0, 1) + 1.75],
  ])('%s', (_, ms) => {
    expect(isoUtc(ms)).toBe(new Date(ms).toISOString());
  });

  it('agrees on 100,000 instants spread over years 1000 to 9999', () => {
    const first = Date.UTC(1000, 0, 1);
    const span = Date.UTC(9999, 11, 31, 23, 59, 59, 999) - first;
    // A fixed linear congruential sequence: the same instants on every run, spread over every month and hour.
    let seed = 12_345;
    const mismatches: number[] = [];
    for (let i = 0; i < 100_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      const ms = first + Math.floor((seed / 2_147_483_648) * span);
      if (isoUtc(ms) !== new Date(ms).toISOString()) mismatches.push(ms);
    }
    expect(mismatches).toEqual([]);
  });
});
