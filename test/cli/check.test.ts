import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requiredScopes } from '../../src/api/scopes.js';
import { FAMILIES } from '../../src/catalog/families.js';
import { CATALOG } from '../../src/catalog/index.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli } from '../helpers/cli-process.js';

/**
 * `svcsync check` tells refused credentials (the authorization server will not issue a token:
 * exit 3, nothing else tried) from a missing scope (the token works, a family's or a stream's
 * request is refused: exit 4, each scope named), as a user meets them: the real command line
 * against the sandbox.
 */
describe('svcsync check: refused credentials and missing scopes', () => {
  let dir: string;
  let sandbox: Sandbox;
  let narrow: Sandbox;
  const missing = ['SvcSubscriptions.settings.READ', 'SvcInventory.salesorders.READ'];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcsync-check-'));
    sandbox = await startSandbox({ seed: 5, scale: 2, organizations: 1, unlimited: true });
    const scopes = requiredScopes(CATALOG, FAMILIES).filter((s) => !missing.includes(s));
    narrow = await startSandbox({ seed: 5, scale: 2, organizations: 1, unlimited: true, credentials: { scopes } });
  });
  afterAll(async () => {
    await sandbox?.stop();
    await narrow?.stop();
  });

  let files = 0;
  const config = (s: Sandbox, overrides: { client_id?: string; client_secret?: string; refresh_token?: string } = {}): string => {
    const path = join(dir, `svcsync-${files++}.yaml`);
    const c = { ...s.credentials, ...overrides };
    writeFileSync(
      path,
      [
        `warehouse: sqlite:${join(dir, `w-${files}.db`)}`,
        'connections:',
        '  - name: acme',
        `    accounts_url: ${s.url}`,
        `    client_id: "${c.client_id}"`,
        `    client_secret: "${c.client_secret}"`,
        `    refresh_token: "${c.refresh_token}"`,
        '    plan: enterprise',
        '    limits: { per_minute: 100000, per_day: 1000000 }',
        '',
      ].join('\n'),
    );
    return path;
  };

  it.each([
    ['a wrong client secret', { client_secret: 'wrong-secret-value-123' }, 'invalid_client_secret', /client secret is wrong/],
    ['a wrong client id', { client_id: '1000.NOSUCHCLIENT' }, 'invalid_client', /client id is wrong/],
    ['a refresh token the server does not know (revoked)', { refresh_token: '1000.revoked.token' }, 'invalid_code', /revoked/],
  ])('%s: exit 3, "login refused" with the OAuth error and what to fix; no scope blamed, no API request', async (_, given, oauth, hint) => {
    const before = sandbox.requestLog();
    const r = await runCli(['check', '--config', config(sandbox, given)]);
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stdout).toContain(`✗ login refused: token refresh was refused by the authorization server: ${oauth}`);
    expect(r.stdout).toMatch(hint);
    expect(r.stdout).toContain('nothing else was checked');
    expect(r.stdout).not.toMatch(/scope/i);
    for (const secret of Object.values(given)) expect(r.stdout + r.stderr).not.toContain(secret.slice(6));
    // One refused token request, and nothing sent to the API.
    const after = sandbox.requestLog();
    expect(after.token.errors - before.token.errors).toBe(1);
    expect(after.total - before.total).toBe(1);
  });

  it('a token without two scopes: exit 4; the login works, and each refusal names its missing scope', async () => {
    const r = await runCli(['check', '--config', config(narrow)]);
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(r.stdout).toContain('✓ login: the authorization server accepted the client id, secret and refresh token');
    expect(r.stdout).not.toContain('login refused');
    expect(r.stdout).toMatch(/✗ billing: cannot list organizations: missing scope SvcSubscriptions\.settings\.READ \(the login works/);
    expect(r.stdout).toMatch(/✗ inventory\.sales_orders: missing scope SvcInventory\.salesorders\.READ \(the login works/);
    expect(r.stdout).toMatch(/✓ inventory\.contacts \(SvcInventory\.contacts\.READ\)/);
    const summary = r.stdout.split('\n').find((l) => l.startsWith('  missing scope(s): '));
    for (const scope of missing) expect(summary).toContain(scope);
    expect(summary).toContain('svcsync auth scopes');
  }, 60_000);
});
