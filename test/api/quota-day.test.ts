import { describe, expect, it } from 'vitest';
import { classify } from '../../src/api/classify.js';
import { OrgLimiter } from '../../src/api/limiter.js';
import { quotaDayAt, quotaDayStart, serverQuotaReset } from '../../src/api/quota-day.js';
import { MemoryUsageStore, type UsageStore } from '../../src/api/usage-store.js';
import type { Limits } from '../../src/config/plans.js';
import { FakeClock } from '../../src/core/clock.js';
import { QuotaExhaustedError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';

const at = (iso: string): number => Date.parse(iso);
const MINUTE = 60_000;
/** Asia/Kolkata's midnight (+05:30) in UTC: the server's quota day ends there. */
const KOLKATA_RESET = at('2026-11-21T18:30:00Z');

describe('quotaDayAt', () => {
  it('without a reset from the server: the date and the next midnight of the zone (A15)', () => {
    expect(quotaDayAt(at('2026-11-21T20:00:00Z'), 'UTC', null)).toEqual({
      key: '2026-11-21',
      resetsAt: at('2026-11-22T00:00:00Z'),
      fromServer: false,
    });
    expect(quotaDayAt(at('2026-11-21T20:00:00Z'), 'Europe/Berlin', null).key).toBe('2026-11-21');
    expect(quotaDayAt(at('2026-11-21T23:30:00Z'), 'Europe/Berlin', null).key).toBe('2026-11-22');
  });

  it("with one: days end at the server's instant, keyed by the zone's date of their middle", () => {
    const cases: Array<[string, string, string]> = [
      ['2026-11-21T18:29:00Z', '2026-11-21', '2026-11-21T18:30:00Z'],
      ['2026-11-21T18:30:00Z', '2026-11-22', '2026-11-22T18:30:00Z'],
      ['2026-11-21T23:59:00Z', '2026-11-22', '2026-11-22T18:30:00Z'],
      ['2026-11-22T00:01:00Z', '2026-11-22', '2026-11-22T18:30:00Z'],
      ['2026-11-25T19:00:00Z', '2026-11-26', '2026-11-26T18:30:00Z'],
      ['2026-11-19T12:00:00Z', '2026-11-19', '2026-11-19T18:30:00Z'],
    ];
    for (const [now, key, resetsAt] of cases)
      expect(quotaDayAt(at(now), 'UTC', KOLKATA_RESET), now).toEqual({ key, resetsAt: at(resetsAt), fromServer: true });
  });

  it("gives the zone's own key when the server resets at the zone's midnight, and keeps it when the told instant moves by minutes", () => {
    const now = at('2026-11-21T20:00:00Z');
    const berlinMidnight = at('2026-11-21T23:00:00Z');
    expect(quotaDayAt(now, 'Europe/Berlin', berlinMidnight).key).toBe(quotaDayAt(now, 'Europe/Berlin', null).key);
    expect(quotaDayAt(now, 'UTC', at('2026-11-22T00:00:00Z')).key).toBe('2026-11-21');
    for (const drift of [-3, -1, 1, 3]) expect(quotaDayAt(now, 'UTC', KOLKATA_RESET + drift * MINUTE).key).toBe('2026-11-22');
  });
});

describe('quotaDayStart', () => {
  it("is the zone's midnight, 23 or 25 hours before the day's end on a clock change, or a day before the server's reset", () => {
    const start = (now: string, zone: string, reset: number | null): string => {
      const day = quotaDayAt(at(now), zone, reset);
      return new Date(quotaDayStart(at(now), zone, day)).toISOString();
    };
    expect(start('2026-11-22T00:10:00Z', 'UTC', null)).toBe('2026-11-22T00:00:00.000Z');
    expect(start('2026-11-21T23:30:00Z', 'Europe/Berlin', null)).toBe('2026-11-21T23:00:00.000Z');
    // Berlin's 25 October 2026 runs from 22:00 UTC on the 24th to 23:00 UTC on the 25th; 29 March, 23:00 to 22:00.
    expect(start('2026-10-25T22:30:00Z', 'Europe/Berlin', null)).toBe('2026-10-24T22:00:00.000Z');
    expect(start('2026-03-29T21:30:00Z', 'Europe/Berlin', null)).toBe('2026-03-28T23:00:00.000Z');
    expect(start('2026-11-22T00:01:00Z', 'UTC', KOLKATA_RESET)).toBe('2026-11-21T18:30:00.000Z');
  });
});

describe('serverQuotaReset (X-Rate-Limit-Reset)', () => {
  const now = at('2026-11-21T20:00:10Z');
  const window = { perMinute: 100, windowMs: 60_000 };
  it('is now plus its seconds, to the nearest minute', () => {
    expect(serverQuotaReset({ 'X-Rate-Limit-Reset': '80990' }, now, window)).toBe(at('2026-11-22T18:30:00Z'));
    expect(serverQuotaReset({ 'x-rate-limit-reset': '3600', 'x-rate-limit-limit': '1000' }, now, window)).toBe(at('2026-11-21T21:00:00Z'));
  });
  it('is not read when it cannot be the daily reset', () => {
    for (const headers of [
      {},
      { 'X-Rate-Limit-Reset': 'soon' },
      { 'X-Rate-Limit-Reset': '0' },
      { 'X-Rate-Limit-Reset': '45' },
      { 'X-Rate-Limit-Reset': '100000' },
      { 'X-Rate-Limit-Reset': '3600', 'X-Rate-Limit-Limit': '100' },
    ])
      expect(serverQuotaReset(headers, now, window), JSON.stringify(headers)).toBeNull();
  });
});

const limits = (over: Partial<Limits> = {}): Limits => ({
  per_minute: 100,
  per_day: 10,
  concurrency: 5,
  window_ms: 60_000,
  reserve: 0,
  ...over,
});

function limiter(clock: FakeClock, store: UsageStore): OrgLimiter {
  return new OrgLimiter({ organizationId: '1', limits: limits(), timeZone: 'UTC', clock, store, logger: silentLogger(), budgetChunk: 2 });
}

const instant = (): (() => Promise<void>) => () => Promise.resolve();

async function spend(l: OrgLimiter, n: number): Promise<number> {
  let sent = 0;
  for (let i = 0; i < n; i++) {
    try {
      await l.schedule(instant());
      sent++;
    } catch (err) {
      if (!(err instanceof QuotaExhaustedError)) throw err;
    }
  }
  return sent;
}

describe("the daily budget follows the server's reset", () => {
  it('resets when the server does, not at midnight of the configured zone', async () => {
    const clock = new FakeClock(at('2026-11-21T16:00:00Z'));
    const store = new MemoryUsageStore();
    const l = limiter(clock, store);
    l.observeServerReset(KOLKATA_RESET);
    expect(await spend(l, 12)).toBe(10);
    expect(l.nextReset().toISOString()).toBe('2026-11-21T18:30:00.000Z');
    await clock.advance(at('2026-11-21T18:31:00Z') - clock.now());
    expect(l.remainingToday()).toBe(10);
    expect(await spend(l, 10)).toBe(10);
    // UTC midnight passes: the server's day goes on, and so does the count.
    await clock.advance(at('2026-11-22T00:01:00Z') - clock.now());
    expect(l.remainingToday()).toBe(0);
    expect(await spend(l, 1)).toBe(0);
    await clock.advance(at('2026-11-22T18:30:30Z') - clock.now());
    expect(await spend(l, 1)).toBe(1);
  });

  it('without the header, the day ends at midnight of the configured zone as before', async () => {
    const clock = new FakeClock(at('2026-11-21T16:00:00Z'));
    const l = limiter(clock, new MemoryUsageStore());
    expect(await spend(l, 12)).toBe(10);
    await clock.advance(at('2026-11-21T18:31:00Z') - clock.now());
    expect(await spend(l, 1)).toBe(0);
    expect(l.nextReset().toISOString()).toBe('2026-11-22T00:00:00.000Z');
    await clock.advance(at('2026-11-22T00:00:30Z') - clock.now());
    expect(await spend(l, 1)).toBe(1);
  });

  it('moves what it sent before the first header into the server day, and keeps the reset with the count for other processes', async () => {
    // 20:00 UTC: still the 21st in UTC, already the 22nd in Kolkata, whose day began at 18:30 UTC.
    const clock = new FakeClock(at('2026-11-21T20:00:00Z'));
    const store = new MemoryUsageStore();
    const first = limiter(clock, store);
    expect(await spend(first, 3)).toBe(3);
    first.observeServerReset(at('2026-11-22T18:30:00Z'));
    await first.flush();
    expect(first.quotaDay()).toEqual({ key: '2026-11-22', resetsAt: at('2026-11-22T18:30:00Z'), fromServer: true });
    const row = await store.load('1');
    expect(row).toMatchObject({ day: '2026-11-22', count: 3, resetsAt: at('2026-11-22T18:30:00Z') });
    // A second process on the same store counts in the server's day before it hears the header.
    const second = limiter(clock, store);
    await second.load();
    expect(second.quotaDay().key).toBe('2026-11-22');
    expect(second.usedToday()).toBe(3);
    expect(await spend(second, 10)).toBe(7);
    expect(second.nextReset().toISOString()).toBe('2026-11-22T18:30:00.000Z');
  });

  it('a 429 code 45 resumes at the reset the server tells, else at the end of the day the limiter counts', () => {
    const now = at('2026-11-21T20:00:00Z');
    const base = { method: 'GET', path: '/books/v3/users', status: 429, body: { code: 45, message: 'quota' }, quotaResetTimeZone: 'UTC' };
    const told = classify({ ...base, headers: { 'X-Rate-Limit-Reset': '81000' } }, now) as QuotaExhaustedError;
    expect(told.resumeAt?.toISOString()).toBe('2026-11-22T18:30:00.000Z');
    expect(told.hint).toContain("the server's X-Rate-Limit-Reset");
    const known = classify({ ...base, quotaDay: quotaDayAt(now, 'UTC', KOLKATA_RESET) }, now) as QuotaExhaustedError;
    expect(known.resumeAt?.toISOString()).toBe('2026-11-22T18:30:00.000Z');
    const zone = classify(base, now) as QuotaExhaustedError;
    expect(zone.resumeAt?.toISOString()).toBe('2026-11-22T00:00:00.000Z');
    expect(zone.hint).toContain('midnight UTC');
  });
});
