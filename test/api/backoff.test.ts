import { describe, expect, it } from 'vitest';
import { backoffDelay, retryDelay, serverRetryAfterMs } from '../../src/api/backoff.js';

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

  it('reads Retry-After as seconds or as an HTTP date, then X-Rate-Limit-Reset', () => {
    const now = Date.UTC(2026, 0, 15, 10, 0, 0);
    expect(serverRetryAfterMs(new Headers({ 'Retry-After': '7' }), now)).toBe(7_000);
    expect(serverRetryAfterMs({ 'retry-after': new Date(now + 42_000).toUTCString() }, now)).toBe(42_000);
    expect(serverRetryAfterMs({ 'retry-after': new Date(now - 5_000).toUTCString() }, now)).toBe(0);
    expect(serverRetryAfterMs({ 'X-Rate-Limit-Reset': '13' }, now)).toBe(13_000);
    expect(serverRetryAfterMs({ 'Retry-After': '2', 'X-Rate-Limit-Reset': '13' }, now)).toBe(2_000);
    expect(serverRetryAfterMs({ 'Retry-After': 'soon' }, now)).toBeUndefined();
    expect(serverRetryAfterMs(undefined, now)).toBeUndefined();
  });

  it('waits at least what the server asked, bounded so a broken header cannot park a run', () => {
    expect(retryDelay({ attempt: 0, random: () => 0, serverWaitMs: 7_000 })).toBe(7_000);
    expect(retryDelay({ attempt: 0, random: () => 0.5, serverWaitMs: 7_000 })).toBe(7_250);
    expect(retryDelay({ attempt: 0, random: () => 0, serverWaitMs: 86_400_000 })).toBe(300_000);
    expect(retryDelay({ attempt: 2, random: () => 0.5 })).toBe(1_000);
  });
});
