import { describe, expect, it } from 'vitest';
import { childrenRereadDue } from '../../src/extractors/children-cycle.js';

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
