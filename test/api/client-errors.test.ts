import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, FatalError, QuotaExhaustedError, RetriableError, type SvcsyncError } from '../../src/core/errors.js';
import { ACCOUNTS, API, harness, setupNock, teardownNock, tokenReply } from './helpers.js';

const ok = { code: 0, message: 'success', users: [{ user_id: 'u1' }] };
const USERS = '/books/v3/users';

type Reply = { status: number; body: unknown; headers?: Record<string, string> } | { error: { code: string; message: string } };

function mockSequence(replies: Reply[], times: number[] = []): nock.Scope {
  const scope = nock(API);
  for (const r of replies) {
    const i = scope.get(USERS).query({ organization_id: '1' });
    // An Error, as a socket gives: nock emits a plain object on a ClientRequest not at all.
    if ('error' in r) i.replyWithError(Object.assign(new Error(r.error.message), { code: r.error.code }));
    else
      i.reply(function () {
        times.push(now());
        return [r.status, typeof r.body === 'string' ? r.body : JSON.stringify(r.body), r.headers ?? {}];
      });
  }
  return scope;
}

let now: () => number = () => 0;

describe('error classes and their retry decision', () => {
  beforeEach(() => {
    setupNock();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply()).persist();
  });
  afterEach(() => {
    nock.cleanAll();
    teardownNock();
  });

  const cases: Array<{
    name: string;
    replies: Reply[];
    /** 'ok' when the call finally succeeds, else the error kind expected. */
    result: 'ok' | 'retriable' | 'quota' | 'fatal';
    reason?: string;
    outcomes: string[];
    failures: number;
  }> = [
    {
      name: '429 code 44 waits for the window, not a failure',
      replies: [
        { status: 429, body: { code: 44, message: 'organization blocked for a minute' } },
        { status: 200, body: ok },
      ],
      result: 'ok',
      outcomes: ['rate_limited', 'ok'],
      failures: 0,
    },
    {
      name: '429 code 1070 backs off and retries',
      replies: [
        { status: 429, body: { code: 1070, message: 'too many in-process requests' } },
        { status: 200, body: ok },
      ],
      result: 'ok',
      outcomes: ['retried', 'ok'],
      failures: 0,
    },
    {
      name: '429 code 45 stops at once',
      replies: [{ status: 429, body: { code: 45, message: 'daily limit exceeded' } }],
      result: 'quota',
      outcomes: ['failed'],
      failures: 1,
    },
    {
      name: '500 is retried',
      replies: [
        { status: 500, body: { code: 1000, message: 'internal error' } },
        { status: 200, body: ok },
      ],
      result: 'ok',
      outcomes: ['retried', 'ok'],
      failures: 0,
    },
    {
      name: '503 is retried up to max_retries, then fails',
      replies: Array.from({ length: 4 }, () => ({ status: 503, body: '<html>busy</html>' })),
      result: 'retriable',
      reason: 'server',
      outcomes: ['retried', 'retried', 'retried', 'failed'],
      failures: 1,
    },
    {
      name: 'HTTP 200 with code 1000 is retried',
      replies: [
        { status: 200, body: { code: 1000, message: 'internal error' } },
        { status: 200, body: ok },
      ],
      result: 'ok',
      outcomes: ['retried', 'ok'],
      failures: 0,
    },
    {
      name: 'an invalid JSON body is retried',
      replies: [
        { status: 200, body: '{"code":0,"users":[{"user_id":' },
        { status: 200, body: ok },
      ],
      result: 'ok',
      outcomes: ['retried', 'ok'],
      failures: 0,
    },
    {
      name: 'invalid JSON every time ends retriable/invalid_body',
      replies: Array.from({ length: 4 }, () => ({ status: 200, body: 'oops' })),
      result: 'retriable',
      reason: 'invalid_body',
      outcomes: ['retried', 'retried', 'retried', 'failed'],
      failures: 1,
    },
    {
      name: 'a connection reset is retried',
      replies: [{ error: { code: 'ECONNRESET', message: 'socket hang up' } }, { status: 200, body: ok }],
      result: 'ok',
      outcomes: ['retried', 'ok'],
      failures: 0,
    },
    {
      name: '400 is fatal, not retried',
      replies: [{ status: 400, body: { code: 2, message: 'Invalid value passed for filter_by' } }],
      result: 'fatal',
      outcomes: ['failed'],
      failures: 1,
    },
    {
      name: '404 code 1002 is fatal, not retried',
      replies: [{ status: 404, body: { code: 1002, message: 'User does not exist.' } }],
      result: 'fatal',
      outcomes: ['failed'],
      failures: 1,
    },
    {
      name: '405 is fatal, not retried',
      replies: [{ status: 405, body: { code: 9, message: 'Method not allowed' } }],
      result: 'fatal',
      outcomes: ['failed'],
      failures: 1,
    },
    {
      name: 'HTTP 200 with another non-zero code is fatal',
      replies: [{ status: 200, body: { code: 4027, message: 'Invalid date range' } }],
      result: 'fatal',
      outcomes: ['failed'],
      failures: 1,
    },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const h = harness({ maxRetries: 3 });
      now = () => h.clock.now();
      mockSequence(c.replies);
      const settled = await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' })).then(
        (v) => ({ ok: true as const, v }),
        (e: unknown) => ({ ok: false as const, e }),
      );
      if (c.result === 'ok') {
        expect(settled.ok).toBe(true);
      } else {
        expect(settled.ok).toBe(false);
        const e = (settled as { e: SvcsyncError }).e;
        expect(e.kind).toBe(c.result);
        if (c.reason) expect((e as RetriableError).reason).toBe(c.reason);
      }
      expect(h.events.map((e) => e.outcome)).toEqual(c.outcomes);
      expect(h.client.stats().failures).toBe(c.failures);
      expect(h.client.stats().requests).toBe(c.replies.length);
    });
  }

  it('names method, path, status, code and message in a fatal error, never the token', async () => {
    const h = harness();
    mockSequence([{ status: 404, body: { code: 1002, message: 'User does not exist.' } }]);
    const e = (await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((x: unknown) => x)) as FatalError;
    expect(e).toBeInstanceOf(FatalError);
    expect(e.message).toContain('GET /books/v3/users?organization_id=1');
    expect(e.message).toContain('HTTP 404 code 1002: User does not exist.');
    expect(e.hint).toMatch(/does not exist/);
    expect(e.message).not.toContain('access-token');
  });

  it('a redirect loop fails at once, naming the request and the address, instead of being retried', async () => {
    const h = harness({ maxRetries: 3 });
    nock(API)
      .get(USERS)
      .query({ organization_id: '1' })
      .times(21)
      .reply(302, '', { Location: `${API}${USERS}?organization_id=1` });
    const e = (await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((x: unknown) => x)) as ConfigError;
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.message).toContain(`GET /books/v3/users?organization_id=1 (organization 1): 20 redirects in a row from ${API}/books/v3/users`);
    expect(e.hint).toMatch(/API address is probably wrong/);
    expect(h.client.stats()).toMatchObject({ requests: 1, retries: 0, failures: 1 });
  });

  it('counts a 1070 against the concurrency, which comes back after 20 successes', async () => {
    const h = harness();
    mockSequence([
      { status: 429, body: { code: 1070, message: 'too many' } },
      ...Array.from({ length: 20 }, () => ({ status: 200, body: ok })),
    ]);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    const limiter = await h.client.limitsFor('1');
    expect(limiter.concurrency()).toBe(4);
    for (let i = 0; i < 19; i++) await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(limiter.concurrency()).toBe(5);
  });

  it('honours Retry-After: the retry waits as long as the server said', async () => {
    const h = harness();
    const times: number[] = [];
    now = () => h.clock.now();
    mockSequence(
      [
        { status: 503, body: 'busy', headers: { 'Retry-After': '7' } },
        { status: 200, body: ok },
      ],
      times,
    );
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    const gap = times[1]! - times[0]!;
    expect(gap).toBeGreaterThanOrEqual(7_000);
    expect(gap).toBeLessThan(8_000);
  });

  it('honours an HTTP-date Retry-After on a 429 code 44, and waits a window when only X-Rate-Limit-Reset is sent', async () => {
    const h = harness();
    const times: number[] = [];
    now = () => h.clock.now();
    const at = new Date(h.clock.now() + 20_000).toUTCString();
    mockSequence(
      [
        { status: 429, body: { code: 44, message: 'blocked' }, headers: { 'Retry-After': at } },
        { status: 429, body: { code: 44, message: 'blocked' }, headers: { 'X-Rate-Limit-Reset': '12' } },
        { status: 200, body: ok },
      ],
      times,
    );
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(20_000);
    expect(times[1]! - times[0]!).toBeLessThan(21_500);
    // X-Rate-Limit-Reset counts to the daily reset; the per-minute refusal waits the window.
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(60_000);
    expect(times[2]! - times[1]!).toBeLessThan(61_500);
    expect(h.client.stats()).toMatchObject({ failures: 0, retries: 0, rateLimited: { '1': 2 } });
  });

  it('waits a whole window on a 429 code 44 without headers, holding back other calls to the organization', async () => {
    const h = harness();
    const times: number[] = [];
    now = () => h.clock.now();
    mockSequence(
      [
        { status: 429, body: { code: 44, message: 'blocked' } },
        { status: 200, body: ok },
        { status: 200, body: ok },
      ],
      times,
    );
    const first = h.client.get({ family: 'books', organizationId: '1', path: '/users' });
    await h.idle();
    expect(h.events.map((e) => e.outcome)).toEqual(['rate_limited']);
    const second = h.client.get({ family: 'books', organizationId: '1', path: '/users' });
    await h.run(Promise.all([first, second]));
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(60_000);
    expect(times[2]! - times[0]!).toBeGreaterThanOrEqual(60_000);
  });

  it('keeps backoff under the 30 s cap and stops after max_retries', async () => {
    const h = harness({ maxRetries: 6, random: () => 0.999999 });
    const times: number[] = [];
    now = () => h.clock.now();
    mockSequence(
      Array.from({ length: 7 }, () => ({ status: 500, body: { code: 1000, message: 'internal' } })),
      times,
    );
    const e = await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(RetriableError);
    expect(times).toHaveLength(7);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    // 500·2^n with full jitter near its ceiling: 0.5, 1, 2, 4, 8, 16 s (capped at 30 s).
    gaps.forEach((g, i) => {
      expect(g).toBeLessThanOrEqual(Math.min(30_000, 500 * 2 ** i) + 100);
      expect(g).toBeGreaterThanOrEqual(Math.min(30_000, 500 * 2 ** i) - 100);
    });
    expect(h.client.stats().retries).toBe(6);
  });

  it('retries a request that times out, measured on the injected clock', async () => {
    let calls = 0;
    const hanging: typeof fetch = async (input, init) => {
      calls++;
      if ((input instanceof Request ? input.url : input.toString()).includes('/oauth/'))
        return new Response(JSON.stringify(tokenReply()), { status: 200 });
      if (calls === 2) {
        return new Promise<Response>((_resolve, reject) => {
          init?.signal?.addEventListener('abort', () => reject(init.signal!.reason));
        });
      }
      return new Response(JSON.stringify(ok), { status: 200 });
    };
    const h = harness({ fetch: hanging, timeoutMs: 5_000 });
    const p = h.client.get({ family: 'books', organizationId: '1', path: '/users' });
    await h.run(p);
    expect(calls).toBe(3);
    expect(h.events.map((e) => e.outcome)).toEqual(['retried', 'ok']);
    expect(h.events[0]!.durationMs).toBe(5_000);
    expect(h.log.records.some((r) => r['reason'] === 'timeout')).toBe(true);
  });

  it('stops promptly when the caller aborts during a backoff, without counting a failure', async () => {
    const h = harness();
    now = () => h.clock.now();
    mockSequence([{ status: 503, body: 'busy', headers: { 'Retry-After': '120' } }]);
    const controller = new AbortController();
    const p = h.client.get({ family: 'books', organizationId: '1', path: '/users', signal: controller.signal });
    const caught = p.catch((x: unknown) => x);
    await h.run(h.client.connect());
    await h.clock.advance(1_000);
    await h.idle();
    controller.abort(new Error('shutting down'));
    const e = await caught;
    expect((e as Error).message).toBe('shutting down');
    expect(h.client.stats().failures).toBe(0);
  });
});

describe('an API address that is not http or https', () => {
  beforeEach(() => setupNock());
  afterEach(() => {
    nock.cleanAll();
    teardownNock();
  });

  it('fails at once with the address in the message and where it comes from in the hint', async () => {
    nock(ACCOUNTS)
      .post('/oauth/v2/token')
      .reply(200, tokenReply(undefined, 3600, 'ftp://files.example.test'))
      .persist();
    const h = harness({ maxRetries: 3 });
    const e = (await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((x: unknown) => x)) as ConfigError;
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.message).toContain('cannot request ftp://files.example.test/books/v3/users?organization_id=1');
    expect(e.hint).toMatch(/api_url/);
    expect(h.client.stats()).toMatchObject({ requests: 1, retries: 0, failures: 1 });
  });
});

describe('429 code 45', () => {
  beforeEach(() => {
    setupNock();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply()).persist();
  });
  afterEach(() => {
    nock.cleanAll();
    teardownNock();
  });

  it('blocks the organization until its quota resets and says when it can continue', async () => {
    const h = harness({ connection: { quota_reset_time_zone: 'America/New_York' } });
    nock(API).get('/inventory/v1/salesorders').query(true).reply(429, { code: 45, message: 'daily limit exceeded' });
    const e = (await h
      .run(h.client.get({ family: 'inventory', organizationId: '1', path: '/salesorders' }))
      .catch((x: unknown) => x)) as QuotaExhaustedError;
    expect(e).toBeInstanceOf(QuotaExhaustedError);
    // 10:00 UTC on 15 Jan is 05:00 in New York; its next midnight is 05:00 UTC on 16 Jan.
    expect(e.resumeAt.toISOString()).toBe('2026-01-16T05:00:00.000Z');
    expect(e.message).toContain('continue at 2026-01-16T05:00:00.000Z');
    expect(e.hint).toContain('midnight America/New_York');
    expect(e.hint).toContain('other integrations');

    // Another family, same organization: fails fast, no HTTP request (none is mocked).
    const requestsBefore = h.client.stats().requests;
    const again = (await h.client
      .get({ family: 'billing', organizationId: '1', path: '/plans' })
      .catch((x: unknown) => x)) as QuotaExhaustedError;
    expect(again).toBeInstanceOf(QuotaExhaustedError);
    expect(again.resumeAt.toISOString()).toBe('2026-01-16T05:00:00.000Z');
    expect(h.client.stats().requests).toBe(requestsBefore);

    // Another organization is not affected.
    nock(API).get('/inventory/v1/salesorders').query({ organization_id: '2' }).reply(200, { code: 0, salesorders: [] });
    await h.run(h.client.get({ family: 'inventory', organizationId: '2', path: '/salesorders' }));

    // After the reset the organization is reachable again.
    await h.clock.advanceTo(Date.UTC(2026, 0, 16, 5, 0, 1));
    nock(API).get('/inventory/v1/salesorders').query({ organization_id: '1' }).reply(200, { code: 0, salesorders: [] });
    await h.run(h.client.get({ family: 'inventory', organizationId: '1', path: '/salesorders' }));
  });

  it('keeps the block across a restart (new registry over the same store)', async () => {
    const first = harness();
    nock(API).get('/books/v3/users').query(true).reply(429, { code: 45, message: 'daily limit exceeded' });
    await first.run(first.client.get({ family: 'books', organizationId: '9', path: '/users' })).catch(() => undefined);
    await first.limiters.flush();
    const second = harness({ store: first.store, clock: first.clock });
    const e = await second.client.get({ family: 'books', organizationId: '9', path: '/users' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(QuotaExhaustedError);
    expect(second.client.stats().requests).toBe(0);
  });
});

describe('exact identifiers', () => {
  beforeEach(() => {
    setupNock();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply());
  });
  afterEach(teardownNock);

  it('returns an id too large for a double exactly, as its digits', async () => {
    const h = harness();
    nock(API)
      .get('/inventory/v1/salesorders')
      .query(true)
      .reply(200, '{"code":0,"message":"success","salesorders":[{"salesorder_id":4600000000123456789,"total":12.5}]}', {
        'Content-Type': 'application/json',
      });
    const body = await h.run(h.client.get({ family: 'inventory', organizationId: '1', path: '/salesorders' }));
    const orders = body['salesorders'] as Array<Record<string, unknown>>;
    expect(orders[0]!['salesorder_id']).toBe('4600000000123456789');
    expect(orders[0]!['total']).toBe(12.5);
  });
});

describe('beforeParse (an answer known by its bytes, src/extractors/page-memo.ts)', () => {
  beforeEach(() => {
    setupNock();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply());
  });
  afterEach(teardownNock);

  it('sees the bytes of a success, and the body it returns stands for the answer, neither decoded nor parsed', async () => {
    const h = harness();
    const text = '{"code":0,"message":"success","users":[{"user_id":"u1","name":"Zoë 😀"}]} trailing text no JSON parser takes';
    const sent = Buffer.from(text);
    nock(API).get(USERS).query({ organization_id: '1' }).reply(200, sent);
    const seen: string[] = [];
    const standIn = { code: 0, users: [] };
    const body = await h.run(
      h.client.get({
        family: 'books',
        organizationId: '1',
        path: '/users',
        beforeParse: (bytes) => {
          seen.push(Buffer.from(bytes).toString('hex'));
          return standIn;
        },
      }),
    );
    expect(body).toBe(standIn);
    expect(seen).toEqual([sent.toString('hex')]);
  });

  it('decodes and parses as usual when it returns nothing, and never sees an error answer', async () => {
    const h = harness();
    mockSequence([
      { status: 500, body: { code: 1, message: 'internal error' } },
      { status: 200, body: ok },
    ]);
    const seen: string[] = [];
    const body = await h.run(
      h.client.get({
        family: 'books',
        organizationId: '1',
        path: '/users',
        beforeParse: (bytes) => {
          seen.push(Buffer.from(bytes).toString('utf8'));
          return undefined;
        },
      }),
    );
    expect(body).toEqual(ok);
    expect(seen).toEqual([JSON.stringify(ok)]);
  });
});

describe('rate-limit headers (rule: they feed the daily budget and nothing else)', () => {
  beforeEach(() => {
    setupNock();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply()).persist();
  });
  afterEach(() => {
    nock.cleanAll();
    teardownNock();
  });

  // X-Rate-Limit-Reset counts the seconds to the daily reset; the server sends it on every answer.
  const daily = { 'X-Rate-Limit-Limit': '1000', 'X-Rate-Limit-Remaining': '990', 'X-Rate-Limit-Reset': '300414' };

  it.each([
    ['a 500 code 1000', { status: 500, body: { code: 1000, message: 'internal error' }, headers: daily }],
    ['a 502 without a body', { status: 502, body: '<html>bad gateway</html>', headers: daily }],
    ['a 200 cut short', { status: 200, body: '{"code":0,"users":[{"user_', headers: daily }],
  ])('retries %s after a jittered backoff of seconds, not the daily reset', async (_name, reply) => {
    const h = harness({ random: () => 0.99 });
    const times: number[] = [];
    now = () => h.clock.now();
    mockSequence([reply, { status: 200, body: ok, headers: daily }], times);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(times[1]! - times[0]!).toBeLessThan(1_000);
  });

  it('waits what Retry-After asks on a 503', async () => {
    const h = harness();
    const times: number[] = [];
    now = () => h.clock.now();
    mockSequence(
      [
        { status: 503, body: { code: 1000, message: 'busy' }, headers: { 'Retry-After': '9', ...daily } },
        { status: 200, body: ok },
      ],
      times,
    );
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(9_000);
    expect(times[1]! - times[0]!).toBeLessThan(10_500);
  });

  it("adopts the server's lower remaining figure when another integration spent the quota, and stops at the budget", async () => {
    const h = harness();
    mockSequence([
      { status: 200, body: ok, headers: { 'X-Rate-Limit-Limit': '1000', 'X-Rate-Limit-Remaining': '150', 'X-Rate-Limit-Reset': '3600' } },
    ]);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    const limiter = await h.client.limitsFor('1');
    // 850 used by the server's count, against svcsync's own 1: the higher wins.
    expect(limiter.usedToday()).toBe(850);
    expect(limiter.remainingToday()).toBe(50);
  });

  it('keeps its own count when the server reports more left than svcsync counted, and ignores a per-minute Limit', async () => {
    const h = harness();
    mockSequence([
      { status: 200, body: ok, headers: { 'X-Rate-Limit-Limit': '1000', 'X-Rate-Limit-Remaining': '1000' } },
      { status: 200, body: ok, headers: { 'X-Rate-Limit-Limit': '100', 'X-Rate-Limit-Remaining': '2' } },
    ]);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect((await h.client.limitsFor('1')).usedToday()).toBe(2);
  });

  it('lowers the budget to a daily quota the server reports below the configured plan', async () => {
    const h = harness({ connection: { plan: 'professional' } });
    mockSequence([{ status: 200, body: ok, headers: { 'X-Rate-Limit-Limit': '1000', 'X-Rate-Limit-Remaining': '999' } }]);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect((await h.client.limitsFor('1')).budget()).toBe(900);
    expect(h.log.text).toContain('daily quota of 1000');
  });
});
