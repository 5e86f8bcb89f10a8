/** Spec section 8: what each plan allows per organization. */
export const PLANS = ['free', 'standard', 'professional', 'premium', 'elite', 'ultimate', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

export const REGIONS = ['us', 'eu', 'in', 'au', 'jp', 'ca', 'cn', 'sa'] as const;
export type Region = (typeof REGIONS)[number];

export interface Limits {
  /** Requests allowed in any window of window_ms (spec: 100 per minute per organization). */
  per_minute: number;
  /** The plan's daily quota (before the reserve is taken off). */
  per_day: number;
  /** Requests in flight at once (spec: 5 on free, 10 on paid plans). */
  concurrency: number;
  window_ms: number;
  /** Share of the daily quota left for the organization's other integrations. */
  reserve: number;
}

const DAILY: Record<Plan, number> = {
  free: 1000,
  standard: 2000,
  professional: 5000,
  premium: 10000,
  elite: 10000,
  ultimate: 10000,
  enterprise: 10000,
};

export function planLimits(plan: Plan): Limits {
  return {
    per_minute: 100,
    per_day: DAILY[plan],
    concurrency: plan === 'free' ? 5 : 10,
    window_ms: 60_000,
    reserve: 0.1,
  };
}

/**
 * A daily quota of at least this many requests (what `svcsync sandbox --unlimited` writes as
 * `limits.per_day`) is shown as unlimited: the largest plan allows 10,000, and no schedule comes
 * near it.
 */
export const UNLIMITED_PER_DAY = 1_000_000_000;

/** Whether the daily quota is unlimited in practice (`UNLIMITED_PER_DAY`). */
export function unlimitedDaily(limits: Pick<Limits, 'per_day'>): boolean {
  return limits.per_day >= UNLIMITED_PER_DAY;
}

/** The daily budget svcsync allows itself: the quota less the reserve, rounded down. */
export function dailyBudget(limits: Limits): number {
  return Math.max(0, Math.floor(limits.per_day * (1 - limits.reserve)));
}

/**
 * Authorization servers by region. The spec names six regions with an authorization
 * server but not their hosts; these follow its rule (same host, regional suffix) and are
 * configuration (`regions:` in the file, `accounts_url:` per connection) — see
 * docs/assumptions.md. China and Saudi Arabia have no authorization server in the spec,
 * so a connection there must give accounts_url.
 */
export const DEFAULT_ACCOUNTS_URLS: Partial<Record<Region, string>> = {
  us: 'https://accounts.svc.com',
  eu: 'https://accounts.svc.eu',
  in: 'https://accounts.svc.in',
  au: 'https://accounts.svc.com.au',
  jp: 'https://accounts.svc.jp',
  ca: 'https://accounts.svccloud.ca',
};
