import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exchangeGrantCode, refreshAccessToken, resolveAccountsUrl, revokeToken } from '../../src/api/oauth.js';
import { AuthorizationError, ConfigError, exitCodeFor, ExitCode, RetriableError } from '../../src/core/errors.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { ACCOUNTS, API, SECRETS, harness, setupNock, teardownNock, tokenReply } from './helpers.js';

const refreshReq = {
  accountsUrl: ACCOUNTS,
  clientId: SECRETS.clientId,
  clientSecret: SECRETS.clientSecret,
  refreshToken: SECRETS.refreshToken,
};
const exchangeReq = { accountsUrl: ACCOUNTS, clientId: SECRETS.clientId, clientSecret: SECRETS.clientSecret, code: SECRETS.grantCode };

function leaks(text: string): string[] {
  return Object.values(SECRETS).filter((s) => text.includes(s));
}

describe('authorization server', () => {
  beforeEach(setupNock);
  afterEach(teardownNock);

  describe('OAuth error identifiers become authorization errors that say what to check', () => {
    const table: Array<[string, RegExp]> = [
      ['invalid_client', /client id is wrong or was registered in another data center.*region \/ accounts_url/],
      ['invalid_client_secret', /secret is wrong, has whitespace around it, or belongs to another data center/],
      ['invalid_code', /already used, expired \(grant codes live 60–120 s\) or was revoked: generate a new one/],
      ['invalid_redirect_uri', /redirect_uri differs from the one registered/],
    ];
    for (const status of [200, 400]) {
      for (const [identifier, hint] of table) {
        it(`${identifier} (HTTP ${status})`, async () => {
          nock(ACCOUNTS).post('/oauth/v2/token').reply(status, { error: identifier });
          nock(ACCOUNTS).post('/oauth/v2/token').reply(status, { error: identifier });
          for (const call of [() => refreshAccessToken(refreshReq), () => exchangeGrantCode(exchangeReq)]) {
            const e = (await call().catch((x: unknown) => x)) as AuthorizationError;
            expect(e).toBeInstanceOf(AuthorizationError);
            expect(exitCodeFor(e)).toBe(ExitCode.authorization);
            expect(e.message).toContain(identifier);
            expect(e.hint).toMatch(hint);
            expect(leaks(e.describe())).toEqual([]);
            // Refused by the authorization server: the credentials, never a scope (`svcsync check` tells them apart).
            expect(e.byAuthorizationServer).toBe(true);
            expect(e.scope).toBeUndefined();
          }
        });
      }
    }
  });

  it('an unknown identifier still says what to check', async () => {
    nock(ACCOUNTS).post('/oauth/v2/token').reply(400, { error: 'access_denied' });
    const e = (await refreshAccessToken(refreshReq).catch((x: unknown) => x)) as AuthorizationError;
    expect(e).toBeInstanceOf(AuthorizationError);
    expect(e.hint).toMatch(/client id, secret, refresh token and region/);
  });

  it('a failing authorization server is retriable, not an authorization error', async () => {
    nock(ACCOUNTS).post('/oauth/v2/token').reply(502, '<html>bad gateway</html>');
    await expect(refreshAccessToken(refreshReq)).rejects.toBeInstanceOf(RetriableError);
  });

  it('exchanges a grant code with form fields and registers every secret it sees', async () => {
    let form: Record<string, string> = {};
    nock(ACCOUNTS)
      .post('/oauth/v2/token', (b: Record<string, string>) => {
        form = b;
        return true;
      })
      .reply(200, { ...tokenReply(), refresh_token: SECRETS.refreshToken, scope: 'SvcBooks.settings.READ' });
    const secrets = new SecretRegistry();
    const out = await exchangeGrantCode({ ...exchangeReq, redirectUri: 'https://example.test/cb', secrets });
    expect(form).toEqual({
      grant_type: 'authorization_code',
      code: SECRETS.grantCode,
      client_id: SECRETS.clientId,
      client_secret: SECRETS.clientSecret,
      redirect_uri: 'https://example.test/cb',
    });
    expect(out).toEqual({
      refresh_token: SECRETS.refreshToken,
      access_token: SECRETS.accessToken,
      api_domain: API,
      expires_in: 3600,
      scope: 'SvcBooks.settings.READ',
    });
    const scrubbed = secrets.scrub(`${SECRETS.grantCode} ${SECRETS.clientSecret} ${SECRETS.refreshToken} ${SECRETS.accessToken}`);
    expect(leaks(scrubbed)).toEqual([]);
  });

  it('an exchange without a refresh token says the grant lacked offline access', async () => {
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply());
    await expect(exchangeGrantCode(exchangeReq)).rejects.toThrow(/no refresh_token/);
  });

  it('revokes with the token as a form field; any 2xx counts, the body is ignored', async () => {
    let form: Record<string, string> = {};
    nock(ACCOUNTS)
      .post('/oauth/v2/token/revoke', (b: Record<string, string>) => {
        form = b;
        return true;
      })
      .reply(200, 'ok, not JSON');
    await revokeToken({ accountsUrl: ACCOUNTS, token: SECRETS.refreshToken });
    expect(form).toEqual({ token: SECRETS.refreshToken });
    nock(ACCOUNTS).post('/oauth/v2/token/revoke').reply(400, { error: 'invalid_code' });
    const e = (await revokeToken({ accountsUrl: ACCOUNTS, token: SECRETS.refreshToken }).catch((x: unknown) => x)) as AuthorizationError;
    expect(e).toBeInstanceOf(AuthorizationError);
    expect(leaks(e.describe())).toEqual([]);
  });

  it('the client surfaces invalid_client at once, without retrying the API', async () => {
    const h = harness();
    const token = nock(ACCOUNTS).post('/oauth/v2/token').once().reply(400, { error: 'invalid_client' });
    const e = await h.run(h.client.get({ family: 'books', organizationId: '1', path: '/users' })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AuthorizationError);
    expect(token.isDone()).toBe(true);
    expect(h.client.stats().requests).toBe(0);
  });
});

describe('resolveAccountsUrl', () => {
  it('prefers the connection, then the config regions, then the built-in table', () => {
    expect(resolveAccountsUrl({ region: 'eu', accounts_url: 'http://127.0.0.1:4010/' })).toBe('http://127.0.0.1:4010');
    expect(resolveAccountsUrl({ region: 'eu' }, { eu: 'https://accounts.proxy.test' })).toBe('https://accounts.proxy.test');
    expect(resolveAccountsUrl({ region: 'eu' })).toBe('https://accounts.svc.eu');
    expect(resolveAccountsUrl({ region: 'ca' })).toBe('https://accounts.svccloud.ca');
  });

  it.each(['cn', 'sa'] as const)('region %s without accounts_url is a configuration error', (region) => {
    const e = (() => {
      try {
        resolveAccountsUrl({ region }, undefined, 2);
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as ConfigError).message).toBe(
      `connections[2].accounts_url: region ${region} has no known authorization server ` +
        '(docs/api.md §1, docs/assumptions.md A1); set accounts_url',
    );
  });
});
