import { describe, expect, it } from 'vitest';
import { decideRetry, NO_RETRIES, type RetryCounters, type RetryPolicy } from '../../src/api/retry-decision.js';
import { AuthorizationError, FatalError, QuotaExhaustedError, RetriableError } from '../../src/core/errors.js';

const policy: RetryPolicy = {
  maxRetries: 3,
  maxRateLimitWaits: 2,
  maxConcurrencyRetries: 2,
  max401Retries: 3,
  maxServerWaitMs: 300_000,
  windowMs: 60_000,
};
const half = (): number => 0.5;
const resumeAt = new Date('2026-11-21T00:00:00Z');

const server = new RetriableError('500', { reason: 'server', status: 500 });
const cutShort = new RetriableError('cut', { reason: 'invalid_body', status: 200 });
const minute = new RetriableError('44', { reason: 'rate_limit', status: 429, code: 44 });
const minuteAsked = new RetriableError('44', { reason: 'rate_limit', status: 429, code: 44, retryAfterMs: 7_000 });
const inflight = new RetriableError('1070', { reason: 'concurrency', status: 429, code: 1070 });
const token401 = new AuthorizationError('401', { status: 401, code: 14 });
const scope401 = new AuthorizationError('401', { status: 401, code: 57, reach: 'family' });
const quota45 = new QuotaExhaustedError('45', { code: 45, resumeAt });
const budget = new QuotaExhaustedError('budget', { resumeAt });
const gone = new FatalError('1002', { status: 404, code: 1002 });

const c = (over: Partial<RetryCounters>): RetryCounters => ({ ...NO_RETRIES, ...over });

describe('decideRetry', () => {
  it.each<[string, unknown, RetryCounters, boolean, Record<string, unknown>, Partial<RetryCounters>]>([
    ['a 5xx backs off (jittered, seconds)', server, NO_RETRIES, true, { action: 'retry', why: 'transient', waitMs: 250 }, { retries: 1 }],
    [
      'a cut-short body backs off longer on the third try',
      cutShort,
      c({ retries: 2 }),
      true,
      { action: 'retry', why: 'transient', waitMs: 1_000 },
      { retries: 3 },
    ],
    ['a 5xx past max_retries fails', server, c({ retries: 3 }), true, { action: 'fail' }, {}],
    [
      '429 code 44 without Retry-After waits a window and holds the organization',
      minute,
      NO_RETRIES,
      true,
      { action: 'retry', why: 'rate_limit', pauseOrganization: true, waitMs: 60_250 },
      { rateLimitWaits: 1 },
    ],
    [
      '429 code 44 with Retry-After waits what it asks',
      minuteAsked,
      NO_RETRIES,
      true,
      { action: 'retry', why: 'rate_limit', waitMs: 7_250 },
      { rateLimitWaits: 1 },
    ],
    ['429 code 44 past its bound fails', minute, c({ rateLimitWaits: 2 }), true, { action: 'fail' }, {}],
    [
      '429 code 1070 lowers concurrency',
      inflight,
      NO_RETRIES,
      true,
      { action: 'retry', why: 'concurrency', lowerConcurrency: true, waitMs: 250 },
      { concurrencyRetries: 1 },
    ],
    ['the first 401 refreshes at once', token401, NO_RETRIES, true, { action: 'refresh', waitMs: 0 }, { consecutive401: 1 }],
    [
      'a 401 on a fresh token refreshes after a backoff',
      token401,
      c({ consecutive401: 1 }),
      true,
      { action: 'refresh', waitMs: 250 },
      { consecutive401: 2 },
    ],
    ['the fourth 401 in a row fails the connection', token401, c({ consecutive401: 3 }), true, { action: 'fail' }, {}],
    ['a 401 without a token sent (refresh refused) fails', token401, NO_RETRIES, false, { action: 'fail' }, {}],
    ['a missing scope gets one fresh token', scope401, NO_RETRIES, true, { action: 'refresh', waitMs: 0 }, { consecutive401: 1 }],
    ['a missing scope twice fails its family', scope401, c({ consecutive401: 1 }), true, { action: 'fail' }, {}],
    [
      'a 5xx between 401s resets the 401 run',
      server,
      c({ consecutive401: 2 }),
      true,
      { action: 'retry' },
      { consecutive401: 0, retries: 1 },
    ],
    ['429 code 45 fails and blocks until the reset', quota45, NO_RETRIES, true, { action: 'fail', blockUntil: resumeAt }, {}],
    ["svcsync's own budget fails without a block", budget, NO_RETRIES, true, { action: 'fail' }, {}],
    ['404 code 1002 fails', gone, NO_RETRIES, true, { action: 'fail' }, {}],
    ['a plain Error fails', new Error('bug'), NO_RETRIES, true, { action: 'fail' }, {}],
  ])('%s', (_name, error, counters, tokenSent, decision, after) => {
    const out = decideRetry(error, counters, policy, half, tokenSent);
    expect(out.decision).toMatchObject(decision);
    if (decision['action'] === 'fail' && !('blockUntil' in decision)) expect(out.decision).not.toHaveProperty('blockUntil');
    expect(out.counters).toMatchObject(after);
  });

  it('names the connection and says what to do when fresh tokens keep being refused', () => {
    const out = decideRetry(token401, c({ consecutive401: 3 }), policy, half, true);
    const e = (out.decision as { error: AuthorizationError }).error;
    expect(e).toBeInstanceOf(AuthorizationError);
    expect(e.reach).toBe('connection');
    expect(e.message).toContain('refused 4 times in a row');
    expect(e.hint).toContain('refresh token');
  });

  it('never mutates the counters it is given', () => {
    const before = c({ retries: 1 });
    decideRetry(server, before, policy, half, true);
    expect(before).toEqual(c({ retries: 1 }));
  });
});
