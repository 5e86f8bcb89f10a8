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
   * 401s in a row on fresh tokens, whatever their code, before the token is taken as really
   * refused (or, for a scope code on a scope that never worked, the scope as missing). The
   * service answers a valid token with 401 now and then; one refresh is not proof of anything.
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

/** What the client knows about the failed attempt beyond the error itself. */
export interface AttemptFacts {
  /** Whether the attempt carried a token (a refresh that failed never sent one). */
  tokenSent: boolean;
  /**
   * Whether a request needing the scope this one needs has succeeded for the connection (its
   * refresh token) in this process. A scope that has worked cannot be missing: the grant's
   * scopes change only with a new refresh token.
   */
  scopeWorked: boolean;
}

/**
 * What to do after a failed attempt: a pure function of the error, what the call has met so
 * far, what the client knows of the attempt, and the policy. `ApiClient.get` only applies it.
 */
export function decideRetry(
  error: unknown,
  counters: RetryCounters,
  policy: RetryPolicy,
  random: () => number,
  facts: AttemptFacts,
): { decision: RetryDecision; counters: RetryCounters } {
  const fail = (e: unknown = error, blockUntil?: Date): { decision: RetryDecision; counters: RetryCounters } => ({
    decision: blockUntil ? { action: 'fail', error: e, blockUntil } : { action: 'fail', error: e },
    counters,
  });
  if (!(error instanceof SvcsyncError)) return fail();

  if (error instanceof AuthorizationError && error.status === 401 && facts.tokenSent) {
    const consecutive401 = counters.consecutive401 + 1;
    // Every 401 is first a refused token, whatever its code: a server may answer an expired,
    // revoked or passingly refused token with the code another server gives a missing scope
    // (A26). Several fresh tokens must be refused before either reading counts.
    if (consecutive401 > policy.max401Retries) return fail(refusedAtBound(error, consecutive401, facts.scopeWorked));
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

/**
 * A 401 met on `times` tokens in a row, each newly refreshed. It is a missing scope only when
 * its code says so and the scope has never worked for the connection in this process; then it
 * stops the streams that need that scope. Otherwise the service refuses the token itself, which
 * every stream of the connection shares.
 */
function refusedAtBound(error: AuthorizationError, times: number, scopeWorked: boolean): AuthorizationError {
  const inARow = `refused ${times} times in a row, each time with a newly refreshed token`;
  const details = { request: error.request, status: error.status, code: error.code, organizationId: error.organizationId };
  if (error.reach === 'family' && !scopeWorked) {
    const why =
      error.scope === undefined ? inARow : `needs scope ${error.scope}; ${inARow}, and no request needing that scope has succeeded`;
    return new AuthorizationError(`${error.message} (${why})`, {
      ...details,
      hint: error.hint,
      reach: 'family',
      scope: error.scope,
    });
  }
  const worked = error.reach === 'family' && error.scope !== undefined ? `; scope ${error.scope} has worked for this connection` : '';
  return new AuthorizationError(`${error.message} (${inARow}${worked})`, {
    ...details,
    hint:
      'the service refused every newly refreshed access token: check that the refresh token is still valid ' +
      '(not revoked, one of the 20 newest of its user) and was issued in this data center, then run again.',
    reach: 'connection',
  });
}
