import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exchangeGrantCode } from '../../src/api/oauth.js';
import { SvcsyncError } from '../../src/core/errors.js';
import { ACCOUNTS, API, SECRETS, harness, setupNock, teardownNock, tokenReply } from './helpers.js';

function leaks(text: string): string[] {
  return Object.entries(SECRETS)
    .filter(([, v]) => text.includes(v))
    .map(([k]) => k);
}

describe('secrets never reach a log line or an error message', () => {
  beforeEach(setupNock);
  afterEach(teardownNock);

  it('across refreshes, retries, 401s, refusals and quota errors (logging at debug, without scrubbing)', async () => {
    // The logger's own registry is empty: a secret in the output would show, so none may be written at all.
    const h = harness({ unscrubbedLog: true });
    const errors: unknown[] = [];
    const call = (family: 'books' | 'inventory' | 'invoice' | 'billing', org: string, path: string) =>
      h.run(h.client.get({ family, organizationId: org, path })).catch((e: unknown) => void errors.push(e));

    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply(SECRETS.accessToken));
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply(SECRETS.accessToken2));
    nock(API)
      .get('/books/v3/users')
      .query(true)
      .reply(401, { code: 57, message: 'not authorized' })
      .get('/books/v3/users')
      .query(true)
      .reply(500, { code: 1000, message: `internal error for Svc-oauthtoken ${SECRETS.accessToken2}` })
      .get('/books/v3/users')
      .query(true)
      .replyWithError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))
      .get('/books/v3/users')
      .query(true)
      .reply(200, { code: 0, users: [] })
      .get('/inventory/v1/salesorders/1')
      .query(true)
      .reply(404, { code: 1002, message: 'Sales order does not exist' })
      .get('/invoice/v3/projects')
      .query(true)
      .reply(400, { code: 2, message: `bad value ${SECRETS.refreshToken}` })
      .get('/billing/v1/plans')
      .reply(429, { code: 45, message: 'daily limit exceeded' });
    await call('books', '1', '/users');
    await call('inventory', '1', '/salesorders/1');
    await call('invoice', '2', '/projects');
    await call('billing', '3', '/plans');

    // A connection whose credentials are refused, and a grant code exchange that fails.
    const bad = harness({ unscrubbedLog: true });
    nock(ACCOUNTS).post('/oauth/v2/token').reply(400, { error: 'invalid_client_secret' });
    await bad.run(bad.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((e: unknown) => void errors.push(e));
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, { error: 'invalid_code' });
    await exchangeGrantCode({
      accountsUrl: ACCOUNTS,
      clientId: SECRETS.clientId,
      clientSecret: SECRETS.clientSecret,
      code: SECRETS.grantCode,
    }).catch((e: unknown) => void errors.push(e));

    expect(errors).toHaveLength(5);
    for (const e of errors) {
      expect(e).toBeInstanceOf(SvcsyncError);
      const err = e as SvcsyncError;
      expect(leaks(`${err.describe()} ${err.request ?? ''} ${JSON.stringify(err)}`)).toEqual([]);
    }

    const lines = [...h.log.lines, ...bad.log.lines];
    // The log is not empty: one debug line per request, warnings for the retries.
    expect(h.log.records.filter((r) => r['msg'] === 'request').length).toBeGreaterThanOrEqual(6);
    expect(h.log.records.filter((r) => r['level'] === 'warn').length).toBeGreaterThanOrEqual(3);
    expect(h.log.records.find((r) => r['msg'] === 'request' && r['status'] === 404)).toMatchObject({
      family: 'inventory',
      organization_id: '1',
      connection: 'acme',
      path: '/inventory/v1/salesorders/1?organization_id=1',
      method: 'GET',
    });
    for (const line of lines) expect(leaks(line)).toEqual([]);
  });
});
