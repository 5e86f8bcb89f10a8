import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { refreshAccessToken } from '../../src/api/oauth.js';
import { svcsyncVersion, userAgent } from '../../src/api/user-agent.js';
import { ACCOUNTS, API, harness, SECRETS, setupNock, teardownNock, tokenReply } from './helpers.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
const EXPECTED = `svcsync/${pkg.version} (${hostname()}/${process.pid})`;

describe('userAgent', () => {
  it("names svcsync's version from package.json, the host and the process id", () => {
    expect(svcsyncVersion()).toBe(pkg.version);
    expect(userAgent()).toBe(EXPECTED);
    expect(userAgent('worker-3', 4711, '1.2.3')).toBe('svcsync/1.2.3 (worker-3/4711)');
  });
});

describe('every request identifies the process', () => {
  beforeEach(setupNock);
  afterEach(teardownNock);

  it('sends the User-Agent on the token request and on the API request', async () => {
    const seen: Array<[string, string | string[] | undefined]> = [];
    nock(ACCOUNTS)
      .post('/oauth/v2/token')
      .reply(function () {
        seen.push(['token', this.req.headers['user-agent']]);
        return [200, tokenReply()];
      });
    nock(API)
      .get('/books/v3/users')
      .query(true)
      .reply(function () {
        seen.push(['api', this.req.headers['user-agent']]);
        return [200, { code: 0, message: 'success', users: [] }];
      });
    const h = harness();
    await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' }));
    expect(seen).toEqual([
      ['token', EXPECTED],
      ['api', EXPECTED],
    ]);
  });

  it('sends it on a token call made on its own (auth commands)', async () => {
    nock(ACCOUNTS, { reqheaders: { 'user-agent': EXPECTED } })
      .post('/oauth/v2/token')
      .reply(200, tokenReply());
    const t = await refreshAccessToken({
      accountsUrl: ACCOUNTS,
      clientId: SECRETS.clientId,
      clientSecret: SECRETS.clientSecret,
      refreshToken: SECRETS.refreshToken,
    });
    expect(t.access_token).toBe(SECRETS.accessToken);
  });
});
