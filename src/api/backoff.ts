export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 500, capMs: 30_000 };

/**
 * Exponential backoff with full jitter: a uniform draw from [0, min(cap, base·2^attempt)).
 * Full jitter spreads the retries of many waiting requests so they do not return together.
 * `attempt` counts from 0 for the first retry.
 */
export function backoffDelay(attempt: number, random: () => number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, Math.min(attempt, 30)));
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * ceiling);
}

export type HeaderSource = Headers | Record<string, string | undefined> | undefined;

export function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(headers as Record<string, string | undefined>)) {
    if (k.toLowerCase() === wanted) return v;
  }
  return undefined;
}

/**
 * How long the server asked us to wait: `Retry-After` (seconds or an HTTP date), and only on
 * a 429 or a 503, the answers where it means "come back then". `X-Rate-Limit-Reset` is not a
 * wait: it counts the seconds until the *daily* quota resets and comes on every answer (A17).
 */
export function serverRetryAfterMs(headers: HeaderSource, now: number, status?: number): number | undefined {
  if (status !== undefined && status !== 429 && status !== 503) return undefined;
  const retryAfter = headerValue(headers, 'retry-after')?.trim();
  if (!retryAfter) return undefined;
  if (/^\d+(\.\d+)?$/.test(retryAfter)) return Math.ceil(Number(retryAfter) * 1000);
  const at = Date.parse(retryAfter);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The daily quota as the server reports it in `X-Rate-Limit-Limit` and `-Remaining`. */
export interface ServerQuota {
  limit: number;
  remaining: number;
}

/**
 * The daily quota figures of a response, when it carries both headers as whole numbers.
 * They feed the daily budget only (OrgLimiter.observeServerQuota), never a wait.
 */
export function serverQuota(headers: HeaderSource): ServerQuota | null {
  const limit = headerValue(headers, 'x-rate-limit-limit')?.trim();
  const remaining = headerValue(headers, 'x-rate-limit-remaining')?.trim();
  if (!limit || !remaining || !/^\d+$/.test(limit) || !/^\d+$/.test(remaining)) return null;
  const q = { limit: Number(limit), remaining: Number(remaining) };
  return q.remaining <= q.limit ? q : null;
}

/**
 * The wait before a retry: at least what the server asked for (bounded by maxServerWaitMs,
 * so a hostile or broken header cannot park a run for a day), else jittered backoff.
 */
export function retryDelay(opts: {
  attempt: number;
  random: () => number;
  serverWaitMs?: number | undefined;
  policy?: BackoffPolicy;
  maxServerWaitMs?: number;
}): number {
  const jittered = backoffDelay(opts.attempt, opts.random, opts.policy);
  if (opts.serverWaitMs === undefined) return jittered;
  const bounded = Math.min(opts.serverWaitMs, opts.maxServerWaitMs ?? 5 * 60_000);
  // A little jitter on top keeps requests that were told the same instant from arriving together.
  return bounded + Math.floor(Math.min(Math.max(opts.random(), 0), 1) * Math.min(1000, (opts.policy ?? DEFAULT_BACKOFF).baseMs));
}
