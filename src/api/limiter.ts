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
  count: number;
  /** Epoch ms until which the server said the quota is spent (429 code 45), or null. */
  blockedUntil: number | null;
}

/** Where daily usage survives restarts; the warehouse's state tables implement it later. */
export interface UsageStore {
  load(organizationId: string): Promise<UsageRecord | null>;
  save(record: UsageRecord): Promise<void>;
}

export class MemoryUsageStore implements UsageStore {
  private readonly records = new Map<string, UsageRecord>();
  /** Saves received, for tests that check persistence is ordered and coalesced. */
  saves = 0;

  async load(organizationId: string): Promise<UsageRecord | null> {
    const r = this.records.get(organizationId);
    return r ? { ...r } : null;
  }

  async save(record: UsageRecord): Promise<void> {
    this.saves++;
    this.records.set(record.organizationId, { ...record });
  }
}

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
 *  - a daily budget (quota less reserve) counted per day in the reset zone and persisted;
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
  private windowHeld = 0;
  private pausedUntil = 0;
  private pauseTimer: Timer | null = null;
  private successStreak = 0;
  private readonly queue: Waiter[] = [];

  private day: string;
  private count = 0;
  private blocked: number | null = null;
  /** A daily quota the server reported below the plan's (observeServerQuota). */
  private serverPerDay: number | null = null;

  private saving: Promise<void> = Promise.resolve();
  private saveQueued = false;

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
    this.day = quotaDay(opts.clock.now(), opts.timeZone);
  }

  /** Restores today's count and any block from the store. */
  async load(): Promise<void> {
    const rec = await this.store.load(this.organizationId);
    if (!rec) return;
    this.rollDay();
    if (rec.day === this.day) this.count = Math.max(this.count, rec.count);
    if (rec.blockedUntil !== null && rec.blockedUntil > this.clock.now()) this.blocked = rec.blockedUntil;
  }

  // ---- status, for `status`, progress and the daemon ----

  budget(): number {
    return this.serverPerDay === null ? dailyBudget(this.limits) : dailyBudget({ ...this.limits, per_day: Math.min(this.limits.per_day, this.serverPerDay) });
  }

  usedToday(): number {
    this.rollDay();
    return this.count;
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
      this.logger.warn({ organization_id: this.organizationId, concurrency: this.maxConcurrent }, 'too many concurrent requests; lowering concurrency');
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
    const until = this.clock.now() + Math.max(0, ms);
    if (until <= this.pausedUntil) return;
    this.pausedUntil = until;
    this.pauseTimer?.cancel();
    this.pauseTimer = this.clock.setTimeout(() => {
      this.pauseTimer = null;
      this.pump();
    }, ms);
  }

  /**
   * The daily quota as the server counts it (`X-Rate-Limit-Limit`/`-Remaining`, A17). When
   * fewer requests are left than this process counted, another integration of the
   * organization spent them: adopt the server's figure, so the reserve stays theirs. A limit
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
        `the server reports a daily quota of ${q.limit} requests, less than the configured plan's ${this.limits.per_day}; svcsync keeps to the server's figure (set the connection's plan to match)`,
      );
    }
    const used = q.limit - q.remaining;
    if (used > this.count) {
      this.logger.debug({ organization_id: this.organizationId, counted: this.count, server_used: used }, 'the server counts more requests today than svcsync sent; another integration spent them');
      this.count = used;
      this.persist();
      this.pump();
    }
  }

  /** 429 code 45: the server says the quota is spent; every request fails fast until `until`. */
  block(until: Date): void {
    this.blocked = Math.max(this.blocked ?? 0, until.getTime());
    this.persist();
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
          this.running++;
          this.windowHeld++;
          this.count++;
          this.persist();
          let settled: Promise<T>;
          try {
            settled = fn();
          } catch (err) {
            settled = Promise.reject(err);
          }
          settled.then(resolve, reject).finally(() => this.release());
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      this.pump();
    });
  }

  /** Resolves when every usage save issued so far has reached the store. */
  flush(): Promise<void> {
    return this.saving;
  }

  private release(): void {
    this.running--;
    // The window slot comes back window_ms after the response finished (A16), not after it started.
    this.clock.setTimeout(() => {
      this.windowHeld--;
      this.pump();
    }, this.limits.window_ms);
    this.pump();
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const err = this.quotaError();
      if (err) {
        for (const w of this.queue.splice(0)) w.fail(err);
        return;
      }
      if (this.clock.now() < this.pausedUntil) return;
      if (this.running >= this.maxConcurrent || this.windowHeld >= this.limits.per_minute) return;
      this.queue.shift()!.start();
    }
  }

  private rollDay(): void {
    const today = quotaDay(this.clock.now(), this.timeZone);
    if (today !== this.day) {
      this.day = today;
      this.count = 0;
    }
  }

  private quotaError(): QuotaExhaustedError | null {
    const now = this.clock.now();
    this.rollDay();
    const blocked = this.blockedUntil();
    if (blocked) {
      return new QuotaExhaustedError(
        `organization ${this.organizationId}: the daily request quota is used up (the server answered 429 code 45); svcsync can continue at ${blocked.toISOString()}`,
        {
          organizationId: this.organizationId,
          code: 45,
          resumeAt: blocked,
          hint: `the quota resets at midnight ${this.timeZone}; other integrations of this organization share it. Run again after the reset.`,
        },
      );
    }
    const budget = this.budget();
    if (this.count >= budget) {
      const resumeAt = new Date(nextQuotaReset(now, this.timeZone));
      return new QuotaExhaustedError(
        `organization ${this.organizationId}: svcsync's daily budget of ${budget} requests is used (the ${this.limits.per_day}-request quota less the ${Math.round(this.limits.reserve * 100)}% reserve); it can continue at ${resumeAt.toISOString()}`,
        {
          organizationId: this.organizationId,
          resumeAt,
          hint: `the count resets at midnight ${this.timeZone}. The reserve is left for the organization's other integrations; lower limits.reserve or set the right plan if this organization has more quota.`,
        },
      );
    }
    return null;
  }

  /** Saves are chained (ordered) and coalesced (one pending save carries the latest count). */
  private persist(): void {
    if (this.saveQueued) return;
    this.saveQueued = true;
    this.saving = this.saving
      .then(async () => {
        this.saveQueued = false;
        await this.store.save({ organizationId: this.organizationId, day: this.day, count: this.count, blockedUntil: this.blocked });
      })
      .catch((err: unknown) => {
        this.logger.warn({ organization_id: this.organizationId, err }, 'could not save the daily request count');
      });
  }
}

export interface LimiterRegistryOptions {
  clock: Clock;
  store: UsageStore;
  logger: Logger;
  restoreAfterSuccesses?: number | undefined;
}

/**
 * One OrgLimiter per organization id for the whole process: an organization reached
 * through two families or two connections still has one per-minute window and one quota.
 */
export class LimiterRegistry {
  private readonly limiters = new Map<string, Promise<OrgLimiter>>();
  private readonly loaded = new Map<string, OrgLimiter>();

  constructor(private readonly opts: LimiterRegistryOptions) {}

  /** The organization's limiter; the first caller's limits and zone define it. */
  get(organizationId: string, config: { limits: Limits; timeZone: string }): Promise<OrgLimiter> {
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

  /** The limiter if it exists already (status displays). */
  peek(organizationId: string): OrgLimiter | undefined {
    return this.loaded.get(organizationId);
  }

  /** Resolves when every organization's usage saves have reached the store. */
  async flush(): Promise<void> {
    await Promise.all([...this.loaded.values()].map((l) => l.flush()));
  }
}
