import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuthorizationError, exitCodeFor, ExitCode } from '../../src/core/errors.js';
import { TokenCacheRegistry } from '../../src/api/client.js';
import { FakeClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { ACCOUNTS, API, SECRETS, connection, harness, setupNock, teardownNock, tokenReply } from './helpers.js';

const ok = { code: 0, message: 'success', users: [] };

describe('access token', () => {
  beforeEach(setupNock);
  afterEach(teardownNock);

  it('is fetched once for 20 concurrent calls and reused afterwards', async () => {
    const h = harness();
    const token = nock(ACCOUNTS).post('/oauth/v2/token').once().reply(200, tokenReply());
    const api = nock(API).get('/books/v3/users').query(true).times(21).reply(200, ok);
    const calls = Array.from({ length: 20 }, () => h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    await h.run(Promise.all(calls));
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(token.isDone()).toBe(true);
    expect(api.isDone()).toBe(true);
    expect(h.events).toHaveLength(21);
  });

  it('sends the refresh_token grant as form fields, redirect_uri only when configured', async () => {
    const bodies: string[] = [];
    nock(ACCOUNTS)
      .post('/oauth/v2/token', (b: Record<string, string>) => {
        bodies.push(JSON.stringify(b));
        return true;
      })
      .times(2)
      .reply(200, tokenReply());
    nock(API).get('/books/v3/users').query(true).times(2).reply(200, ok);
    const a = harness();
    await a.run(a.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    const b = harness({ connection: { redirect_uri: 'https://example.test/cb' } });
    await b.run(b.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    const [first, second] = bodies.map((s) => JSON.parse(s) as Record<string, string>);
    expect(first).toEqual({
      grant_type: 'refresh_token',
      refresh_token: SECRETS.refreshToken,
      client_id: SECRETS.clientId,
      client_secret: SECRETS.clientSecret,
    });
    expect(second?.['redirect_uri']).toBe('https://example.test/cb');
  });

  it.each([
    ['expires_in in seconds', tokenReply(SECRETS.accessToken, 3600)],
    [
      'expires_in in milliseconds with expires_in_sec (A40)',
      { ...tokenReply(SECRETS.accessToken), expires_in: 3_600_000, expires_in_sec: 3600 },
    ],
    ['expires_in in milliseconds alone, read as at most an hour (A40)', { ...tokenReply(SECRETS.accessToken), expires_in: 3_600_000 }],
    ['no expires_in, the spec\u2019s hour', { access_token: SECRETS.accessToken, api_domain: API, token_type: 'Bearer' }],
  ])('is refreshed shortly before the hour is out, not after, when the answer has %s', async (_label, reply) => {
    const h = harness();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, reply);
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply(SECRETS.accessToken2, 3600));
    const seen: string[] = [];
    nock(API)
      .get('/books/v3/users')
      .query(true)
      .times(3)
      .reply(function () {
        seen.push(String(this.req.headers['authorization']));
        return [200, ok];
      });
    const call = () => h.client.get({ family: 'books', organizationId: '1', path: '/users' });
    await h.run(call());
    // 54 minutes in: 6 minutes left, more than the 5-minute margin — same token.
    await h.clock.advance(54 * 60_000);
    await h.run(call());
    // 56 minutes in: inside the margin — a new token before the old one expires.
    await h.clock.advance(2 * 60_000);
    await h.run(call());
    expect(seen).toEqual([
      `Svc-oauthtoken ${SECRETS.accessToken}`,
      `Svc-oauthtoken ${SECRETS.accessToken}`,
      `Svc-oauthtoken ${SECRETS.accessToken2}`,
    ]);
  });

  it('prefers expires_in_sec to expires_in: a 10-second token is not kept for 10,000 seconds', async () => {
    const h = harness();
    nock(ACCOUNTS)
      .post('/oauth/v2/token')
      .reply(200, { ...tokenReply(SECRETS.accessToken), expires_in: 10_000, expires_in_sec: 10 });
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply(SECRETS.accessToken2, 3600));
    const api = nock(API).get('/books/v3/users').query(true).times(2).reply(200, ok);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    await h.clock.advance(6_000);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(api.isDone()).toBe(true);
    expect(nock.pendingMocks()).toEqual([]);
  });

  it('takes a bare api_domain host as https', async () => {
    const h = harness();
    nock(ACCOUNTS)
      .post('/oauth/v2/token')
      .reply(200, tokenReply(SECRETS.accessToken, 3600, 'eu-api.example.test'));
    const api = nock('https://eu-api.example.test').get('/books/v3/users').query(true).reply(200, ok);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(api.isDone()).toBe(true);
  });

  it('uses a short-lived token for at least half its lifetime', async () => {
    const h = harness();
    const tokens = nock(ACCOUNTS).post('/oauth/v2/token').once().reply(200, tokenReply(SECRETS.accessToken, 10));
    nock(API).get('/books/v3/users').query(true).times(2).reply(200, ok);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }), 1);
    await h.clock.advance(4_000);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }), 1);
    expect(tokens.isDone()).toBe(true);
  });

  it('takes the API host from api_domain', async () => {
    const h = harness();
    nock(ACCOUNTS)
      .post('/oauth/v2/token')
      .reply(200, tokenReply(SECRETS.accessToken, 3600, 'https://eu-api.example.test'));
    const api = nock('https://eu-api.example.test').get('/inventory/v1/salesorders').query({ organization_id: '7' }).reply(200, ok);
    await h.run(h.client.get({ family: 'inventory', organizationId: '7', path: '/salesorders' }));
    expect(api.isDone()).toBe(true);
  });

  it('lets connection.api_url override api_domain', async () => {
    const h = harness({ connection: { api_url: 'http://proxy.example.test:8080' } });
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply());
    const api = nock('http://proxy.example.test:8080').get('/books/v3/users').query(true).reply(200, ok);
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(api.isDone()).toBe(true);
  });

  it('refreshes once on a 401 and retries with the new token', async () => {
    const h = harness();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply(SECRETS.accessToken));
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply(SECRETS.accessToken2));
    nock(API)
      .get('/books/v3/users')
      .query(true)
      .matchHeader('authorization', `Svc-oauthtoken ${SECRETS.accessToken}`)
      .reply(401, { code: 57, message: 'You are not authorized to perform this operation' });
    nock(API).get('/books/v3/users').query(true).matchHeader('authorization', `Svc-oauthtoken ${SECRETS.accessToken2}`).reply(200, ok);
    const body = await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(body['code']).toBe(0);
    expect(h.events.map((e) => e.outcome)).toEqual(['retried', 'ok']);
    expect(h.client.stats().failures).toBe(0);
  });

  it('surfaces the fourth 401 code 57 in a row, on a scope that never worked, as that scope missing (exit code 3)', async () => {
    const h = harness();
    const tokens = nock(ACCOUNTS).post('/oauth/v2/token').times(4).reply(200, tokenReply());
    nock(API).get('/inventory/v1/salesorders').query(true).times(4).reply(401, { code: 57, message: 'not authorized' });
    const err = await h.run(h.client.get({ family: 'inventory', organizationId: '1', path: '/salesorders' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthorizationError);
    expect((err as AuthorizationError).kind).toBe('authorization');
    expect(exitCodeFor(err)).toBe(ExitCode.authorization);
    expect((err as AuthorizationError).reach).toBe('family');
    expect((err as AuthorizationError).scope).toBe('SvcInventory.salesorders.READ');
    expect((err as AuthorizationError).message).toContain('needs scope SvcInventory.salesorders.READ; refused 4 times in a row');
    expect((err as AuthorizationError).hint).toContain('SvcInventory.salesorders.READ');
    // The bound's cost: four requests and four tokens (the first, then one per refusal but the last).
    expect(tokens.isDone()).toBe(true);
    expect(h.events.map((e) => e.outcome)).toEqual(['retried', 'retried', 'retried', 'failed']);
  });

  it('refreshes once when ten concurrent requests are refused with the same token', async () => {
    // A paid plan allows ten in flight, so all ten go out with the first token.
    const h = harness({ connection: { plan: 'standard' } });
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply(SECRETS.accessToken));
    const second = nock(ACCOUNTS).post('/oauth/v2/token').once().reply(200, tokenReply(SECRETS.accessToken2));
    nock(API)
      .get('/books/v3/users')
      .query(true)
      .matchHeader('authorization', `Svc-oauthtoken ${SECRETS.accessToken}`)
      .times(10)
      .reply(401, { code: 57, message: 'not authorized' });
    nock(API)
      .get('/books/v3/users')
      .query(true)
      .matchHeader('authorization', `Svc-oauthtoken ${SECRETS.accessToken2}`)
      .times(10)
      .reply(200, ok);
    // Let the first token arrive so all ten go out with it.
    await h.run(h.client.connect());
    const calls = Array.from({ length: 10 }, () => h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    await h.run(Promise.all(calls));
    expect(second.isDone()).toBe(true);
  });
});

describe('401s for a valid token (rule: transient after a refresh that succeeded)', () => {
  beforeEach(setupNock);
  afterEach(teardownNock);

  it('retries through three 401s in a row, each on a freshly refreshed token, with a backoff after the first', async () => {
    const h = harness();
    const times: number[] = [];
    nock(ACCOUNTS).post('/oauth/v2/token').times(4).reply(200, tokenReply());
    nock(API)
      .get('/books/v3/users')
      .query(true)
      .times(3)
      .reply(() => {
        times.push(h.clock.now());
        return [401, { code: 14, message: 'Invalid OAuth token' }];
      });
    nock(API)
      .get('/books/v3/users')
      .query(true)
      .reply(() => {
        times.push(h.clock.now());
        return [200, ok];
      });
    const body = await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(body['code']).toBe(0);
    expect(h.events.map((e) => e.outcome)).toEqual(['retried', 'retried', 'retried', 'ok']);
    // The first refusal refreshes at once; the later ones, on fresh tokens, back off first.
    expect(times[1]! - times[0]!).toBe(0);
    expect(times[2]! - times[1]!).toBeGreaterThan(0);
    expect(h.client.stats().failures).toBe(0);
  });

  it('gives up after four 401s in a row on fresh tokens, with one message for the whole connection', async () => {
    const h = harness();
    nock(ACCOUNTS).post('/oauth/v2/token').times(4).reply(200, tokenReply());
    nock(API).get('/books/v3/users').query(true).times(4).reply(401, { code: 14, message: 'Invalid OAuth token' });
    const err = await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthorizationError);
    expect((err as AuthorizationError).reach).toBe('connection');
    expect((err as AuthorizationError).message).toContain('refused 4 times in a row');
    expect(exitCodeFor(err)).toBe(ExitCode.authorization);
  });

  it('fails at once, without an API request, when the refresh itself is refused', async () => {
    const h = harness();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(400, { error: 'invalid_client' });
    const api = nock(API).get('/books/v3/users').query(true).reply(200, ok);
    const err = await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthorizationError);
    expect((err as AuthorizationError).reach).toBe('connection');
    expect(api.isDone()).toBe(false);
    nock.cleanAll();
  });

  it('reads 401 code 57 on a fresh token as a refused token: an expired or revoked token answered 57 is refreshed and read', async () => {
    const h = harness();
    nock(ACCOUNTS).post('/oauth/v2/token').times(3).reply(200, tokenReply());
    nock(API).get('/inventory/v1/contacts').query(true).times(2).reply(401, { code: 57, message: 'invalid or expired OAuth token' });
    nock(API).get('/inventory/v1/contacts').query(true).reply(200, { code: 0, contacts: [] });
    const body = await h.run(h.client.get({ family: 'inventory', organizationId: '1', path: '/contacts' }));
    expect(body['code']).toBe(0);
    expect(h.events.map((e) => e.outcome)).toEqual(['retried', 'retried', 'ok']);
    const refused = h.log.records.filter((r) => r['msg'] === 'access token refused; refreshing it and retrying');
    expect(refused.map((r) => [r['code'], r['in_a_row']])).toEqual([
      [57, 1],
      [57, 2],
    ]);
  });

  it('never judges missing a scope that has worked: four 401 code 57 in a row then stop the connection', async () => {
    const h = harness();
    nock(ACCOUNTS).post('/oauth/v2/token').times(4).reply(200, tokenReply());
    // A contact person's list needs the contacts scope too.
    nock(API).get('/inventory/v1/contacts').query(true).reply(200, { code: 0, contacts: [] });
    nock(API)
      .get('/inventory/v1/contacts/9/contactpersons')
      .query(true)
      .times(4)
      .reply(401, { code: 57, message: 'invalid or expired OAuth token' });
    await h.run(h.client.get({ family: 'inventory', organizationId: '1', path: '/contacts' }));
    const err = await h
      .run(h.client.get({ family: 'inventory', organizationId: '1', path: '/contacts/9/contactpersons' }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthorizationError);
    expect((err as AuthorizationError).reach).toBe('connection');
    expect((err as AuthorizationError).scope).toBeUndefined();
    expect((err as AuthorizationError).message).toContain('scope SvcInventory.contacts.READ has worked for this connection');
    expect((err as AuthorizationError).hint).toContain('refresh token is still valid');
  });

  it('keeps the scopes that worked with the refresh token: shared by clients of one registry, not by a new refresh token', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 15, 10, 0, 0));
    const secrets = new SecretRegistry();
    const registry = new TokenCacheRegistry({ clock, secrets, logger: createLogger({ level: 'silent', secrets }), timeoutMs: 60_000 });
    // One token for the first run, three refreshes for the later one, a token and three refreshes under the new refresh token.
    nock(ACCOUNTS).post('/oauth/v2/token').times(8).reply(200, tokenReply());
    nock(API).get('/books/v3/users').query(true).reply(200, ok);
    const refused = nock(API)
      .get('/books/v3/users')
      .query(true)
      .times(8)
      .reply(401, { code: 57, message: 'invalid or expired OAuth token' });
    const first = harness({ clock, tokens: registry.for(connection(), 0) });
    await first.run(first.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    // A later run of the same process (a daemon's next job): the scope has worked, so a token refused throughout is the token.
    const later = harness({ clock, tokens: registry.for(connection(), 0) });
    const a = await later.run(later.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((e: unknown) => e);
    expect((a as AuthorizationError).reach).toBe('connection');
    // A new refresh token may carry other scopes: nothing has worked with it yet.
    const renewed = harness({ clock, tokens: registry.for(connection({ refresh_token: '1000.refresh-token-renewed' }), 0) });
    const b = await renewed.run(renewed.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((e: unknown) => e);
    expect((b as AuthorizationError).reach).toBe('family');
    expect((b as AuthorizationError).scope).toBe('SvcBooks.settings.READ');
    expect(refused.isDone()).toBe(true);
  });
});
