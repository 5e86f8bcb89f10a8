import pLimit, { type LimitFunction } from 'p-limit';
import { dailyBudget, type Limits } from '../config/plans.js';
import type { Clock, Timer } from '../core/clock.js';
import { QuotaExhaustedError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { assertTimeZone, nextQuotaReset, quotaDay } from './quota-day.js';

/** One organization's request count for one quota day, and a server-imposed block. */
export interface UsageRecord {
  organizationId: string;
  /** yyyy-mm-dd in the quota reset zone. */
  day: string;
  /**
   * Requests of the day's budget taken so far by every svcsync process: sent, or reserved by a
   * process that has not sent or returned them yet (raised to the server's count when higher).
   */
  count: number;
  /** Epoch ms until which the server said the quota is spent (429 code 45), or null. */
  blockedUntil: number | null;
}

/** What a reservation got: `granted` requests (0..n) and the day's count after it. */
export interface Reservation {
  granted: number;
  used: number;
}

/**
 * Where the daily count lives. The warehouse's state tables implement it so that every process
 * writing to one warehouse shares one count (src/state/usage-store.ts); reserve is atomic there.
 */
export interface UsageStore {
  /** The organization's latest day: its count and any block. */
  load(organizationId: string): Promise<UsageRecord | null>;
  /**
   * Takes up to n requests of the day's budget in one atomic step: min(n, budget - count),
   * never below 0, so processes reserving side by side never together pass the budget.
   */
  reserve(organizationId: string, day: string, n: number, budget: number): Promise<Reservation>;
  /** Gives back n reserved requests that were not sent (the count never goes below 0). */
  release(organizationId: string, day: string, n: number): Promise<void>;
  /** Raises the day's count to at least `count` (the server counts more than svcsync took). */
  raise(organizationId: string, day: string, count: number): Promise<void>;
  /** The server said the quota is spent until `until` (epoch ms). */
  block(organizationId: string, day: string, until: number): Promise<void>;
}

/** The store for tests and single-process tools; the same arithmetic as the warehouse's. */
export class MemoryUsageStore implements UsageStore {
  private readonly records = new Map<string, UsageRecord>();
  /** Calls received, for tests that check reservations come in chunks. */
  reserves = 0;
  releases = 0;

  load(organizationId: string): Promise<UsageRecord | null> {
    let latest: UsageRecord | null = null;
    for (const r of this.records.values()) {
      if (r.organizationId === organizationId && (latest === null || r.day > latest.day)) latest = r;
    }
    return Promise.resolve(latest ? { ...latest } : null);
  }

  reserve(organizationId: string, day: string, n: number, budget: number): Promise<Reservation> {
    this.reserves++;
    const r = this.row(organizationId, day);
    const granted = Math.max(0, Math.min(n, budget - r.count));
    r.count += granted;
    return Promise.resolve({ granted, used: r.count });
  }

  release(organizationId: string, day: string, n: number): Promise<void> {
    this.releases++;
    const r = this.row(organizationId, day);
    r.count = Math.max(0, r.count - n);
    return Promise.resolve();
  }

  raise(organizationId: string, day: string, count: number): Promise<void> {
    const r = this.row(organizationId, day);
    r.count = Math.max(r.count, count);
    return Promise.resolve();
  }

  block(organizationId: string, day: string, until: number): Promise<void> {
    this.row(organizationId, day).blockedUntil = until;
    return Promise.resolve();
  }

  private row(organizationId: string, day: string): UsageRecord {
    const key = `${organizationId}\u0000${day}`;
    let r = this.records.get(key);
    if (!r) {
      r = { organizationId, day, count: 0, blockedUntil: null };
      this.records.set(key, r);
    }
    return r;
  }
}

/**
 * The per-minute window as one owner hands it to the next (issue 12, on a clean lease release):
 * the instants, on the limiters' clock (epoch ms), at which each slot still held frees, and any
 * instant before which no request may start (a 429 code 44 pause). Plain JSON.
 */
export interface WindowState {
  freeAt: number[];
  notBefore: number | null;
}

/** Requests a limiter reserves from the store at a time (LimiterRegistryOptions.budgetChunk). */
export const DEFAULT_BUDGET_CHUNK = 10;

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
 *  - a daily budget (quota less reserve) counted per day in the reset zone, in the store: the
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
  private readonly store: UsageStore;
  private readonly logger: Logger;
  private readonly restoreAfter: number;

  private maxConcurrent: number;
  private running = 0;
  /** When each held window slot frees (epoch ms); a request in flight holds one at +Infinity until it finishes. */
  private readonly slots: number[] = [];
  private pausedUntil = 0;
  private pauseTimer: Timer | null = null;
  private successStreak = 0;
  private readonly queue: Waiter[] = [];

  private readonly chunk: number;
  private day: string;
  /** The day's count in the store as this process last saw it, its own reservations included. */
  private total = 0;
  /** Reserved from the store and not sent yet. */
  private granted = 0;
  private readonly guards = new Set<() => void>();
  /** The store granted nothing at the last reservation: the budget is taken (until flush or a new day). */
  private exhausted = false;
  private refilling = false;
  private blocked: number | null = null;
  /** A daily quota the server reported below the plan's (observeServerQuota). */
  private serverPerDay: number | null = null;

  /** Store calls, chained so that they reach the store in the order they were made. */
  private ops: Promise<void> = Promise.resolve();

  constructor(opts: OrgLimiterOptions) {
    assertTimeZone(opts.timeZone);
    this.organizationId = opts.organizationId;
    this.limits = opts.limits;
    this.timeZone = opts.timeZone;
    this.clock = opts.clock;
    this.store = opts.store;
    this.logger = opts.logger;
    this.restoreAfter = opts.restoreAfterSuccesses ?? 20;
    this.maxConcurrent = Math.max(1, opts.limits.concurrency);
    this.chunk = Math.max(1, Math.floor(opts.budgetChunk ?? DEFAULT_BUDGET_CHUNK));
    this.day = quotaDay(opts.clock.now(), opts.timeZone);
  }

  /** Restores today's count and any block from the store. */
  async load(): Promise<void> {
    const rec = await this.store.load(this.organizationId);
    if (!rec) return;
    this.rollDay();
    if (rec.day === this.day) this.total = Math.max(this.total, rec.count);
    if (rec.blockedUntil !== null && rec.blockedUntil > this.clock.now()) this.blocked = rec.blockedUntil;
  }

  // ---- status, for `status`, progress and the daemon ----

  budget(): number {
    return this.serverPerDay === null
      ? dailyBudget(this.limits)
      : dailyBudget({ ...this.limits, per_day: Math.min(this.limits.per_day, this.serverPerDay) });
  }

  /** The day's count less what this process holds unsent: requests sent, or held by other processes. */
  usedToday(): number {
    this.rollDay();
    return Math.max(0, this.total - this.granted);
  }

  /** Requests reserved from the store and not sent yet (returned by flush). */
  heldToday(): number {
    this.rollDay();
    return this.granted;
  }

  remainingToday(): number {
    return Math.max(0, this.budget() - this.usedToday());
  }

  blockedUntil(): Date | null {
    if (this.blocked !== null && this.blocked <= this.clock.now()) this.blocked = null;
    return this.blocked === null ? null : new Date(this.blocked);
  }

  /** The next midnight in the reset zone. */
  nextReset(): Date {
    return new Date(nextQuotaReset(this.clock.now(), this.timeZone));
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

  /**
   * The daily quota as the server counts it (`X-Rate-Limit-Limit`/`-Remaining`, A17). When
   * fewer requests are left than this process counted, another integration of the
   * organization spent them: adopt the server's figure, so the reserve stays theirs (the store's
   * count is raised to it plus what this process holds unsent). A limit
   * below the configured plan's quota lowers the budget to it. A `Limit` no larger than the
   * per-minute limit describes the minute window, not the day, and is not used.
   */
  observeServerQuota(q: { limit: number; remaining: number }): void {
    if (q.limit <= this.limits.per_minute) return;
    this.rollDay();
    if (q.limit < this.limits.per_day && this.serverPerDay !== q.limit) {
      this.serverPerDay = q.limit;
      this.logger.warn(
        { organization_id: this.organizationId, server_per_day: q.limit, plan_per_day: this.limits.per_day },
        `the server reports a daily quota of ${q.limit} requests, less than the configured plan's ${this.limits.per_day}; ` +
          "svcsync keeps to the server's figure (set the connection's plan to match)",
      );
    }
    const used = q.limit - q.remaining;
    if (used > this.usedToday()) {
      this.logger.debug(
        { organization_id: this.organizationId, counted: this.usedToday(), server_used: used },
        'the server counts more requests today than svcsync sent; another integration spent them',
      );
      this.total = used + this.granted;
      const { day, total } = this;
      this.storeOp('could not save the daily request count', () => this.store.raise(this.organizationId, day, total));
      this.pump();
    }
  }

  /** 429 code 45: the server says the quota is spent; every request fails fast until `until`. */
  block(until: Date): void {
    const blocked = Math.max(this.blocked ?? 0, until.getTime());
    this.blocked = blocked;
    this.rollDay();
    const day = this.day;
    this.storeOp('could not save the block on the daily quota', () => this.store.block(this.organizationId, day, blocked));
    const err = this.quotaError();
    if (err) for (const w of this.queue.splice(0)) w.fail(err);
  }

  /** Throws QuotaExhaustedError when a request could not be sent today. */
  assertAvailable(): void {
    const err = this.quotaError();
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
    const early = this.quotaError();
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
          this.granted--;
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
   * when every store call made so far has reached it. When nothing is running or waiting, it
   * also reads the day's count again, so a limiter that found the budget taken sees what other
   * processes returned since.
   */
  flush(): Promise<void> {
    this.rollDay();
    this.exhausted = false;
    const idle = this.running === 0 && this.queue.length === 0;
    if (this.granted > 0 && this.queue.length === 0) {
      const n = this.granted;
      const day = this.day;
      this.granted = 0;
      this.total = Math.max(0, this.total - n);
      this.storeOp('could not return unused requests of the daily budget', () => this.store.release(this.organizationId, day, n));
    }
    if (idle) {
      const day = this.day;
      this.storeOp('could not read the daily request count', async () => {
        const rec = await this.store.load(this.organizationId);
        if (rec?.day === day && day === this.day && this.granted === 0) this.total = rec.count;
      });
    }
    return this.ops;
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
      const err = this.quotaError();
      if (err) {
        for (const w of this.queue.splice(0)) w.fail(err);
        return;
      }
      if (this.clock.now() < this.pausedUntil) {
        this.armPause();
        return;
      }
      if (this.running >= this.maxConcurrent || this.slots.length >= this.limits.per_minute) return;
      if (this.granted === 0) {
        this.refill();
        return;
      }
      this.queue.shift()!.start();
    }
  }

  /** Reserves the next chunk of the day's budget from the store; pump goes on when it answers. */
  private refill(): void {
    if (this.refilling) return;
    this.refilling = true;
    const { day, chunk } = this;
    const budget = this.budget();
    this.ops = this.ops.then(async () => {
      try {
        const r = await this.store.reserve(this.organizationId, day, chunk, budget);
        this.rollDay();
        // A chunk of a day that ended meanwhile is of no use: that day's count no longer matters.
        if (day === this.day) {
          this.granted += r.granted;
          this.total = Math.max(r.used, this.granted);
          if (r.granted === 0) this.exhausted = true;
        }
      } catch (err) {
        this.logger.warn({ organization_id: this.organizationId, err }, 'could not reserve requests of the daily budget');
        for (const w of this.queue.splice(0)) w.fail(err);
      } finally {
        this.refilling = false;
        this.pump();
      }
    });
  }

  private rollDay(): void {
    const today = quotaDay(this.clock.now(), this.timeZone);
    if (today !== this.day) {
      this.day = today;
      this.total = 0;
      this.granted = 0;
      this.exhausted = false;
    }
  }

  private quotaError(): QuotaExhaustedError | null {
    const now = this.clock.now();
    this.rollDay();
    const blocked = this.blockedUntil();
    if (blocked) {
      return new QuotaExhaustedError(
        `organization ${this.organizationId}: the daily request quota is used up (the server answered 429 code 45); ` +
          `svcsync can continue at ${blocked.toISOString()}`,
        {
          organizationId: this.organizationId,
          code: 45,
          resumeAt: blocked,
          hint:
            `the quota resets at midnight ${this.timeZone}; other integrations of this organization share it. ` +
            'Run again after the reset.',
        },
      );
    }
    const budget = this.budget();
    if (this.usedToday() >= budget || (this.granted === 0 && this.exhausted)) {
      const resumeAt = new Date(nextQuotaReset(now, this.timeZone));
      return new QuotaExhaustedError(
        `organization ${this.organizationId}: svcsync's daily budget of ${budget} requests is used ` +
          `(the ${this.limits.per_day}-request quota less the ${Math.round(this.limits.reserve * 100)}% reserve); ` +
          `it can continue at ${resumeAt.toISOString()}`,
        {
          organizationId: this.organizationId,
          resumeAt,
          hint:
            `the count resets at midnight ${this.timeZone}. The reserve is left for the organization's other integrations; ` +
            'lower limits.reserve or set the right plan if this organization has more quota.',
        },
      );
    }
    return null;
  }

  /** A store call after those already made; a failure is logged, the count in memory stays. */
  private storeOp(what: string, op: () => Promise<void>): void {
    this.ops = this.ops.then(op).catch((err: unknown) => {
      this.logger.warn({ organization_id: this.organizationId, err }, what);
    });
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
