import { describe, expect, it } from 'vitest';
import type { Limits } from '../../src/config/plans.js';
import { FakeClock, type Clock } from '../../src/core/clock.js';
import { QuotaExhaustedError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { LimiterRegistry, OrgLimiter } from '../../src/api/limiter.js';
import { MemoryUsageStore, type UsageStore } from '../../src/api/usage-store.js';

const limits = (over: Partial<Limits> = {}): Limits => ({
  per_minute: 100,
  per_day: 100_000,
  concurrency: 5,
  window_ms: 60_000,
  reserve: 0,
  ...over,
});

function limiter(opts: { clock: FakeClock; limits?: Limits; store?: UsageStore; timeZone?: string; org?: string }): OrgLimiter {
  return new OrgLimiter({
    organizationId: opts.org ?? '1',
    limits: opts.limits ?? limits(),
    timeZone: opts.timeZone ?? 'UTC',
    clock: opts.clock,
    store: opts.store ?? new MemoryUsageStore(),
    logger: silentLogger(),
  });
}

/** A request that does `effect` (if any) and resolves at once. */
function instant(effect: () => unknown = () => undefined): () => Promise<void> {
  return () => {
    effect();
    return Promise.resolve();
  };
}

/** Most events in any window of `windowMs` (closed at both ends, the strict reading). */
function maxInAnyWindow(times: number[], windowMs: number): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j]! - t[i]! > windowMs) i++;
    best = Math.max(best, j - i + 1);
  }
  return best;
}

/** Runs until every promise settled, moving fake time in small steps. */
async function runAll(clock: FakeClock, promises: Array<Promise<unknown>>, stepMs = 50): Promise<void> {
  let done = 0;
  for (const p of promises)
    p.then(
      () => done++,
      () => done++,
    );
  for (let i = 0; i < 1_000_000 && done < promises.length; i++) await clock.advance(stepMs);
}

describe('OrgLimiter: window and concurrency', () => {
  it('never lets more than per_minute starts into any window, nor more than concurrency in flight, with 300 queued', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 15, 10));
    const l = limiter({ clock });
    const starts: number[] = [];
    const ends: number[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    // Response times vary (deterministically) between 120 ms and 2.9 s.
    const durations = Array.from({ length: 300 }, (_, i) => 120 + ((i * 7919) % 2800));
    const jobs = durations.map((d) =>
      l.schedule(async () => {
        starts.push(clock.now());
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        await clock.sleep(d);
        inFlight--;
        ends.push(clock.now());
      }),
    );
    await runAll(clock, jobs);
    expect(starts).toHaveLength(300);
    expect(maxInFlight).toBe(5);
    // Whether the server counts arrivals at our start or at our finish, no window sees more than 100.
    expect(maxInAnyWindow(starts, 60_000)).toBeLessThanOrEqual(100);
    expect(maxInAnyWindow(ends, 60_000)).toBeLessThanOrEqual(100);
    // And the limiter does not waste the window: three windows and a bit, not more.
    expect(Math.max(...ends) - Math.min(...starts)).toBeLessThan(4 * 60_000);
    expect(l.usedToday()).toBe(300);
  });

  it('holds a slot for window_ms after the response finished, not after it started', async () => {
    const clock = new FakeClock(0);
    const l = limiter({ clock, limits: limits({ per_minute: 2, concurrency: 2, window_ms: 1_000 }) });
    const starts: number[] = [];
    const job = (ms: number) =>
      l.schedule(async () => {
        starts.push(clock.now());
        await clock.sleep(ms);
      });
    const all = [job(500), job(100), job(0)];
    await runAll(clock, all, 10);
    // The third waits for the shorter one: finished at 100, slot back at 1100.
    expect(starts).toEqual([0, 0, 1_100]);
  });

  it('runs one fewer at a time after lowerConcurrency, never fewer than one', async () => {
    const clock = new FakeClock(0);
    const l = limiter({ clock, limits: limits({ concurrency: 3 }) });
    l.lowerConcurrency();
    expect(l.concurrency()).toBe(2);
    l.lowerConcurrency();
    l.lowerConcurrency();
    expect(l.concurrency()).toBe(1);
    let inFlight = 0;
    let max = 0;
    const jobs = Array.from({ length: 6 }, () =>
      l.schedule(async () => {
        max = Math.max(max, ++inFlight);
        await clock.sleep(10);
        inFlight--;
      }),
    );
    await runAll(clock, jobs, 5);
    expect(max).toBe(1);
    // Twenty successes in a row raise it one step.
    for (let i = 0; i < 20; i++) l.recordSuccess();
    expect(l.concurrency()).toBe(2);
  });

  it('holds every request back while paused after a 429 code 44', async () => {
    const clock = new FakeClock(0);
    const l = limiter({ clock });
    l.pause(30_000);
    const starts: number[] = [];
    const job = l.schedule(instant(() => starts.push(clock.now())));
    await runAll(clock, [job], 1_000);
    expect(starts).toEqual([30_000]);
  });

  it('takes an aborted request out of the queue without running it', async () => {
    const clock = new FakeClock(0);
    const l = limiter({ clock, limits: limits({ concurrency: 1 }) });
    let ran = 0;
    const first = l.schedule(() => clock.sleep(1_000));
    const controller = new AbortController();
    const second = l.schedule(
      instant(() => ran++),
      controller.signal,
    );
    controller.abort(new Error('stop'));
    await expect(second).rejects.toThrow('stop');
    await runAll(clock, [first]);
    expect(ran).toBe(0);
    expect(l.usedToday()).toBe(1);
  });
});

describe('OrgLimiter: handing the window to the next owner', () => {
  const small = limits({ per_minute: 5, concurrency: 5, window_ms: 1_000 });

  it('a seeded window keeps the per-minute limit across the handover', async () => {
    const clock = new FakeClock(0);
    const a = limiter({ clock, limits: small });
    const starts: number[] = [];
    const job = (l: OrgLimiter) => l.schedule(instant(() => starts.push(clock.now())));
    // The old owner sends 3 at 0 and 2 at 200, then releases at 300.
    await runAll(clock, [job(a), job(a), job(a)], 1);
    await clock.advance(199);
    await runAll(clock, [job(a), job(a)], 1);
    await clock.advance(100);
    const state = JSON.parse(JSON.stringify(a.windowState())) as ReturnType<OrgLimiter['windowState']>;
    expect(state).toEqual({ freeAt: [1_000, 1_000, 1_000, 1_200, 1_200], notBefore: null });

    const b = limiter({ clock, limits: small });
    b.seedWindow(state);
    expect(b.windowHeld()).toBe(5);
    const before = starts.length;
    await runAll(
      clock,
      Array.from({ length: 8 }, () => job(b)),
      1,
    );
    // Nothing until the old owner's slots free: 3 at 1000, 2 at 1200, the rest a window after the new starts.
    expect(starts.slice(before)).toEqual([1_000, 1_000, 1_000, 1_200, 1_200, 2_000, 2_000, 2_000]);
    // Instant requests: a slot frees exactly window_ms after a start, so count in any half-open window.
    expect(maxInAnyWindow(starts, 999)).toBe(5);
  });

  it('ignores instants already past and a seed larger than the limit', () => {
    const clock = new FakeClock(5_000);
    const b = limiter({ clock, limits: small });
    b.seedWindow({ freeAt: [1_000, 4_999, 5_000, ...Array.from({ length: 9 }, (_, i) => 5_100 + i)], notBefore: 4_000 });
    expect(b.windowHeld()).toBe(5);
    expect(b.windowState()).toEqual({ freeAt: [5_104, 5_105, 5_106, 5_107, 5_108], notBefore: null });
  });

  it('does not take twice a slot it holds already (its own window handed back)', async () => {
    const clock = new FakeClock(0);
    const a = limiter({ clock, limits: small });
    await runAll(clock, [a.schedule(instant()), a.schedule(instant())], 1);
    const state = a.windowState();
    a.seedWindow(state);
    expect(a.windowHeld()).toBe(2);
    a.seedWindow({ freeAt: [...state.freeAt, 900], notBefore: null });
    expect(a.windowState().freeAt).toEqual([900, ...state.freeAt]);
  });

  it('a hold after an unclean takeover delays the first request exactly window_ms', async () => {
    const clock = new FakeClock(10_000);
    const b = limiter({ clock, limits: small });
    b.holdUntil(clock.now() + small.window_ms);
    expect(b.windowState().notBefore).toBe(11_000);
    const starts: number[] = [];
    const jobs = Array.from({ length: 6 }, () => b.schedule(instant(() => starts.push(clock.now()))));
    await clock.advance(999);
    expect(starts).toEqual([]);
    await runAll(clock, jobs, 1);
    expect(starts).toEqual([11_000, 11_000, 11_000, 11_000, 11_000, 12_000]);
  });

  it('a hold whose timer fires a millisecond before the clock reaches its end still wakes the queue', async () => {
    // Node's timers and Date.now() are different clocks: a timer can fire 1 ms "early".
    const fake = new FakeClock(10_000);
    const early: Clock = {
      now: () => fake.now(),
      setTimeout: (fn, ms) => fake.setTimeout(fn, Math.max(1, ms - 1)),
      sleep: (ms, signal) => fake.sleep(ms, signal),
    };
    const b = new OrgLimiter({
      organizationId: '1',
      limits: small,
      timeZone: 'UTC',
      clock: early,
      store: new MemoryUsageStore(),
      logger: silentLogger(),
    });
    b.holdUntil(fake.now() + small.window_ms);
    const starts: number[] = [];
    const job = b.schedule(instant(() => starts.push(fake.now())));
    await fake.advance(999);
    expect(starts).toEqual([]);
    await fake.advance(10);
    await job;
    expect(starts).toEqual([11_000]);
  });

  it('a guard that fails after the wait sends nothing and takes no slot; removed, it no longer applies', async () => {
    const clock = new FakeClock(10_000);
    const b = limiter({ clock, limits: small });
    b.holdUntil(clock.now() + small.window_ms);
    let held = true;
    const remove = b.addGuard(() => {
      if (!held) throw new Error('lease lost while waiting');
    });
    const sent: number[] = [];
    const first = b.schedule(instant(() => sent.push(clock.now()))).then(
      () => 'sent',
      (e: Error) => e.message,
    );
    // The lease goes while the request waits out the hold: it must not be sent when the hold ends.
    await clock.advance(500);
    held = false;
    await clock.advance(600);
    expect(await first).toBe('lease lost while waiting');
    expect(sent).toEqual([]);
    expect(b.windowHeld()).toBe(0);
    remove();
    await b.schedule(instant(() => sent.push(clock.now())));
    expect(sent).toEqual([11_100]);
    expect(b.windowHeld()).toBe(1);
  });

  it('counts a request in flight as freeing window_ms from now at the earliest', async () => {
    const clock = new FakeClock(0);
    const a = limiter({ clock, limits: small });
    let finish!: () => void;
    const job = a.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    await clock.advance(100);
    expect(a.windowState().freeAt).toEqual([1_100]);
    finish();
    await job;
    expect(a.windowState().freeAt).toEqual([1_100]);
  });
});

describe('OrgLimiter: daily budget', () => {
  it('stops at the quota less the reserve, without running the request', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 15, 10));
    const l = limiter({ clock, limits: limits({ per_day: 20, reserve: 0.1 }) });
    expect(l.budget()).toBe(18);
    let ran = 0;
    const jobs = Array.from({ length: 25 }, () => l.schedule(instant(() => ran++)));
    const results = await Promise.allSettled(jobs);
    expect(ran).toBe(18);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected).toHaveLength(7);
    const e = rejected[0]!.reason as QuotaExhaustedError;
    expect(e).toBeInstanceOf(QuotaExhaustedError);
    expect(e.resumeAt.toISOString()).toBe('2026-01-16T00:00:00.000Z');
    expect(e.message).toContain('daily budget of 18 requests');
    expect(e.message).toContain('continue at 2026-01-16T00:00:00.000Z');
    expect(e.hint).toContain('midnight UTC');
    expect(l.remainingToday()).toBe(0);
    expect(() => l.assertAvailable()).toThrow(QuotaExhaustedError);
  });

  it('keeps the count across a restart over the same store', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 15, 10));
    const store = new MemoryUsageStore();
    const logger = silentLogger();
    const cfg = { limits: limits({ per_day: 20, reserve: 0.1 }), timeZone: 'UTC' };
    const before = new LimiterRegistry({ clock, store, logger });
    const a = await before.get('1', cfg);
    for (let i = 0; i < 15; i++) await a.schedule(instant());
    await before.flush();

    const after = new LimiterRegistry({ clock, store, logger });
    const b = await after.get('1', cfg);
    expect(b.usedToday()).toBe(15);
    expect(b.remainingToday()).toBe(3);
    for (let i = 0; i < 3; i++) await b.schedule(instant());
    await expect(b.schedule(instant())).rejects.toBeInstanceOf(QuotaExhaustedError);
  });

  it('starts a new day at midnight in the configured zone, not UTC', async () => {
    // 23:59:59 in Tokyo is 14:59:59 UTC; the UTC date stays 15 January across the reset.
    const clock = new FakeClock(Date.UTC(2026, 0, 15, 14, 59, 59));
    const store = new MemoryUsageStore();
    const l = limiter({ clock, store, timeZone: 'Asia/Tokyo', limits: limits({ per_day: 5, reserve: 0 }) });
    for (let i = 0; i < 5; i++) await l.schedule(instant());
    await expect(l.schedule(instant())).rejects.toBeInstanceOf(QuotaExhaustedError);
    expect(l.nextReset().toISOString()).toBe('2026-01-15T15:00:00.000Z');
    await clock.advance(2_000);
    expect(l.usedToday()).toBe(0);
    await l.schedule(instant());
    await l.flush();
    expect(await store.load('1')).toEqual({ organizationId: '1', day: '2026-01-16', count: 1, blockedUntil: null, resetsAt: null });
  });

  it('after a 23-hour day (clocks forward) starts the next at midnight, not 24 hours after the last', async () => {
    // Berlin moves to summer time on 29 March 2026: that day runs from 23:00 UTC on the 28th to 22:00 UTC on the 29th.
    const clock = new FakeClock(Date.UTC(2026, 2, 29, 21, 59, 59));
    const store = new MemoryUsageStore();
    const l = limiter({ clock, store, timeZone: 'Europe/Berlin', limits: limits({ per_day: 5, reserve: 0 }) });
    for (let i = 0; i < 5; i++) await l.schedule(instant());
    await expect(l.schedule(instant())).rejects.toBeInstanceOf(QuotaExhaustedError);
    expect(l.nextReset().toISOString()).toBe('2026-03-29T22:00:00.000Z');
    await clock.advance(2_000);
    expect(l.usedToday()).toBe(0);
    expect(l.nextReset().toISOString()).toBe('2026-03-30T22:00:00.000Z');
    await l.schedule(instant());
    await l.flush();
    expect(await store.load('1')).toMatchObject({ day: '2026-03-30', count: 1 });
  });

  it('a 25-hour day (clocks back) keeps its count through its first hours', async () => {
    // Berlin leaves summer time on 25 October 2026: that day runs from 22:00 UTC on the 24th to 23:00 UTC on the 25th.
    const clock = new FakeClock(Date.UTC(2026, 9, 24, 22, 30));
    const l = limiter({ clock, timeZone: 'Europe/Berlin', limits: limits({ per_day: 5, reserve: 0 }) });
    for (let i = 0; i < 3; i++) await l.schedule(instant());
    expect(l.nextReset().toISOString()).toBe('2026-10-25T23:00:00.000Z');
    await clock.advance(23 * 3_600_000);
    expect(l.usedToday()).toBe(3);
    await l.schedule(instant());
    await l.schedule(instant());
    await expect(l.schedule(instant())).rejects.toBeInstanceOf(QuotaExhaustedError);
    await clock.advance(31 * 60_000);
    expect(l.usedToday()).toBe(3 + 2);
    await clock.advance(60 * 60_000);
    expect(l.usedToday()).toBe(0);
  });

  /** A limiter on a clock the test sets, forward or back, as a system clock can be. */
  function onSettableClock(start: number): { l: OrgLimiter; set: (at: number) => void } {
    let now = start;
    const fake = new FakeClock(now);
    const clock: Clock = { now: () => now, setTimeout: (fn, ms) => fake.setTimeout(fn, ms), sleep: (ms, signal) => fake.sleep(ms, signal) };
    const l = new OrgLimiter({
      organizationId: '1',
      limits: limits({ per_day: 5, reserve: 0 }),
      timeZone: 'UTC',
      clock,
      store: new MemoryUsageStore(),
      logger: silentLogger(),
    });
    return { l, set: (at) => (now = at) };
  }

  it('counts in the earlier day again when the system clock is set back past midnight', async () => {
    const { l, set } = onSettableClock(Date.UTC(2026, 0, 16, 0, 30));
    await l.schedule(instant());
    expect(l.quotaDay().key).toBe('2026-01-16');
    set(Date.UTC(2026, 0, 15, 23, 0));
    expect(l.quotaDay().key).toBe('2026-01-15');
    expect(l.nextReset().toISOString()).toBe('2026-01-16T00:00:00.000Z');
  });

  it('counts in the earlier day again when the clock is set back minutes past midnight, in the first hour of a day', async () => {
    const { l, set } = onSettableClock(Date.UTC(2026, 0, 16, 0, 10));
    for (let i = 0; i < 2; i++) await l.schedule(instant());
    set(Date.UTC(2026, 0, 16, 0, 50));
    expect(l.quotaDay().key).toBe('2026-01-16');
    expect(l.usedToday()).toBe(2);
    set(Date.UTC(2026, 0, 15, 23, 55));
    expect(l.quotaDay().key).toBe('2026-01-15');
    expect(l.usedToday()).toBe(0);
    expect(l.nextReset().toISOString()).toBe('2026-01-16T00:00:00.000Z');
  });

  it('fails queued requests when the budget runs out while they wait', async () => {
    const clock = new FakeClock(0);
    const l = limiter({ clock, limits: limits({ per_day: 10, reserve: 0, concurrency: 2 }) });
    let ran = 0;
    const jobs = Array.from({ length: 40 }, () =>
      l.schedule(async () => {
        ran++;
        await clock.sleep(100);
      }),
    );
    await runAll(clock, jobs);
    const results = await Promise.allSettled(jobs);
    expect(ran).toBe(10);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(30);
  });
});

describe('OrgLimiter: block after 429 code 45', () => {
  it('fails fast until the reset, rejects those waiting, and persists the block', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 15, 10));
    const store = new MemoryUsageStore();
    const l = limiter({ clock, store, limits: limits({ concurrency: 1 }) });
    let ran = 0;
    const running = l.schedule(() => clock.sleep(100));
    const waiting = l.schedule(instant(() => ran++));
    const until = new Date(Date.UTC(2026, 0, 16));
    l.block(until);
    await expect(waiting).rejects.toBeInstanceOf(QuotaExhaustedError);
    await expect(l.schedule(instant(() => ran++))).rejects.toThrow(/continue at 2026-01-16T00:00:00.000Z/);
    expect(l.blockedUntil()?.toISOString()).toBe('2026-01-16T00:00:00.000Z');
    await runAll(clock, [running]);
    await l.flush();
    expect((await store.load('1'))?.blockedUntil).toBe(until.getTime());

    await clock.advanceTo(until.getTime() + 1);
    expect(l.blockedUntil()).toBeNull();
    await l.schedule(instant(() => ran++));
    expect(ran).toBe(1);
  });
});

describe('usage in the store', () => {
  it('reserves the budget in chunks, one store call per chunk, and returns the unsent part on flush', async () => {
    const clock = new FakeClock(0);
    const store = new MemoryUsageStore();
    const l = limiter({ clock, store, limits: limits({ concurrency: 10 }) });
    for (let i = 0; i < 50; i++) await l.schedule(instant());
    expect(store.reserves).toBe(5);
    expect(l.heldToday()).toBe(0);
    for (let i = 0; i < 3; i++) await l.schedule(instant());
    expect(store.reserves).toBe(6);
    // The store counts the whole chunk until it comes back; the limiter counts what was sent.
    expect((await store.load('1'))?.count).toBe(60);
    expect(l.heldToday()).toBe(7);
    expect(l.usedToday()).toBe(53);
    await l.flush();
    expect(store.releases).toBe(1);
    expect((await store.load('1'))?.count).toBe(53);
    expect(l.usedToday()).toBe(53);
    expect(l.heldToday()).toBe(0);
  });

  it("a run's view of a shared registry shares its limiters but flushes only the organizations the run asked for", async () => {
    const clock = new FakeClock(0);
    const inner = new MemoryUsageStore();
    const loads: string[] = [];
    const store: UsageStore = {
      load: (org) => {
        loads.push(org);
        return inner.load(org);
      },
      reserve: (org, day, n, budget) => inner.reserve(org, day, n, budget),
      release: (org, day, n) => inner.release(org, day, n),
      raise: (org, day, n) => inner.raise(org, day, n),
      block: (org, day, until) => inner.block(org, day, until),
      markReset: (org, day, at) => inner.markReset(org, day, at),
    };
    const registry = new LimiterRegistry({ clock, store, logger: silentLogger() });
    const config = { limits: limits(), timeZone: 'UTC' };
    for (const org of ['a', 'b', 'c']) await (await registry.get(org, config)).schedule(instant());
    const run = registry.forRun();
    const b = await run.get('b', config);
    expect(b).toBe(await registry.get('b', config));
    expect(run.peek('a')).toBe(registry.peek('a'));
    await b.schedule(instant());
    // Let the finished requests release their slots, so each limiter is idle and flush re-reads its count.
    await new Promise((r) => setImmediate(r));
    loads.length = 0;
    const releasesBefore = inner.releases;
    await run.flush();
    // Only b's unsent chunk comes back and only b's count is read again.
    expect(loads).toEqual(['b']);
    expect(inner.releases - releasesBefore).toBe(1);
    expect((await inner.load('a'))?.count).toBe(10);
    expect((await inner.load('b'))?.count).toBe(2);
    loads.length = 0;
    await registry.flush();
    expect(loads.sort()).toEqual(['a', 'b', 'c']);
    expect((await inner.load('a'))?.count).toBe(1);
  });

  it('keeps store calls in order while a slow store holds them, and takes a chunk of the configured size', async () => {
    const clock = new FakeClock(0);
    const calls: string[] = [];
    let open: () => void = () => undefined;
    const gate = new Promise<void>((r) => (open = r));
    const inner = new MemoryUsageStore();
    const slowStore: UsageStore = {
      load: (org) => inner.load(org),
      reserve: async (org, day, n, budget) => {
        await gate;
        calls.push(`reserve ${n}`);
        return inner.reserve(org, day, n, budget);
      },
      release: async (org, day, n) => {
        calls.push(`release ${n}`);
        return inner.release(org, day, n);
      },
      raise: (org, day, n) => inner.raise(org, day, n),
      block: (org, day, until) => inner.block(org, day, until),
      markReset: (org, day, at) => inner.markReset(org, day, at),
    };
    const l = new OrgLimiter({
      organizationId: '1',
      limits: limits(),
      timeZone: 'UTC',
      clock,
      store: slowStore,
      logger: silentLogger(),
      budgetChunk: 4,
    });
    const jobs = Array.from({ length: 6 }, () => l.schedule(instant()));
    // Nothing starts before the store granted requests.
    await Promise.resolve();
    expect(l.inFlight()).toBe(0);
    open();
    await Promise.all(jobs);
    await l.flush();
    expect(calls).toEqual(['reserve 4', 'reserve 4', 'release 2']);
    expect((await inner.load('1'))?.count).toBe(6);
  });

  it('fails the waiting requests when the store cannot reserve, and recovers on the next request', async () => {
    const clock = new FakeClock(0);
    const inner = new MemoryUsageStore();
    let broken = true;
    const flaky: UsageStore = {
      load: (org) => inner.load(org),
      reserve: (org, day, n, budget) => (broken ? Promise.reject(new Error('warehouse down')) : inner.reserve(org, day, n, budget)),
      release: (org, day, n) => inner.release(org, day, n),
      raise: (org, day, n) => inner.raise(org, day, n),
      block: (org, day, until) => inner.block(org, day, until),
      markReset: (org, day, at) => inner.markReset(org, day, at),
    };
    const l = limiter({ clock, store: flaky });
    let ran = 0;
    const results = await Promise.allSettled([l.schedule(instant(() => ran++)), l.schedule(instant(() => ran++))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(ran).toBe(0);
    broken = false;
    await l.schedule(instant(() => ran++));
    expect(ran).toBe(1);
  });

  it('shares one limiter per organization across callers of the registry', async () => {
    const clock = new FakeClock(0);
    const registry = new LimiterRegistry({ clock, store: new MemoryUsageStore(), logger: silentLogger() });
    const cfg = { limits: limits(), timeZone: 'UTC' };
    const [a, b, c] = await Promise.all([registry.get('1', cfg), registry.get('1', cfg), registry.get('2', cfg)]);
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });

  it('rejects an unknown time zone as a configuration error', () => {
    expect(() => limiter({ clock: new FakeClock(0), timeZone: 'Mars/Olympus' })).toThrow(/quota_reset_time_zone: "Mars\/Olympus"/);
  });
});
