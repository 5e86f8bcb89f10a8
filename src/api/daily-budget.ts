import { dailyBudget, type Limits } from '../config/plans.js';
import type { Clock } from '../core/clock.js';
import { QuotaExhaustedError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { describeReset, quotaDayAt, quotaDayStart, sameReset, type QuotaDay } from './quota-day.js';
import type { UsageStore } from './usage-store.js';

const DAY_MS = 86_400_000;

/** Requests a limiter reserves from the store at a time (LimiterRegistryOptions.budgetChunk). */
export const DEFAULT_BUDGET_CHUNK = 10;

export interface DailyBudgetOptions {
  organizationId: string;
  limits: Limits;
  /** Zone whose midnight resets the daily quota (A15), and whose dates key the days. */
  timeZone: string;
  clock: Clock;
  store: UsageStore;
  logger: Logger;
  /** Requests reserved from the store's daily count at a time (default DEFAULT_BUDGET_CHUNK). */
  chunk?: number | undefined;
}

/**
 * One organization's daily budget (the plan's quota less the reserve), counted per quota day in
 * the `UsageStore`, which every process on one warehouse shares. The day ends at midnight in the
 * reset zone, or at the instant the server tells in `X-Rate-Limit-Reset` once it told one
 * (`quotaDayAt`; kept in the store, so processes that have not heard the header yet count in
 * the same day). Requests are
 * reserved from the store in chunks with one atomic step each, so any number of processes never
 * together pass the budget, and what this process did not send goes back on `flush`. A 429 code
 * 45 blocks the organization until the reset. `OrgLimiter` asks it before letting each request
 * out; the per-minute window and the concurrency are the limiter's.
 */
export class DailyBudget {
  private readonly organizationId: string;
  private readonly limits: Limits;
  private readonly timeZone: string;
  private readonly clock: Clock;
  private readonly store: UsageStore;
  private readonly logger: Logger;
  private readonly chunk: number;

  private day: QuotaDay;
  /** When `day` began: a request between this and its end counts in it without a look at the calendar. */
  private dayStartsAt: number;
  /** The reset instant of any day the server told (`X-Rate-Limit-Reset`), or null: midnight in the zone. */
  private serverReset: number | null = null;
  /** The reset instant last written to the store for the current day. */
  private storedReset: number | null = null;
  /** Requests this process sent in the current day. */
  private sent = 0;
  /** The day's count in the store as this process last saw it, its own reservations included. */
  private total = 0;
  /** Reserved from the store and not sent yet. */
  private granted = 0;
  /** The store granted nothing at the last reservation: the budget is taken (until flush or a new day). */
  private exhausted = false;
  private refilling = false;
  private blocked: number | null = null;
  /** A daily quota the server reported below the plan's (observeServerQuota). */
  private serverPerDay: number | null = null;
  /** Store calls, chained so that they reach the store in the order they were made. */
  private ops: Promise<void> = Promise.resolve();

  constructor(opts: DailyBudgetOptions) {
    this.organizationId = opts.organizationId;
    this.limits = opts.limits;
    this.timeZone = opts.timeZone;
    this.clock = opts.clock;
    this.store = opts.store;
    this.logger = opts.logger;
    this.chunk = Math.max(1, Math.floor(opts.chunk ?? DEFAULT_BUDGET_CHUNK));
    const now = opts.clock.now();
    this.day = quotaDayAt(now, opts.timeZone, null);
    this.dayStartsAt = quotaDayStart(now, opts.timeZone, this.day);
  }

  /** Counts from now on in `day`, which `now` falls in. */
  private enterDay(day: QuotaDay, now: number): void {
    this.day = day;
    this.dayStartsAt = quotaDayStart(now, this.timeZone, day);
  }

  /** Restores today's count, the server's reset and any block from the store. */
  async load(): Promise<void> {
    const rec = await this.store.load(this.organizationId);
    if (!rec) return;
    if (rec.resetsAt !== null && this.serverReset === null) {
      this.serverReset = rec.resetsAt;
      this.storedReset = rec.resetsAt;
    }
    this.rollDay();
    if (rec.day === this.day.key) this.total = Math.max(this.total, rec.count);
    if (rec.blockedUntil !== null && rec.blockedUntil > this.clock.now()) this.blocked = rec.blockedUntil;
  }

  /** The day's budget: the plan's quota (or the server's, when lower) less the reserve. */
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

  /** When the current quota day ends. */
  nextReset(): Date {
    this.rollDay();
    return new Date(this.day.resetsAt);
  }

  /** The current quota day: its key, its end, and whether the server told the end. */
  quotaDay(): QuotaDay {
    this.rollDay();
    return { ...this.day };
  }

  /** Whether a reservation is in hand for the next request (else `refill` first). */
  inHand(): boolean {
    return this.granted > 0;
  }

  /** One request of the reservation is being sent. */
  spend(): void {
    this.granted--;
    this.sent++;
  }

  /**
   * The server told when its quota day ends (`X-Rate-Limit-Reset`, A17): the day follows it from
   * now on. When that puts `now` in another day than the one this process counted in (the first
   * header after a start, a reset zone that was configured wrong, a server that moved its reset),
   * the requests this process sent in the old day count in the new one, and what it reserved
   * and did not send goes back to the old one. The reset is kept with the day's count, so other
   * processes and the next start follow it before they hear the header themselves.
   */
  observeServerReset(at: number): void {
    if (this.serverReset !== null && sameReset(at, this.serverReset + Math.round((at - this.serverReset) / DAY_MS) * DAY_MS)) return;
    this.rollDay();
    const before = this.day;
    this.serverReset = at;
    const now = this.clock.now();
    const after = quotaDayAt(now, this.timeZone, at);
    this.enterDay(after, now);
    if (after.key !== before.key) {
      this.logger.info(
        {
          organization_id: this.organizationId,
          quota_day: after.key,
          resets_at: new Date(after.resetsAt).toISOString(),
          counted_in: before.key,
        },
        "the server's quota day differs from the configured reset zone's; svcsync counts in the server's",
      );
      const unsent = this.granted;
      const sent = this.sent;
      const budget = this.budget();
      this.granted = 0;
      this.exhausted = false;
      this.total = sent;
      if (unsent > 0)
        this.storeOp('could not return unused requests of the daily budget', () =>
          this.store.release(this.organizationId, before.key, unsent),
        );
      if (sent > 0)
        this.storeOp('could not save the daily request count', async () => {
          const r = await this.store.reserve(this.organizationId, after.key, sent, budget);
          if (this.day.key === after.key) this.total = Math.max(this.total, r.used);
        });
    }
    this.markReset();
  }

  /**
   * The daily quota as the server counts it (`X-Rate-Limit-Limit`/`-Remaining`, A17). When
   * fewer requests are left than this process counted, another integration of the
   * organization spent them: adopt the server's figure, so the reserve stays theirs (the store's
   * count is raised to it plus what this process holds unsent). A limit below the configured
   * plan's quota lowers the budget to it. A `Limit` no larger than the per-minute limit
   * describes the minute window, not the day, and is not used. True when the count moved.
   */
  observeServerQuota(q: { limit: number; remaining: number }): boolean {
    if (q.limit <= this.limits.per_minute) return false;
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
    if (used <= this.usedToday()) return false;
    this.logger.debug(
      { organization_id: this.organizationId, counted: this.usedToday(), server_used: used },
      'the server counts more requests today than svcsync sent; another integration spent them',
    );
    this.total = used + this.granted;
    const { total } = this;
    const day = this.day.key;
    this.storeOp('could not save the daily request count', () => this.store.raise(this.organizationId, day, total));
    return true;
  }

  /** 429 code 45: the server says the quota is spent until `until`. */
  block(until: Date): void {
    const blocked = Math.max(this.blocked ?? 0, until.getTime());
    this.blocked = blocked;
    this.rollDay();
    const day = this.day.key;
    this.storeOp('could not save the block on the daily quota', () => this.store.block(this.organizationId, day, blocked));
  }

  /**
   * Reserves the next chunk of the day's budget from the store; `then` runs when it answered
   * (whatever it granted), `failed` when the store could not be reached.
   */
  refill(then: () => void, failed: (err: unknown) => void): void {
    if (this.refilling) return;
    this.refilling = true;
    const { chunk } = this;
    const day = this.day.key;
    const budget = this.budget();
    this.ops = this.ops.then(async () => {
      try {
        const r = await this.store.reserve(this.organizationId, day, chunk, budget);
        this.rollDay();
        // A chunk of a day that ended meanwhile is of no use: that day's count no longer matters.
        if (day === this.day.key) {
          this.granted += r.granted;
          this.total = Math.max(r.used, this.granted);
          if (r.granted === 0) this.exhausted = true;
        }
      } catch (err) {
        this.logger.warn({ organization_id: this.organizationId, err }, 'could not reserve requests of the daily budget');
        failed(err);
      } finally {
        this.refilling = false;
        then();
      }
    });
  }

  /**
   * Returns the requests reserved and not sent to the store (when none wait for them), and
   * resolves when every store call made so far has reached it. When the organization is idle it
   * also reads the day's count again, so a budget found taken sees what other processes returned.
   */
  flush(state: { idle: boolean; waiting: boolean }): Promise<void> {
    this.rollDay();
    this.exhausted = false;
    if (this.granted > 0 && !state.waiting) {
      const n = this.granted;
      const day = this.day.key;
      this.granted = 0;
      this.total = Math.max(0, this.total - n);
      this.storeOp('could not return unused requests of the daily budget', () => this.store.release(this.organizationId, day, n));
    }
    if (state.idle) {
      const day = this.day.key;
      this.storeOp('could not read the daily request count', async () => {
        const rec = await this.store.load(this.organizationId);
        if (rec?.day === day && day === this.day.key && this.granted === 0) this.total = rec.count;
      });
    }
    return this.ops;
  }

  /** Why no request may be sent today (the server's block, or the budget taken), or null. */
  quotaError(): QuotaExhaustedError | null {
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
            `the quota resets ${describeReset(this.day, this.timeZone)}; other integrations of this organization share it. ` +
            'Run again after the reset.',
        },
      );
    }
    const budget = this.budget();
    if (this.usedToday() >= budget || (this.granted === 0 && this.exhausted)) {
      const resumeAt = new Date(this.day.resetsAt);
      return new QuotaExhaustedError(
        `organization ${this.organizationId}: svcsync's daily budget of ${budget} requests is used ` +
          `(the ${this.limits.per_day}-request quota less the ${Math.round(this.limits.reserve * 100)}% reserve); ` +
          `it can continue at ${resumeAt.toISOString()}`,
        {
          organizationId: this.organizationId,
          resumeAt,
          hint:
            `the count resets ${describeReset(this.day, this.timeZone)}. The reserve is left for the organization's other integrations; ` +
            'lower limits.reserve or set the right plan if this organization has more quota.',
        },
      );
    }
    return null;
  }

  private rollDay(): void {
    const now = this.clock.now();
    // Called for every request: the zone's calendar (luxon, ~130 µs) is consulted only when the
    // day ends, when the clock went back past its start, or when the server's reset came or went.
    const day = this.day;
    if (now < day.resetsAt && now >= this.dayStartsAt && day.fromServer === (this.serverReset !== null)) {
      if (day.fromServer) this.markReset();
      return;
    }
    const today = quotaDayAt(now, this.timeZone, this.serverReset);
    if (today.key !== this.day.key) {
      this.total = 0;
      this.granted = 0;
      this.sent = 0;
      this.exhausted = false;
    }
    this.enterDay(today, now);
    if (today.fromServer) this.markReset();
  }

  /** Keeps the current day's end with its count, once per day, when the server told it. */
  private markReset(): void {
    const { key, resetsAt, fromServer } = this.day;
    if (!fromServer || (this.storedReset !== null && this.storedReset === resetsAt)) return;
    this.storedReset = resetsAt;
    this.storeOp('could not save when the quota day ends', () => this.store.markReset(this.organizationId, key, resetsAt));
  }

  /** A store call after those already made; a failure is logged, the count in memory stays. */
  private storeOp(what: string, op: () => Promise<void>): void {
    this.ops = this.ops.then(op).catch((err: unknown) => {
      this.logger.warn({ organization_id: this.organizationId, err }, what);
    });
  }
}
