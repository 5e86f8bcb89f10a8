import { describe, expect, it } from 'vitest';
import { decideRetry, NO_RETRIES, type AttemptFacts, type RetryCounters, type RetryPolicy } from '../../src/api/retry-decision.js';
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
// What classify makes of 401 code 57: taken at its word, the scope the request needs is missing.
const scope401 = new AuthorizationError('GET /inventory/v1/contacts → HTTP 401 code 57', {
  status: 401,
  code: 57,
  reach: 'family',
  scope: 'SvcInventory.contacts.READ',
  hint: 'check that the refresh token was granted scope SvcInventory.contacts.READ',
});
const quota45 = new QuotaExhaustedError('45', { code: 45, resumeAt });
const budget = new QuotaExhaustedError('budget', { resumeAt });
const gone = new FatalError('1002', { status: 404, code: 1002 });

const c = (over: Partial<RetryCounters>): RetryCounters => ({ ...NO_RETRIES, ...over });
const sent: AttemptFacts = { tokenSent: true, scopeWorked: false };

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
    [
      'a 401 code 57 is a refused token first: refreshed at once',
      scope401,
      NO_RETRIES,
      true,
      { action: 'refresh', waitMs: 0 },
      { consecutive401: 1 },
    ],
    [
      'a 401 code 57 on a fresh token refreshes after a backoff, like any 401',
      scope401,
      c({ consecutive401: 1 }),
      true,
      { action: 'refresh', waitMs: 250 },
      { consecutive401: 2 },
    ],
    [
      'a 401 code 57 on the third token in a row is still refreshed',
      scope401,
      c({ consecutive401: 2 }),
      true,
      { action: 'refresh', waitMs: 500 },
      { consecutive401: 3 },
    ],
    ['the fourth 401 code 57 in a row fails', scope401, c({ consecutive401: 3 }), true, { action: 'fail' }, {}],
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
    const out = decideRetry(error, counters, policy, half, { tokenSent, scopeWorked: false });
    expect(out.decision).toMatchObject(decision);
    if (decision['action'] === 'fail' && !('blockUntil' in decision)) expect(out.decision).not.toHaveProperty('blockUntil');
    expect(out.counters).toMatchObject(after);
  });

  it.each<[string, AuthorizationError, boolean, { reach: 'family' | 'connection'; scope: string | undefined; says: string }]>([
    [
      'code 57 on a scope that never worked: the scope is missing, its streams stop',
      scope401,
      false,
      { reach: 'family', scope: 'SvcInventory.contacts.READ', says: 'needs scope SvcInventory.contacts.READ' },
    ],
    [
      'code 57 on a scope that has worked: a refused token, the connection stops',
      scope401,
      true,
      { reach: 'connection', scope: undefined, says: 'scope SvcInventory.contacts.READ has worked for this connection' },
    ],
    [
      'code 14 on a scope that never worked: a refused token',
      token401,
      false,
      { reach: 'connection', scope: undefined, says: 'refused 4' },
    ],
    ['code 14 on a scope that has worked: a refused token', token401, true, { reach: 'connection', scope: undefined, says: 'refused 4' }],
  ])('at the bound (the fourth 401 in a row on fresh tokens), %s', (_name, error, scopeWorked, verdict) => {
    const out = decideRetry(error, c({ consecutive401: 3 }), policy, half, { tokenSent: true, scopeWorked });
    expect(out.decision.action).toBe('fail');
    const e = (out.decision as { error: AuthorizationError }).error;
    expect(e).toBeInstanceOf(AuthorizationError);
    expect({ reach: e.reach, scope: e.scope }).toEqual({ reach: verdict.reach, scope: verdict.scope });
    expect(e.message).toContain(verdict.says);
    expect(e.message).toContain('refused 4 times in a row, each time with a newly refreshed token');
    expect(e.status).toBe(401);
    expect(e.code).toBe(error.code);
  });

  it('whether the scope has worked changes nothing before the bound', () => {
    for (let consecutive401 = 0; consecutive401 < policy.max401Retries; consecutive401++) {
      const never = decideRetry(scope401, c({ consecutive401 }), policy, half, { tokenSent: true, scopeWorked: false });
      const worked = decideRetry(scope401, c({ consecutive401 }), policy, half, { tokenSent: true, scopeWorked: true });
      expect(never).toEqual(worked);
      expect(never.decision.action).toBe('refresh');
    }
  });

  it('a missing scope keeps the hint that names it', () => {
    const out = decideRetry(scope401, c({ consecutive401: 3 }), policy, half, sent);
    expect((out.decision as { error: AuthorizationError }).error.hint).toContain('SvcInventory.contacts.READ');
  });

  it('names the connection and says what to do when fresh tokens keep being refused', () => {
    const out = decideRetry(token401, c({ consecutive401: 3 }), policy, half, sent);
    const e = (out.decision as { error: AuthorizationError }).error;
    expect(e).toBeInstanceOf(AuthorizationError);
    expect(e.reach).toBe('connection');
    expect(e.message).toContain('refused 4 times in a row');
    expect(e.hint).toContain('refresh token');
  });

  it('never mutates the counters it is given', () => {
    const before = c({ retries: 1 });
    decideRetry(server, before, policy, half, sent);
    expect(before).toEqual(c({ retries: 1 }));
  });
});
