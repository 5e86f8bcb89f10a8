import { describe, expect, it } from 'vitest';
import { backoffDelay, retryDelay, serverQuota, serverRetryAfterMs } from '../../src/api/backoff.js';

describe('backoff', () => {
  it('grows exponentially from 500 ms under full jitter and never exceeds the 30 s cap', () => {
    const top = () => 0.999999;
    expect([0, 1, 2, 3, 4, 5, 6, 7, 20, 1000].map((a) => backoffDelay(a, top))).toEqual([
      499, 999, 1999, 3999, 7999, 15999, 29999, 29999, 29999, 29999,
    ]);
    for (let a = 0; a < 50; a++) {
      for (const r of [0, 0.3, 0.7, 1]) {
        const d = backoffDelay(a, () => r);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(30_000);
      }
    }
  });

  it('draws uniformly below the ceiling (full jitter)', () => {
    expect(backoffDelay(3, () => 0)).toBe(0);
    expect(backoffDelay(3, () => 0.5)).toBe(2_000);
  });

  it('reads Retry-After as seconds or as an HTTP date, and never X-Rate-Limit-Reset (the daily reset)', () => {
    const now = Date.UTC(2026, 0, 15, 10, 0, 0);
    expect(serverRetryAfterMs(new Headers({ 'Retry-After': '7' }), now)).toBe(7_000);
    expect(serverRetryAfterMs({ 'retry-after': new Date(now + 42_000).toUTCString() }, now)).toBe(42_000);
    expect(serverRetryAfterMs({ 'retry-after': new Date(now - 5_000).toUTCString() }, now)).toBe(0);
    expect(serverRetryAfterMs({ 'X-Rate-Limit-Reset': '13' }, now)).toBeUndefined();
    expect(serverRetryAfterMs({ 'Retry-After': '2', 'X-Rate-Limit-Reset': '13' }, now)).toBe(2_000);
    expect(serverRetryAfterMs({ 'Retry-After': 'soon' }, now)).toBeUndefined();
    expect(serverRetryAfterMs(undefined, now)).toBeUndefined();
  });

  it.each([
    [429, 7_000],
    [503, 7_000],
    [500, undefined],
    [502, undefined],
    [200, undefined],
    [401, undefined],
  ])('takes Retry-After as a wait only on a 429 or a 503 (HTTP %i → %s)', (status, expected) => {
    expect(serverRetryAfterMs({ 'Retry-After': '7', 'X-Rate-Limit-Reset': '300414' }, 0, status)).toBe(expected);
  });

  it.each([
    [
      { 'X-Rate-Limit-Limit': '1000', 'X-Rate-Limit-Remaining': '640' },
      { limit: 1000, remaining: 640 },
    ],
    [
      { 'x-rate-limit-limit': '5000', 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': '3600' },
      { limit: 5000, remaining: 0 },
    ],
    [{ 'X-Rate-Limit-Remaining': '640' }, null],
    [{ 'X-Rate-Limit-Limit': '1000' }, null],
    [{ 'X-Rate-Limit-Limit': 'lots', 'X-Rate-Limit-Remaining': '3' }, null],
    [{ 'X-Rate-Limit-Limit': '100', 'X-Rate-Limit-Remaining': '101' }, null],
    [undefined, null],
  ])('reads the daily quota headers %j as %j', (headers, expected) => {
    expect(serverQuota(headers)).toEqual(expected);
  });

  it('waits at least what the server asked, bounded so a broken header cannot park a run', () => {
    expect(retryDelay({ attempt: 0, random: () => 0, serverWaitMs: 7_000 })).toBe(7_000);
    expect(retryDelay({ attempt: 0, random: () => 0.5, serverWaitMs: 7_000 })).toBe(7_250);
    expect(retryDelay({ attempt: 0, random: () => 0, serverWaitMs: 86_400_000 })).toBe(300_000);
    expect(retryDelay({ attempt: 2, random: () => 0.5 })).toBe(1_000);
  });
});
