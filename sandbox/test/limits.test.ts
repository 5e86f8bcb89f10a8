import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './sandbox-client.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.sb.stop();
  h = undefined;
});

async function burst(x: Harness, n: number, org = x.orgs[0]!.organization_id): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await x.get('books', '/users?per_page=1', org);
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}

describe('per-minute limit', () => {
  it('answers the 101st request in a window with 429 code 44 and rate-limit headers', async () => {
    h = await harness({ scale: 2, startTime: '2026-11-20T08:00:00Z' });
    expect(await burst(h, 100)).toEqual(Array(100).fill(200));
    const res = await h.get('books', '/users');
    expect(res.status).toBe(429);
    expect(((await res.json()) as Record<string, unknown>)['code']).toBe(44);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(res.headers.get('x-rate-limit-limit')).toBe('100');
    expect(res.headers.get('x-rate-limit-remaining')).toBe('0');
    // Another organization has its own window; families share one per organization.
    expect((await burst(h, 1, h.orgs[1]!.organization_id))[0]).toBe(200);
    expect((await h.get('billing', '/plans')).status).toBe(429);
    // Organization lists and token calls count toward nothing.
    expect((await h.get('books', '/organizations', null)).status).toBe(200);
    expect(h.sb.requestLog().rateLimited['44']).toBe(2);
  });

  it('frees the window after window_ms of sandbox time; rejected requests do not count', async () => {
    h = await harness({ scale: 2, limits: { per_minute: 10, window_ms: 60_000 } });
    await burst(h, 10);
    expect(await burst(h, 5)).toEqual(Array(5).fill(429));
    h.sb.advanceClock(61_000);
    expect(await burst(h, 10)).toEqual(Array(10).fill(200));
    expect((await burst(h, 1))[0]).toBe(429);
  });
});

describe('concurrency limit', () => {
  it('refuses the 6th concurrent request of a free-plan organization with code 1070', async () => {
    h = await harness({ scale: 2, faults: { latencyMs: 1500 } });
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        h!.get('books', '/users').then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> })),
      ),
    );
    const refused = results.filter((r) => r.status === 429);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.body['code']).toBe(1070);
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(h.sb.requestLog().rateLimited['1070']).toBe(1);
  });

  it('allows 10 concurrent requests on a paid plan and never refuses sequential requests', async () => {
    h = await harness({ scale: 2, plan: 'professional', faults: { latencyMs: 1500 } });
    const statuses = await Promise.all(Array.from({ length: 11 }, () => h!.get('books', '/users').then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(1);
    h.sb.setFaults({});
    h.sb.advanceClock(120_000);
    expect(new Set(await burst(h, 50))).toEqual(new Set([200]));
  });
});

describe('daily quota', () => {
  it('answers the 1001st request of a UTC day with code 45 until the next UTC midnight', async () => {
    h = await harness({ scale: 2, startTime: '2026-11-20T22:00:00Z', limits: { per_minute: 100_000 } });
    const statuses = await burst(h, 1000);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const res = await h.get('inventory', '/contacts');
    expect(res.status).toBe(429);
    expect(((await res.json()) as Record<string, unknown>)['code']).toBe(45);
    const retry = Number(res.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(7000);
    expect(retry).toBeLessThanOrEqual(7200);
    expect((await burst(h, 1, h.orgs[1]!.organization_id))[0]).toBe(200);
    h.sb.advanceClock(2 * 3600_000 - 60_000);
    await h.refresh();
    expect((await burst(h, 1))[0]).toBe(429);
    h.sb.advanceClock(61_000);
    expect((await burst(h, 1))[0]).toBe(200);
    expect(h.sb.requestLog().rateLimited['45']).toBe(2);
  });

  it('uses the plan table: standard allows 2000 a day', async () => {
    h = await harness({ scale: 1, plan: 'standard', limits: { per_minute: 100_000 }, organizations: 1 });
    const statuses = await burst(h, 2001);
    expect(statuses.slice(0, 2000).every((s) => s === 200)).toBe(true);
    expect(statuses[2000]).toBe(429);
  });
});

describe('time scale', () => {
  it('runs windows on sandbox time: at timeScale 600 a 60 s window clears in 100 ms real time', async () => {
    h = await harness({ scale: 1, timeScale: 600, limits: { per_minute: 5 } });
    await burst(h, 5);
    expect((await burst(h, 1))[0]).toBe(429);
    await h.sb.clock.sleep(61_000);
    expect((await burst(h, 1))[0]).toBe(200);
  });

  it('has unlimited mode with no limits at all', async () => {
    h = await harness({ scale: 1, unlimited: true, organizations: 1 });
    expect(new Set(await burst(h, 150))).toEqual(new Set([200]));
  });
});
