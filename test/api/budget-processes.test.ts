import { afterEach, describe, expect, it } from 'vitest';
import type { Limits } from '../../src/config/plans.js';
import { FakeClock } from '../../src/core/clock.js';
import { QuotaExhaustedError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { OrgLimiter } from '../../src/api/limiter.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { WarehouseUsageStore } from '../../src/state/usage-store.js';
import { DIALECTS, migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';

const NOW = Date.UTC(2026, 10, 22, 10);
const DAY = '2026-11-22';

const limits = (perDay: number): Limits => ({ per_minute: 500, per_day: perDay, concurrency: 5, window_ms: 60_000, reserve: 0 });

/** A request that yields to the event loop before it ends, so two limiters' requests interleave. */
const request = (effect: () => void) => async (): Promise<void> => {
  effect();
  await new Promise<void>((r) => setImmediate(r));
};

describe.each(DIALECTS)('the daily budget shared by processes on one warehouse, on %s', (dialect) => {
  let tw: TestWarehouse | undefined;
  const open: Warehouse[] = [];
  afterEach(async () => {
    for (const w of open.splice(0)) await w.close();
    await tw?.drop();
    tw = undefined;
  });

  /** Two handles on one fresh warehouse: each stands for a process (own connections, own pool). */
  async function twoProcesses(): Promise<[WarehouseUsageStore, WarehouseUsageStore]> {
    tw = await migratedWarehouse(dialect);
    const a = await tw.open();
    open.push(a);
    await migrateToLatest(a);
    const b = await tw.open();
    open.push(b);
    return [new WarehouseUsageStore(a, () => NOW), new WarehouseUsageStore(b, () => NOW)];
  }

  function limiter(store: WarehouseUsageStore, perDay: number, clock = new FakeClock(NOW)): OrgLimiter {
    return new OrgLimiter({ organizationId: '1', limits: limits(perDay), timeZone: 'UTC', clock, store, logger: silentLogger() });
  }

  it('reserve is atomic: 60 concurrent reservations of 7 from two processes take a budget of 100 exactly', async () => {
    const [a, b] = await twoProcesses();
    const calls = Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).reserve('1', DAY, 7, 100));
    const grants = await Promise.all(calls);
    expect(grants.reduce((s, g) => s + g.granted, 0)).toBe(100);
    expect(grants.every((g) => g.granted >= 0 && g.granted <= 7 && g.used <= 100)).toBe(true);
    expect((await a.load('1'))?.count).toBe(100);
    expect(await b.reserve('1', DAY, 7, 100)).toEqual({ granted: 0, used: 100 });
    // A release gives back, never below zero; another organization and another day are rows of their own.
    await a.release('1', DAY, 30);
    expect((await b.load('1'))?.count).toBe(70);
    await a.release('1', DAY, 500);
    expect((await b.load('1'))?.count).toBe(0);
    expect(await a.reserve('2', DAY, 7, 100)).toEqual({ granted: 7, used: 7 });
    expect(await a.reserve('1', '2026-11-23', 7, 100)).toEqual({ granted: 7, used: 7 });
  });

  it('two limiters with 2×60 requests and a budget of 77 send 77 in all, and refuse the rest as a spent quota', async () => {
    const [a, b] = await twoProcesses();
    const la = limiter(a, 77);
    const lb = limiter(b, 77);
    let sent = 0;
    const jobs = [la, lb].flatMap((l) => Array.from({ length: 60 }, () => l.schedule(request(() => sent++))));
    const results = await Promise.allSettled(jobs);
    expect(sent).toBe(77);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(120 - 77);
    expect(refused.every((r) => r.reason instanceof QuotaExhaustedError)).toBe(true);
    await Promise.all([la.flush(), lb.flush()]);
    expect((await a.load('1'))?.count).toBe(77);
  });

  it('a flush returns the unsent part of the chunk, which the other process can then use', async () => {
    const [a, b] = await twoProcesses();
    const la = limiter(a, 25);
    for (let i = 0; i < 3; i++) await la.schedule(request(() => undefined));
    // Three sent, a chunk of ten taken.
    expect((await a.load('1'))?.count).toBe(10);
    await la.flush();
    expect((await a.load('1'))?.count).toBe(3);
    const lb = limiter(b, 25);
    await lb.load();
    expect(lb.usedToday()).toBe(3);
    let sent = 0;
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => lb.schedule(request(() => sent++))));
    expect(sent).toBe(22);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(8);
  });

  it('a process that died without flushing leaves at most one chunk unsent: here 7 of its 10', async () => {
    const [a, b] = await twoProcesses();
    const dead = limiter(a, 50);
    for (let i = 0; i < 3; i++) await dead.schedule(request(() => undefined));
    // No flush: the process is gone, its chunk stays counted until the day ends.
    const lb = limiter(b, 50);
    let sent = 0;
    await Promise.allSettled(Array.from({ length: 60 }, () => lb.schedule(request(() => sent++))));
    expect(sent).toBe(40);
    await lb.flush();
    expect((await b.load('1'))?.count).toBe(50);
    // Sent in all: 3 + 40 of a budget of 50; the unsent 7 are less than one chunk.
    expect(50 - (3 + sent)).toBeLessThanOrEqual(10);
  });

  it("the server's higher count raises the shared count, and a limiter that found the budget taken sees what was returned", async () => {
    const [a, b] = await twoProcesses();
    const la = limiter(a, 1_000);
    await la.schedule(request(() => undefined));
    la.observeServerQuota({ limit: 1_000, remaining: 150 });
    expect(la.usedToday()).toBe(850);
    await la.flush();
    expect((await a.load('1'))?.count).toBe(850);

    const [c, d] = [limiter(a, 860), limiter(b, 860)];
    let sent = 0;
    await Promise.allSettled(Array.from({ length: 20 }, () => c.schedule(request(() => sent++))));
    expect(sent).toBe(10);
    // d reserved nothing yet; the budget is held by c (all sent). d is refused, then c gives nothing back.
    await expect(d.schedule(request(() => sent++))).rejects.toBeInstanceOf(QuotaExhaustedError);
    await c.flush();
    await d.flush();
    await expect(d.schedule(request(() => sent++))).rejects.toBeInstanceOf(QuotaExhaustedError);
    // Once the stored count goes down (a release), d's next flush reads it and d sends again.
    await a.release('1', DAY, 2);
    await d.flush();
    await d.schedule(request(() => sent++));
    expect(sent).toBe(11);
  });
});
