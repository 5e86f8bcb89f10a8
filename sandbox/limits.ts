/**
 * Per-organization limits of spec 8 (the sandbox's own copy of the plan table). One
 * limiter per organization, shared by all four families: the spec counts per organization.
 */
export type Plan = 'free' | 'standard' | 'professional' | 'premium' | 'elite' | 'ultimate' | 'enterprise';

export interface Limits {
  per_minute: number;
  per_day: number;
  concurrency: number;
  window_ms: number;
}

export const PLAN_LIMITS: Readonly<Record<Plan, Omit<Limits, 'window_ms'>>> = {
  free: { per_minute: 100, per_day: 1000, concurrency: 5 },
  standard: { per_minute: 100, per_day: 2000, concurrency: 10 },
  professional: { per_minute: 100, per_day: 5000, concurrency: 10 },
  premium: { per_minute: 100, per_day: 10000, concurrency: 10 },
  elite: { per_minute: 100, per_day: 10000, concurrency: 10 },
  ultimate: { per_minute: 100, per_day: 10000, concurrency: 10 },
  enterprise: { per_minute: 100, per_day: 10000, concurrency: 10 },
};

export const PLANS = Object.keys(PLAN_LIMITS) as Plan[];

export function limitsFor(plan: Plan, overrides: Partial<Limits> = {}): Limits {
  return { ...PLAN_LIMITS[plan], window_ms: 60_000, ...overrides };
}

const DAY_MS = 86_400_000;

export type Rejection = {
  code: 44 | 45 | 1070;
  message: string;
  /** Sandbox milliseconds until a retry can succeed. */
  retryAfterMs: number;
  limit: number;
  remaining: number;
};

export class OrgLimiter {
  /** Arrival times (sandbox ms) of accepted requests still inside the window; a ring-less queue. */
  private arrivals: number[] = [];
  private head = 0;
  private day = -1;
  private dayCount = 0;
  inFlight = 0;

  /**
   * `dayOffsetMs`: where the quota day starts, east of UTC midnight (variant localQuotaDay: the
   * organization's offset, so its day resets at its local midnight).
   */
  constructor(
    private readonly limits: Limits,
    private readonly dayOffsetMs = 0,
  ) {}

  private dayOf(now: number): number {
    return Math.floor((now + this.dayOffsetMs) / DAY_MS);
  }

  /** When the quota day of `now` ends (sandbox ms). */
  resetsAt(now: number): number {
    return (this.dayOf(now) + 1) * DAY_MS - this.dayOffsetMs;
  }

  /** Accepts (counting the request) or says which limit refuses it. Rejections count nowhere. */
  admit(now: number): Rejection | undefined {
    const l = this.limits;
    const today = this.dayOf(now);
    if (today !== this.day) {
      this.day = today;
      this.dayCount = 0;
    }
    if (this.dayCount >= l.per_day) {
      return {
        code: 45,
        message: `You have reached the maximum of ${l.per_day} API requests allowed per day for your plan. Try again tomorrow.`,
        retryAfterMs: this.resetsAt(now) - now,
        limit: l.per_day,
        remaining: 0,
      };
    }
    if (this.inFlight >= l.concurrency) {
      return {
        code: 1070,
        message: `The organization has ${l.concurrency} API requests in process. Wait for them to finish.`,
        retryAfterMs: 1000,
        limit: l.concurrency,
        remaining: 0,
      };
    }
    const cutoff = now - l.window_ms;
    while (this.head < this.arrivals.length && (this.arrivals[this.head] as number) <= cutoff) this.head++;
    if (this.head > 1024 && this.head * 2 > this.arrivals.length) {
      this.arrivals = this.arrivals.slice(this.head);
      this.head = 0;
    }
    const inWindow = this.arrivals.length - this.head;
    if (inWindow >= l.per_minute) {
      return {
        code: 44,
        message: `Access to the API is blocked for this organization: more than ${l.per_minute} requests in a minute.`,
        retryAfterMs: (this.arrivals[this.head] as number) + l.window_ms - now,
        limit: l.per_minute,
        remaining: 0,
      };
    }
    this.arrivals.push(now);
    this.dayCount++;
    this.inFlight++;
    return undefined;
  }

  release(): void {
    if (this.inFlight > 0) this.inFlight--;
  }

  usage(now: number): { window: number; day: number; inFlight: number } {
    const cutoff = now - this.limits.window_ms;
    let n = 0;
    for (let i = this.head; i < this.arrivals.length; i++) if ((this.arrivals[i] as number) > cutoff) n++;
    return { window: n, day: this.dayOf(now) === this.day ? this.dayCount : 0, inFlight: this.inFlight };
  }
}
