import { describe, expect, it } from 'vitest';
import { childrenRereadDue, childrenSlice, cycleDayOf, cycleDaysCovered } from '../../src/extractors/children-cycle.js';

const DAY = 86_400_000;
const last = '2026-11-01T02:30:00.000Z';
const at = (ms: number): number => Date.parse(last) + ms;

describe('childrenRereadDue', () => {
  it('is due when the stream never had its children re-read, or on every reconcile with a cycle of 0 days', () => {
    expect(childrenRereadDue(null, at(0), 7)).toBe(true);
    expect(childrenRereadDue(last, at(60_000), 0)).toBe(true);
  });

  it('is not due within the cycle, and is on the day it ends, a little earlier in the day too', () => {
    expect(childrenRereadDue(last, at(DAY), 7)).toBe(false);
    expect(childrenRereadDue(last, at(6 * DAY), 7)).toBe(false);
    expect(childrenRereadDue(last, at(7 * DAY - 30 * 60_000), 7)).toBe(true);
    expect(childrenRereadDue(last, at(7 * DAY + 5 * 60_000), 7)).toBe(true);
    expect(childrenRereadDue(last, at(7 * DAY - 2 * 3_600_000), 7)).toBe(false);
    expect(childrenRereadDue(last, at(DAY), 1)).toBe(true);
  });

  it('is due when forced (sync --reconcile --deep), or when the stored instant cannot be read', () => {
    expect(childrenRereadDue(last, at(60_000), 7, true)).toBe(true);
    expect(childrenRereadDue('not a date', at(60_000), 7)).toBe(true);
  });
});

describe('the rolling cycle: cycleDayOf, cycleDaysCovered, childrenSlice', () => {
  const ids = Array.from({ length: 3_000 }, (_, i) => `${460000000000 + i * 7919}`);

  it("gives a parent the same day on every call and spreads parents evenly over the cycle's days", () => {
    expect(cycleDayOf('4600000012345', 30)).toBe(cycleDayOf('4600000012345', 30));
    const perDay = new Array<number>(30).fill(0);
    for (const id of ids) perDay[cycleDayOf(id, 30)]!++;
    // 100 a day on average; no day gets less than half or more than one and a half of it.
    expect(Math.min(...perDay)).toBeGreaterThan(50);
    expect(Math.max(...perDay)).toBeLessThan(150);
  });

  it('covers the days after the last re-read up to the pass start: one a night, two after a missed night, none twice a day', () => {
    const night = (n: number): string => new Date(Date.parse(last) + n * DAY).toISOString();
    expect(cycleDaysCovered(last, night(1), 7).size).toBe(1);
    expect(cycleDaysCovered(last, night(2), 7).size).toBe(2);
    expect(cycleDaysCovered(last, new Date(Date.parse(last) + 3_600_000).toISOString(), 7).size).toBe(0);
    expect(cycleDaysCovered(last, night(40), 7).size).toBe(7);
    // Seven nights in a row cover each day of the cycle once.
    const seen: number[] = [];
    for (let n = 1; n <= 7; n++) seen.push(...cycleDaysCovered(night(n - 1), night(n), 7));
    expect(seen.sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('re-reads every parent exactly once over a cycle of nightly passes, and none on a second pass the same day', () => {
    const night = (n: number): string => new Date(Date.parse(last) + n * DAY).toISOString();
    const times = new Map<string, number>();
    for (let n = 1; n <= 30; n++) {
      const slice = childrenSlice(night(n - 1), night(n), 30)!;
      for (const id of ids) if (slice(id)) times.set(id, (times.get(id) ?? 0) + 1);
    }
    expect(times.size).toBe(ids.length);
    expect([...times.values()].every((t) => t === 1)).toBe(true);
    expect(childrenSlice(night(1), new Date(Date.parse(night(1)) + 60_000).toISOString(), 30)).toBeNull();
    expect(childrenSlice(null, night(1), 30)).toBeNull();
  });
});
