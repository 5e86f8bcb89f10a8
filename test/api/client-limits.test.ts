import { describe, expect, it } from 'vitest';
import type { FakeClock } from '../../src/core/clock.js';
import { harness, tokenReply } from './helpers.js';

/**
 * A server that enforces exactly the documented limits for one organization: 100 arrivals
 * in any 60 s (code 44) and 5 in flight (code 1070, free plan).
 */
function strictServer(getClock: () => FakeClock) {
  const arrivals: number[] = [];
  let inFlight = 0;
  const refusals: number[] = [];
  let n = 0;
  const fetchImpl: typeof fetch = async (input, init) => {
    if ((input instanceof Request ? input.url : input.toString()).includes('/oauth/v2/token'))
      return new Response(JSON.stringify(tokenReply()), { status: 200 });
    const clock = getClock();
    const now = clock.now();
    inFlight++;
    try {
      if (inFlight > 5) {
        refusals.push(1070);
        return new Response(JSON.stringify({ code: 1070, message: 'too many in-process requests' }), { status: 429 });
      }
      if (arrivals.filter((t) => t > now - 60_000).length >= 100) {
        refusals.push(44);
        return new Response(JSON.stringify({ code: 44, message: 'organization blocked' }), { status: 429 });
      }
      arrivals.push(now);
      // Response times vary between 50 ms and 1.5 s.
      await clock.sleep(50 + ((n++ * 613) % 1450), init?.signal ?? undefined);
      return new Response(JSON.stringify({ code: 0, message: 'success', users: [] }), { status: 200 });
    } finally {
      inFlight--;
    }
  };
  return { fetchImpl, refusals, arrivals };
}

describe('the client under a server enforcing exactly the documented limits', () => {
  it('never receives 429 code 44 or 1070 for 300 requests to one organization', async () => {
    // The server reads the harness's clock when requests arrive, after the harness exists.
    const server = strictServer(() => h.clock);
    const h = harness({ fetch: server.fetchImpl });
    const calls = Array.from({ length: 300 }, (_, i) =>
      h.client.get({ family: i % 2 ? 'books' : 'billing', organizationId: '10234695', path: i % 2 ? '/users' : '/plans' }),
    );
    const started = h.clock.now();
    await h.run(Promise.all(calls), 50);
    expect(server.refusals).toEqual([]);
    expect(server.arrivals).toHaveLength(300);
    expect(h.events.every((e) => e.outcome === 'ok')).toBe(true);
    expect(h.client.stats()).toMatchObject({ requests: 300, retries: 0, failures: 0, rateLimited: {} });
    // Three full windows are needed for 300 requests at 100 per minute, and not much more.
    expect(h.clock.now() - started).toBeGreaterThanOrEqual(2 * 60_000);
    expect(h.clock.now() - started).toBeLessThan(4 * 60_000);
    const limiter = await h.client.limitsFor('10234695');
    expect(limiter.usedToday()).toBe(300);
    expect(limiter.remainingToday()).toBe(900 - 300);
  });
});
