import { AuthorizationError, QuotaExhaustedError, RetriableError, SvcsyncError } from '../core/errors.js';
import { backoffDelay, retryDelay, type BackoffPolicy } from './backoff.js';

/** What one call has met so far; a decision returns the next value, never mutates it. */
export interface RetryCounters {
  /** 5xx, network, timeout and cut-short bodies retried. */
  retries: number;
  /** 429 code 44 waits. */
  rateLimitWaits: number;
  /** 429 code 1070 retries. */
  concurrencyRetries: number;
  /** 401s in a row, each on a token obtained after the previous one was refused. */
  consecutive401: number;
}

export const NO_RETRIES: RetryCounters = { retries: 0, rateLimitWaits: 0, concurrencyRetries: 0, consecutive401: 0 };

export interface RetryPolicy {
  /** Retries of transient failures (sync.max_retries). */
  maxRetries: number;
  /** 429 code 44 waits allowed per call before giving up. */
  maxRateLimitWaits: number;
  /** 429 code 1070 retries per call (each also lowers concurrency). */
  maxConcurrencyRetries: number;
  /**
   * 401s in a row on fresh tokens before the token is taken as really refused. The service
   * answers a valid token with 401 now and then; one refresh is not proof of anything.
   */
  max401Retries: number;
  /** Longest single wait a server may ask for with Retry-After. */
  maxServerWaitMs: number;
  /** The per-minute window: the wait after a 429 code 44 that names none. */
  windowMs: number;
  backoff?: BackoffPolicy;
}

export type RetryDecision =
  | { action: 'fail'; error: unknown; blockUntil?: Date }
  /** Drop the refused token, wait, and try again with a fresh one. */
  | { action: 'refresh'; waitMs: number }
  /** Wait and try again; `pauseOrganization` holds every queued call of the organization too. */
  | {
      action: 'retry';
      waitMs: number;
      pauseOrganization: boolean;
      lowerConcurrency: boolean;
      why: 'rate_limit' | 'concurrency' | 'transient';
    };

/**
 * What to do after a failed attempt: a pure function of the error, what the call has met so
 * far and the policy. `ApiClient.get` only applies the answer. `tokenSent` says whether the
 * attempt carried a token (a refresh that failed never sent one).
 */
export function decideRetry(
  error: unknown,
  counters: RetryCounters,
  policy: RetryPolicy,
  random: () => number,
  tokenSent: boolean,
): { decision: RetryDecision; counters: RetryCounters } {
  const fail = (e: unknown = error, blockUntil?: Date): { decision: RetryDecision; counters: RetryCounters } => ({
    decision: blockUntil ? { action: 'fail', error: e, blockUntil } : { action: 'fail', error: e },
    counters,
  });
  if (!(error instanceof SvcsyncError)) return fail();

  if (error instanceof AuthorizationError && error.status === 401 && tokenSent) {
    const consecutive401 = counters.consecutive401 + 1;
    // A missing scope stays missing: one fresh token settles it. A refused token may be the
    // service's passing fault: several fresh tokens must be refused before it counts.
    const bound = error.reach === 'family' ? 1 : policy.max401Retries;
    if (consecutive401 > bound) {
      if (error.reach === 'family') return fail();
      return fail(
        new AuthorizationError(`${error.message} (refused ${consecutive401} times in a row, each time with a newly refreshed token)`, {
          request: error.request,
          status: error.status,
          code: error.code,
          organizationId: error.organizationId,
          hint:
            'the service refused every newly refreshed access token: check that the refresh token is still valid ' +
            '(not revoked, one of the 20 newest of its user) and was issued in this data center, then run again.',
          reach: 'connection',
        }),
      );
    }
    // The first 401 may be an expired or revoked token: refresh at once. Later ones met a
    // token that was just refreshed: transient on the server's side, so back off too.
    const waitMs = consecutive401 === 1 ? 0 : backoffDelay(consecutive401 - 2, random, policy.backoff);
    return { decision: { action: 'refresh', waitMs }, counters: { ...counters, consecutive401 } };
  }
  const next = { ...counters, consecutive401: 0 };
  if (error instanceof QuotaExhaustedError) return fail(error, error.code === 45 ? error.resumeAt : undefined);
  if (!(error instanceof RetriableError)) return fail();

  if (error.reason === 'rate_limit') {
    const rateLimitWaits = next.rateLimitWaits + 1;
    if (rateLimitWaits > policy.maxRateLimitWaits) return fail();
    const waitMs = retryDelay({
      attempt: 0,
      random,
      serverWaitMs: error.retryAfterMs ?? policy.windowMs,
      maxServerWaitMs: policy.maxServerWaitMs,
      ...(policy.backoff ? { policy: policy.backoff } : {}),
    });
    return {
      decision: { action: 'retry', waitMs, pauseOrganization: true, lowerConcurrency: false, why: 'rate_limit' },
      counters: { ...next, rateLimitWaits },
    };
  }
  if (error.reason === 'concurrency') {
    const concurrencyRetries = next.concurrencyRetries + 1;
    if (concurrencyRetries > policy.maxConcurrencyRetries) return fail();
    const waitMs = retryDelay({
      attempt: concurrencyRetries - 1,
      random,
      serverWaitMs: error.retryAfterMs,
      maxServerWaitMs: policy.maxServerWaitMs,
      ...(policy.backoff ? { policy: policy.backoff } : {}),
    });
    return {
      decision: { action: 'retry', waitMs, pauseOrganization: false, lowerConcurrency: true, why: 'concurrency' },
      counters: { ...next, concurrencyRetries },
    };
  }
  const retries = next.retries + 1;
  if (retries > policy.maxRetries) return fail();
  const waitMs = retryDelay({
    attempt: retries - 1,
    random,
    serverWaitMs: error.retryAfterMs,
    maxServerWaitMs: policy.maxServerWaitMs,
    ...(policy.backoff ? { policy: policy.backoff } : {}),
  });
  return {
    decision: { action: 'retry', waitMs, pauseOrganization: false, lowerConcurrency: false, why: 'transient' },
    counters: { ...next, retries },
  };
}
