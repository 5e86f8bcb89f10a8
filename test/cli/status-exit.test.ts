import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requiredScopes } from '../../src/api/scopes.js';
import { FAMILIES } from '../../src/catalog/families.js';
import { CATALOG } from '../../src/catalog/index.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli } from '../helpers/cli-process.js';
import { DIALECTS, freshWarehouse } from '../helpers/dialects.js';
import { freePort } from '../helpers/private-postgres.js';

interface Doc {
  version: string;
  connections: Array<{ connection: string; state: string; authorization: { result: string; error: string | null } | null }>;
  loginCheck?: Array<{ connection: string; result: string; error: string | null; hint: string | null }>;
}

/**
 * `svcsync status` exits non-zero when something failed, so cron and monitoring can act on it:
 * 3 while a connection's last login was refused, 4 while a stream's last run failed; `--check`
 * tries each login now. The real command line, against the sandbox, on both warehouses.
 */
describe.each(DIALECTS)('svcsync status exit codes, on %s', (dialect) => {
  let dir: string;
  let sandbox: Sandbox;
  let narrow: Sandbox;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcsync-status-'));
    sandbox = await startSandbox({ seed: 9, scale: 2, organizations: 1, unlimited: true });
    const scopes = requiredScopes(CATALOG, FAMILIES).filter((s) => s !== 'SvcInventory.salesorders.READ');
    narrow = await startSandbox({ seed: 9, scale: 2, organizations: 1, unlimited: true, credentials: { scopes } });
  });
  afterAll(async () => {
    await sandbox?.stop();
    await narrow?.stop();
  });

  let files = 0;
  const config = (url: string, s: Sandbox, given: { client_secret?: string; accounts_url?: string } = {}): string => {
    const path = join(dir, `svcsync-${files++}.yaml`);
    writeFileSync(
      path,
      [
        `warehouse: "${url}"`,
        'connections:',
        '  - name: acme',
        `    accounts_url: ${given.accounts_url ?? s.url}`,
        `    client_id: "${s.credentials.client_id}"`,
        `    client_secret: "${given.client_secret ?? s.credentials.client_secret}"`,
        `    refresh_token: "${s.credentials.refresh_token}"`,
        '    plan: enterprise',
        '    limits: { per_minute: 100000, per_day: 1000000 }',
        '',
      ].join('\n'),
    );
    return path;
  };

  it('0 while all is well; 3 once a sync could not log in, and --check tries the login now and records it', async () => {
    const { url } = await freshWarehouse(dialect);
    const good = config(url, sandbox);
    const bad = config(url, sandbox, { client_secret: 'not-the-client-secret' });
    expect((await runCli(['sync', '--config', good])).code).toBe(0);
    const fine = await runCli(['status', '--config', good]);
    expect(fine.code, fine.stderr).toBe(0);
    expect(fine.stdout).toContain('Result: no connection refused, no stream failed its last run (exit 0)');
    const json = await runCli(['status', '--config', good, '--json']);
    expect(json.code).toBe(0);
    expect(Object.keys(JSON.parse(json.stdout) as object)).toEqual([
      'version',
      'generatedAt',
      'connections',
      'organizations',
      'queue',
      'daemon',
    ]);

    // The secret was changed: status read alone knows only the last run's verdict (ok); --check asks now.
    expect((await runCli(['status', '--config', bad])).code).toBe(0);
    const checked = await runCli(['status', '--check', '--config', bad]);
    expect(checked.code, checked.stdout + checked.stderr).toBe(3);
    expect(checked.stdout).toContain('acme: ✗ login refused: token refresh was refused by the authorization server: invalid_client_secret');
    expect(checked.stdout).toContain('Result: 1 connection(s) cannot log in (acme) (exit 3)');
    expect(checked.stdout + checked.stderr).not.toContain('not-the-client-secret');
    // Recorded: a later status (a cron job's) exits 3 without trying again, in JSON too.
    const after = await runCli(['status', '--config', bad, '--json']);
    expect(after.code).toBe(3);
    const doc = JSON.parse(after.stdout) as Doc;
    expect(doc.connections[0]).toMatchObject({ connection: 'acme', state: 'failing', authorization: { result: 'refused' } });
    expect(doc.loginCheck).toBeUndefined();

    const withCheck = JSON.parse((await runCli(['status', '--check', '--json', '--config', good])).stdout) as Doc;
    expect(withCheck.loginCheck).toEqual([{ connection: 'acme', result: 'ok', error: null, hint: null }]);
    expect(withCheck.connections[0]).toMatchObject({ state: 'ok', authorization: { result: 'ok' } });
    expect((await runCli(['status', '--config', good])).code).toBe(0);
  }, 60_000);

  it('a refused login found by a sync alone also exits 3', async () => {
    const { url } = await freshWarehouse(dialect);
    const bad = config(url, sandbox, { client_secret: 'not-the-client-secret' });
    expect((await runCli(['sync', '--config', bad])).code).toBe(3);
    const r = await runCli(['status', '--config', bad]);
    expect(r.code).toBe(3);
    expect((await runCli(['status', '--json', '--config', bad])).code).toBe(3);
  }, 60_000);

  it("4 while a stream's last run failed, naming it", async () => {
    const { url } = await freshWarehouse(dialect);
    const path = config(url, narrow);
    expect((await runCli(['sync', '--config', path])).code).toBe(4);
    const r = await runCli(['status', '--config', path]);
    expect(r.code, r.stdout).toBe(4);
    expect(r.stdout).toMatch(/inventory\.sales_orders .* last failed/);
    expect(r.stdout).toMatch(/Result: \d+ stream\(s\) failed their last run \(exit 4\)/);
  }, 60_000);

  it('--check against an authorization server that does not answer: exit 1, nothing recorded', async () => {
    const { url } = await freshWarehouse(dialect);
    const dead = config(url, sandbox, { accounts_url: `http://127.0.0.1:${await freePort()}` });
    const r = await runCli(['status', '--check', '--json', '--config', dead]);
    expect(r.code, r.stderr).toBe(1);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc.loginCheck![0]).toMatchObject({ connection: 'acme', result: 'failed' });
    expect(doc.connections[0]).toMatchObject({ state: 'unknown', authorization: null });
  }, 60_000);
});
