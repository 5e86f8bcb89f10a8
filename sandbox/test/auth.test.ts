import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../index.js';
import { orgRequest, tokenFor } from './sandbox-client.js';

let sb: Sandbox | undefined;
afterEach(async () => {
  await sb?.stop();
  sb = undefined;
});

async function post(s: Sandbox, path: string, fields: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${s.accountsUrl}${path}`, { method: 'POST', body: new URLSearchParams(fields) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const usersOf = (s: Sandbox, token: string): Promise<Response> =>
  orgRequest(s, 'books', '/users', s.organizations()[0]!.organization_id, token);

describe('authorization', () => {
  it('answers the refresh grant with a Bearer access token and api_domain pointing at itself', async () => {
    sb = await startSandbox({ tokenExpiresIn: 120 });
    const { status, body } = await post(sb, '/oauth/v2/token', { grant_type: 'refresh_token', ...sb.credentials });
    expect(status).toBe(200);
    expect(body).toMatchObject({ api_domain: sb.url, token_type: 'Bearer', expires_in: 120 });
    expect(body['refresh_token']).toBeUndefined();
    expect((await usersOf(sb, String(body['access_token']))).status).toBe(200);
  });

  it('variant tokenLifetimeMillis: expires_in in milliseconds, the seconds in expires_in_sec, on both grants', async () => {
    sb = await startSandbox({ tokenExpiresIn: 120, variants: { tokenLifetimeMillis: true } });
    const refreshed = await post(sb, '/oauth/v2/token', { grant_type: 'refresh_token', ...sb.credentials });
    expect(refreshed.body).toMatchObject({ expires_in: 120_000, expires_in_sec: 120 });
    const code = sb.issueGrantCode();
    const { client_id, client_secret, redirect_uri } = sb.credentials;
    const exchanged = await post(sb, '/oauth/v2/token', { grant_type: 'authorization_code', code, client_id, client_secret, redirect_uri });
    expect(exchanged.body).toMatchObject({ expires_in: 120_000, expires_in_sec: 120 });
    expect((await usersOf(sb, String(exchanged.body['access_token']))).status).toBe(200);
  });

  it('refuses missing, unknown and query-parameter tokens with 401 code 14', async () => {
    sb = await startSandbox();
    const org = sb.organizations()[0]!.organization_id;
    const token = await tokenFor(sb);
    const noHeader = await fetch(`${sb.url}/books/v3/users?organization_id=${org}`);
    expect(noHeader.status).toBe(401);
    expect(await noHeader.json()).toEqual({ code: 14, message: 'Invalid OAuth token' });
    expect((await usersOf(sb, 'not-a-token')).status).toBe(401);
    const inQuery = await fetch(`${sb.url}/books/v3/users?organization_id=${org}&authtoken=${token}&access_token=${token}`);
    expect(inQuery.status).toBe(401);
    const bearer = await fetch(`${sb.url}/books/v3/users?organization_id=${org}`, { headers: { authorization: `Bearer ${token}` } });
    expect(bearer.status).toBe(401);
  });

  it('expires access tokens after expires_in seconds of sandbox time', async () => {
    sb = await startSandbox({ tokenExpiresIn: 3600 });
    const token = await tokenFor(sb);
    sb.advanceClock(3_599_000);
    expect((await usersOf(sb, token)).status).toBe(200);
    sb.advanceClock(2_000);
    const expired = await usersOf(sb, token);
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as Record<string, unknown>)['code']).toBe(14);
    expect((await usersOf(sb, await tokenFor(sb))).status).toBe(200);
  });

  it('revokes access tokens, and refresh tokens together with their access tokens', async () => {
    sb = await startSandbox();
    const a = await tokenFor(sb);
    const b = await tokenFor(sb);
    expect((await post(sb, '/oauth/v2/token/revoke', { token: a })).status).toBe(200);
    expect((await usersOf(sb, a)).status).toBe(401);
    expect((await usersOf(sb, b)).status).toBe(200);
    expect((await post(sb, '/oauth/v2/token/revoke', { token: sb.credentials.refresh_token })).status).toBe(200);
    expect((await usersOf(sb, b)).status).toBe(401);
    const again = await post(sb, '/oauth/v2/token', { grant_type: 'refresh_token', ...sb.credentials });
    expect(again).toEqual({ status: 400, body: { error: 'invalid_code' } });
    expect(sb.requestLog().token.revoke).toBe(2);
  });

  it('variant refusedTokenCode: unknown, expired and revoked tokens are answered 401 code 57, a missing scope as before', async () => {
    sb = await startSandbox({
      tokenExpiresIn: 60,
      variants: { refusedTokenCode: 57 },
      credentials: { scopes: ['SvcBooks.settings.READ'] },
    });
    const refused = { code: 57, message: 'invalid or expired OAuth token' };
    const answer = async (res: Response): Promise<[number, unknown]> => [res.status, await res.json()];
    const token = await tokenFor(sb);
    expect((await usersOf(sb, token)).status).toBe(200);
    expect(await answer(await usersOf(sb, 'not-a-token'))).toEqual([401, refused]);
    // The same code as a missing scope, with the other message: only the message tells them apart.
    const org = sb.organizations()[0]!.organization_id;
    expect(await answer(await orgRequest(sb, 'inventory', '/contacts', org, token))).toEqual([
      401,
      { code: 57, message: 'You are not authorized to perform this operation' },
    ]);
    const revoked = await tokenFor(sb);
    await post(sb, '/oauth/v2/token/revoke', { token: revoked });
    expect(await answer(await usersOf(sb, revoked))).toEqual([401, refused]);
    sb.advanceClock(61_000);
    expect(await answer(await usersOf(sb, token))).toEqual([401, refused]);
  });

  it('exchanges an authorization code once, for a new refresh token', async () => {
    sb = await startSandbox();
    const { client_id, client_secret, redirect_uri } = sb.credentials;
    const code = sb.issueGrantCode();
    const first = await post(sb, '/oauth/v2/token', { grant_type: 'authorization_code', code, client_id, client_secret, redirect_uri });
    expect(first.status).toBe(200);
    expect(typeof first.body['refresh_token']).toBe('string');
    expect((await usersOf(sb, String(first.body['access_token']))).status).toBe(200);
    const refreshed = await post(sb, '/oauth/v2/token', {
      grant_type: 'refresh_token',
      refresh_token: String(first.body['refresh_token']),
      client_id,
      client_secret,
      redirect_uri,
    });
    expect(refreshed.status).toBe(200);
    const second = await post(sb, '/oauth/v2/token', { grant_type: 'authorization_code', code, client_id, client_secret, redirect_uri });
    expect(second).toEqual({ status: 400, body: { error: 'invalid_code' } });
  });

  it('lets an authorization code expire after 120 s of sandbox time', async () => {
    sb = await startSandbox();
    const { client_id, client_secret, redirect_uri } = sb.credentials;
    const late = sb.issueGrantCode();
    const onTime = sb.issueGrantCode();
    sb.advanceClock(119_000);
    expect(
      (await post(sb, '/oauth/v2/token', { grant_type: 'authorization_code', code: onTime, client_id, client_secret, redirect_uri }))
        .status,
    ).toBe(200);
    sb.advanceClock(2_000);
    const res = await post(sb, '/oauth/v2/token', { grant_type: 'authorization_code', code: late, client_id, client_secret, redirect_uri });
    expect(res).toEqual({ status: 400, body: { error: 'invalid_code' } });
  });

  it('names the wrong credential with the spec error identifiers', async () => {
    sb = await startSandbox();
    const good = { grant_type: 'refresh_token', ...sb.credentials };
    expect((await post(sb, '/oauth/v2/token', { ...good, client_id: 'nope' })).body).toEqual({ error: 'invalid_client' });
    expect((await post(sb, '/oauth/v2/token', { ...good, client_id: ` ${sb.credentials.client_id}` })).body).toEqual({
      error: 'invalid_client',
    });
    expect((await post(sb, '/oauth/v2/token', { ...good, client_secret: 'nope' })).body).toEqual({ error: 'invalid_client_secret' });
    expect((await post(sb, '/oauth/v2/token', { ...good, redirect_uri: 'http://elsewhere/' })).body).toEqual({
      error: 'invalid_redirect_uri',
    });
    expect((await post(sb, '/oauth/v2/token', { ...good, refresh_token: 'unknown' })).body).toEqual({ error: 'invalid_code' });
    expect(sb.requestLog().token.errors).toBe(5);
  });

  it('accepts token fields in the query string and answers GET on the token URL with a server error', async () => {
    sb = await startSandbox();
    const qs = new URLSearchParams({ grant_type: 'refresh_token', ...sb.credentials });
    expect((await fetch(`${sb.accountsUrl}/oauth/v2/token?${qs.toString()}`, { method: 'POST' })).status).toBe(200);
    expect((await fetch(`${sb.accountsUrl}/oauth/v2/token?${qs.toString()}`)).status).toBe(500);
  });

  it('enforces scopes when the credentials carry them', async () => {
    sb = await startSandbox({
      credentials: { scopes: ['SvcBooks.settings.READ', 'SvcInventory.salesorders.ALL', 'SvcSubscriptions.fullaccess.all'] },
    });
    const token = await tokenFor(sb);
    const org = sb.organizations()[0]!.organization_id;
    expect((await orgRequest(sb, 'books', '/users', org, token)).status).toBe(200);
    expect((await orgRequest(sb, 'inventory', '/salesorders', org, token)).status).toBe(200);
    expect((await orgRequest(sb, 'billing', '/plans', org, token)).status).toBe(200);
    const denied = await orgRequest(sb, 'inventory', '/contacts', org, token);
    expect(denied.status).toBe(401);
    expect(((await denied.json()) as Record<string, unknown>)['code']).toBe(57);
    const code = sb.issueGrantCode({ scopes: ['SvcInventory.contacts.READ'] });
    const { client_id, client_secret, redirect_uri } = sb.credentials;
    const granted = await post(sb, '/oauth/v2/token', { grant_type: 'authorization_code', code, client_id, client_secret, redirect_uri });
    const narrow = String(granted.body['access_token']);
    expect((await orgRequest(sb, 'inventory', '/contacts', org, narrow)).status).toBe(200);
    expect((await orgRequest(sb, 'books', '/users', org, narrow)).status).toBe(401);
  });
});
