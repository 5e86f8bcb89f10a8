import pLimit, { type LimitFunction } from 'p-limit';
import type { Limits } from '../config/plans.js';
import type { Clock, Timer } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { WindowState } from '../core/window-state.js';
import { DailyBudget } from './daily-budget.js';
import { assertTimeZone, type QuotaDay } from './quota-day.js';
import type { UsageStore } from './usage-store.js';

export interface OrgLimiterOptions {
  organizationId: string;
  limits: Limits;
  /** Zone whose midnight resets the daily quota (A15). */
  timeZone: string;
  clock: Clock;
  store: UsageStore;
  logger: Logger;
  /** Consecutive successes after which a lowered concurrency goes up one step. */
  restoreAfterSuccesses?: number | undefined;
  /** Requests reserved from the store's daily count at a time (default DEFAULT_BUDGET_CHUNK). */
  budgetChunk?: number | undefined;
}

interface Waiter {
  start: () => void;
  fail: (err: unknown) => void;
}

/**
 * The limits of one organization (spec 8), shared by every family and connection that
 * calls it in this process:
 *  - at most `concurrency` requests in flight (lowered on 429 code 1070, restored slowly);
 *  - a sliding window: at most `per_minute` requests in any `window_ms`, where each request
 *    holds its slot from its start until window_ms after its response finished. A server
 *    counting arrivals in any window (sliding or calendar) therefore never sees more;
 *  - a daily budget (quota less reserve) counted per quota day in the store (midnight in the
 *    reset zone, or the reset the server tells in `X-Rate-Limit-Reset`): the
 *    limiter reserves it in chunks of `budgetChunk` requests with one atomic step each, so any
 *    number of processes on one warehouse never together pass it, and returns what it did not
 *    send on flush (run end, shutdown);
 *  - a block until the quota resets after the server answered 429 code 45.
 *
 * Bottleneck is not used: it starts every job through a real setTimeout and its
 * reservoir refreshes on a fixed interval, so neither the sliding window nor tests on an
 * injected clock could be exact. This gate is a FIFO queue driven only by the clock.
 */
export class OrgLimiter {
  readonly organizationId: string;
  readonly limits: Limits;
  readonly timeZone: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  /** The day's budget, shared with other processes through the store. */
  private readonly daily: DailyBudget;
  private readonly restoreAfter: number;

  private maxConcurrent: number;
  private running = 0;
  /** When each held window slot frees (epoch ms); a request in flight holds one at +Infinity until it finishes. */
  private readonly slots: number[] = [];
  private pausedUntil = 0;
  private pauseTimer: Timer | null = null;
  private successStreak = 0;
  private readonly queue: Waiter[] = [];

  private readonly guards = new Set<() => void>();

  constructor(opts: OrgLimiterOptions) {
    assertTimeZone(opts.timeZone);
    this.organizationId = opts.organizationId;
    this.limits = opts.limits;
    this.timeZone = opts.timeZone;
    this.clock = opts.clock;
    this.logger = opts.logger;
    this.restoreAfter = opts.restoreAfterSuccesses ?? 20;
    this.maxConcurrent = Math.max(1, opts.limits.concurrency);
    this.daily = new DailyBudget({
      organizationId: opts.organizationId,
      limits: opts.limits,
      timeZone: opts.timeZone,
      clock: opts.clock,
      store: opts.store,
      logger: opts.logger,
      chunk: opts.budgetChunk,
    });
  }

  /** Restores today's count and any block from the store. */
  load(): Promise<void> {
    return this.daily.load();
  }

  // ---- status, for `status`, progress and the daemon ----

  budget(): number {
    return this.daily.budget();
  }

  /** The day's count less what this process holds unsent: requests sent, or held by other processes. */
  usedToday(): number {
    return this.daily.usedToday();
  }

  /** Requests reserved from the store and not sent yet (returned by flush). */
  heldToday(): number {
    return this.daily.heldToday();
  }

  remainingToday(): number {
    return this.daily.remainingToday();
  }

  blockedUntil(): Date | null {
    return this.daily.blockedUntil();
  }

  /** When the current quota day ends (midnight in the reset zone, or the server's reset). */
  nextReset(): Date {
    return this.daily.nextReset();
  }

  /** The current quota day: its key in the store, its end, and whether the server told the end. */
  quotaDay(): QuotaDay {
    return this.daily.quotaDay();
  }

  inFlight(): number {
    return this.running;
  }

  queued(): number {
    return this.queue.length;
  }

  concurrency(): number {
    return this.maxConcurrent;
  }

  // ---- decisions fed back by the client ----

  /** 429 code 1070: one fewer request in flight from now on (never below 1). */
  lowerConcurrency(): void {
    this.successStreak = 0;
    if (this.maxConcurrent > 1) {
      this.maxConcurrent--;
      this.logger.warn(
        { organization_id: this.organizationId, concurrency: this.maxConcurrent },
        'too many concurrent requests; lowering concurrency',
      );
    }
  }

  /** A request succeeded; after enough in a row a lowered concurrency goes back up one step. */
  recordSuccess(): void {
    if (this.maxConcurrent >= this.limits.concurrency) return;
    if (++this.successStreak >= this.restoreAfter) {
      this.successStreak = 0;
      this.maxConcurrent++;
      this.logger.info({ organization_id: this.organizationId, concurrency: this.maxConcurrent }, 'raising concurrency again');
      this.pump();
    }
  }

  /** 429 code 44: nobody starts a request to this organization before `ms` from now. */
  pause(ms: number): void {
    this.holdUntil(this.clock.now() + Math.max(0, ms));
  }

  /**
   * Nobody starts a request to this organization before `t` (epoch ms on this clock). A new
   * owner that took the organization over from one that did not release cleanly holds until
   * one window_ms from now: the old owner's requests of the last window are unknown.
   */
  holdUntil(t: number): void {
    if (t <= this.pausedUntil) return;
    this.pausedUntil = t;
    this.pauseTimer?.cancel();
    this.pauseTimer = null;
    this.armPause();
  }

  /**
   * Wakes the queue when the hold ends. Armed again by pump while the hold lasts: a timer may
   * fire a millisecond before the clock reads its instant (Node's timers and Date.now() are
   * different clocks), and a pump that found the hold still on and armed nothing left the
   * queue asleep for good; the fleet test's rare "took the organization over ...; waiting one
   * window" followed by silence.
   */
  private armPause(): void {
    if (this.pauseTimer) return;
    this.pauseTimer = this.clock.setTimeout(
      () => {
        this.pauseTimer = null;
        this.pump();
      },
      Math.max(1, this.pausedUntil - this.clock.now()),
    );
  }

  /**
   * The window as it stands, for the next owner: each held slot's free instant (a request
   * still in flight counts as freeing window_ms from now, the earliest it could) and the hold.
   */
  windowState(): WindowState {
    const now = this.clock.now();
    const soonest = now + this.limits.window_ms;
    const freeAt = this.slots
      .map((t) => Math.min(t, soonest))
      .filter((t) => t > now)
      .sort((a, b) => a - b);
    return { freeAt, notBefore: this.pausedUntil > now ? this.pausedUntil : null };
  }

  /**
   * Takes over the previous owner's window: each instant still ahead holds one slot until
   * then (at most per_minute are taken, the latest ones), and its hold applies. A slot this
   * limiter holds already at the same instant is not taken twice (a process getting back the
   * window it handed over itself).
   */
  seedWindow(state: WindowState): void {
    const now = this.clock.now();
    const ahead = state.freeAt
      .filter((t) => Number.isFinite(t) && t > now)
      .sort((a, b) => a - b)
      .slice(-this.limits.per_minute);
    const mine = [...this.slots];
    for (const t of ahead) {
      const i = mine.indexOf(t);
      if (i >= 0) mine.splice(i, 1);
      else this.holdSlot(t);
    }
    if (state.notBefore !== null && Number.isFinite(state.notBefore)) this.holdUntil(state.notBefore);
  }

  /** Slots held in the window right now (tests, status). */
  windowHeld(): number {
    return this.slots.length;
  }

  private holdSlot(until: number): void {
    this.slots.push(until);
    this.clock.setTimeout(
      () => {
        this.dropSlot(until);
        this.pump();
      },
      Math.max(0, until - this.clock.now()),
    );
  }

  private dropSlot(value: number): void {
    const i = this.slots.indexOf(value);
    if (i >= 0) this.slots.splice(i, 1);
  }

  /** The daily quota as the server counts it (A17): see `DailyBudget.observeServerQuota`. */
  observeServerQuota(q: { limit: number; remaining: number }): void {
    if (this.daily.observeServerQuota(q)) this.pump();
  }

  /** The server's daily reset (`X-Rate-Limit-Reset`, A17): see `DailyBudget.observeServerReset`. */
  observeServerReset(at: number): void {
    this.daily.observeServerReset(at);
  }

  /** 429 code 45: the server says the quota is spent; every request fails fast until `until`. */
  block(until: Date): void {
    this.daily.block(until);
    const err = this.daily.quotaError();
    if (err) for (const w of this.queue.splice(0)) w.fail(err);
  }

  /** Throws QuotaExhaustedError when a request could not be sent today. */
  assertAvailable(): void {
    const err = this.daily.quotaError();
    if (err) throw err;
  }

  /**
   * Runs fn when the organization's limits allow, counting it as one request of the day.
   * A caller's abort takes a waiting request out of the queue at once.
   */
  /**
   * Adds a check run right before each request is let out, after any wait for the window, the
   * budget or a pause; one that throws fails that request unsent (it takes no slot). Returns
   * its remover. runSync guards each organization with its lease.
   */
  addGuard(check: () => void): () => void {
    const own = (): void => check();
    this.guards.add(own);
    return () => void this.guards.delete(own);
  }

  schedule<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const early = this.daily.quotaError();
    if (early) return Promise.reject(early);
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) {
          this.queue.splice(i, 1);
          reject(signal!.reason);
        }
      };
      const waiter: Waiter = {
        fail: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          // Asked after any wait, right before the request goes: a lease lost meanwhile sends nothing.
          try {
            for (const check of this.guards) check();
          } catch (err) {
            reject(err);
            return;
          }
          this.running++;
          this.slots.push(Infinity);
          this.daily.spend();
          let settled: Promise<T>;
          try {
            settled = fn();
          } catch (err) {
            settled = Promise.reject(err);
          }
          settled.then(resolve, reject).finally(() => this.finished());
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      this.pump();
    });
  }

  /**
   * Returns the requests reserved and not sent to the store (run end, shutdown), and resolves
   * when every store call made so far has reached it (`DailyBudget.flush`).
   */
  flush(): Promise<void> {
    return this.daily.flush({ idle: this.running === 0 && this.queue.length === 0, waiting: this.queue.length > 0 });
  }

  private finished(): void {
    this.running--;
    // The window slot comes back window_ms after the response finished (A16), not after it started.
    this.dropSlot(Infinity);
    this.holdSlot(this.clock.now() + this.limits.window_ms);
    this.pump();
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const err = this.daily.quotaError();
      if (err) {
        for (const w of this.queue.splice(0)) w.fail(err);
        return;
      }
      if (this.clock.now() < this.pausedUntil) {
        this.armPause();
        return;
      }
      if (this.running >= this.maxConcurrent || this.slots.length >= this.limits.per_minute) return;
      if (!this.daily.inHand()) {
        this.daily.refill(
          () => this.pump(),
          (err) => {
            for (const w of this.queue.splice(0)) w.fail(err);
          },
        );
        return;
      }
      this.queue.shift()!.start();
    }
  }
}

export interface LimiterRegistryOptions {
  clock: Clock;
  store: UsageStore;
  logger: Logger;
  restoreAfterSuccesses?: number | undefined;
  /** Requests each limiter reserves from the store at a time (default DEFAULT_BUDGET_CHUNK). */
  budgetChunk?: number | undefined;
}

/**
 * One OrgLimiter per organization id for the whole process: an organization reached
 * through two families or two connections still has one per-minute window and one quota.
 */
export class LimiterRegistry {
  private readonly limiters: Map<string, Promise<OrgLimiter>>;
  private readonly loaded: Map<string, OrgLimiter>;
  private readonly userGates: Map<string, LimitFunction>;
  /** The organizations asked for through this view; null for the registry itself (its flush covers all). */
  private readonly touched: Set<string> | null;

  constructor(
    private readonly opts: LimiterRegistryOptions,
    shared?: LimiterRegistry,
  ) {
    this.limiters = shared?.limiters ?? new Map<string, Promise<OrgLimiter>>();
    this.loaded = shared?.loaded ?? new Map<string, OrgLimiter>();
    this.userGates = shared?.userGates ?? new Map<string, LimitFunction>();
    this.touched = shared ? new Set() : null;
  }

  /**
   * A view for one run: the same limiters, but its flush returns and re-reads only the
   * organizations the run asked for. A daemon's registry holds every organization it ever ran;
   * flushing all of them at the end of each job cost one query per organization per job (the
   * fleet benchmark: 1,000 organizations, a daemon at 80 % of a core doing little else).
   */
  forRun(): LimiterRegistry {
    return new LimiterRegistry(this.opts, this);
  }

  /** The organization's limiter; the first caller's limits and zone define it. */
  get(organizationId: string, config: { limits: Limits; timeZone: string }): Promise<OrgLimiter> {
    this.touched?.add(organizationId);
    let p = this.limiters.get(organizationId);
    if (!p) {
      const limiter = new OrgLimiter({
        organizationId,
        limits: config.limits,
        timeZone: config.timeZone,
        clock: this.opts.clock,
        store: this.opts.store,
        logger: this.opts.logger,
        restoreAfterSuccesses: this.opts.restoreAfterSuccesses,
        budgetChunk: this.opts.budgetChunk,
      });
      p = limiter.load().then(() => {
        this.loaded.set(organizationId, limiter);
        return limiter;
      });
      // A failed load must not poison the organization for the rest of the process.
      p.catch(() => this.limiters.delete(organizationId));
      this.limiters.set(organizationId, p);
    }
    return p;
  }

  /**
   * At most `concurrency` requests in flight for one user (a connection's token) across all its
   * organizations, for a server that counts the concurrency limit per user (A46). Requests wait
   * here after their organization's limiter let them out, so the per-minute window only ever
   * counts them early. One per process: processes sharing a connection each keep their own.
   */
  userGate(user: string, concurrency: number): LimitFunction {
    let gate = this.userGates.get(user);
    if (!gate) this.userGates.set(user, (gate = pLimit(Math.max(1, concurrency))));
    return gate;
  }

  /** The limiter if it exists already (status displays). */
  peek(organizationId: string): OrgLimiter | undefined {
    return this.loaded.get(organizationId);
  }

  /** Returns unsent reservations to the store (every organization's, or a run view's own); resolves when the store has them. */
  async flush(): Promise<void> {
    const ids = this.touched ?? this.loaded.keys();
    const limiters = [...ids].flatMap((id) => this.loaded.get(id) ?? []);
    await Promise.all(limiters.map((l) => l.flush()));
  }
}
