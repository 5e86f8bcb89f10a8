import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';

// Runs the built CLI (dist/, `npm run build`), as test/cli/cli.test.ts does.
const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SVCSYNC_LOG_LEVEL: 'warn', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('svcsync verify on the command line', () => {
  let sandbox: Sandbox;
  let dir: string;
  let config: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, scale: 4, organizations: 1, unlimited: true });
    dir = mkdtempSync(join(tmpdir(), 'svcsync-verify-cli-'));
    config = join(dir, 'svcsync.yaml');
    writeFileSync(
      config,
      [
        `warehouse: sqlite:${join(dir, 'w.db')}`,
        'connections:',
        '  - name: acme',
        `    accounts_url: ${sandbox.url}`,
        `    client_id: ${sandbox.credentials.client_id}`,
        `    client_secret: ${sandbox.credentials.client_secret}`,
        '    refresh_token: ${SVC_REFRESH_TOKEN}',
        '    plan: enterprise',
        '    limits: { per_minute: 100000, per_day: 1000000 }',
        '',
      ].join('\n'),
    );
    env = { SVC_REFRESH_TOKEN: sandbox.credentials.refresh_token };
  });
  afterAll(async () => sandbox?.stop());

  it('agrees after a sync (exit 0), reports a row removed by hand as missing (exit 4), and checks its flags', async () => {
    const sync = await cli(['sync', '--config', config], env);
    expect(sync.code, sync.stderr).toBe(0);

    const ok = await cli(['verify', '--config', config], env);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/inventory\.sales_orders\s+agree/);
    expect(ok.stdout).toContain('Not checked (read per parent record');
    expect(ok.stdout).toContain('Result: the warehouse agrees with the API for everything checked (exit 0)');

    const orgId = sandbox.organizations()[0]!.organization_id;
    const db = new Database(join(dir, 'w.db'));
    const victim = db
      .prepare('SELECT salesorder_id AS id FROM inventory_sales_orders WHERE organization_id = ? ORDER BY salesorder_id LIMIT 1')
      .get(orgId) as { id: string };
    db.prepare('DELETE FROM inventory_sales_orders WHERE organization_id = ? AND salesorder_id = ?').run(orgId, victim.id);
    db.close();

    const json = await cli(['verify', '--config', config, '--stream', 'inventory.sales_orders', '--json'], env);
    expect(json.code, json.stderr).toBe(4);
    const report = JSON.parse(json.stdout) as {
      exitCode: number;
      streams: Array<{ stream: string; status: string; missing: string[]; missingCount: number }>;
    };
    expect(report.exitCode).toBe(4);
    expect(report.streams).toEqual([
      expect.objectContaining({ stream: 'inventory.sales_orders', status: 'differ', missing: [victim.id], missingCount: 1 }),
    ]);

    const text = await cli(['verify', '--config', config, '--stream', 'sales_orders'], env);
    expect(text.code).toBe(4);
    expect(text.stdout).toMatch(/inventory\.sales_orders\s+differ/);
    expect(text.stdout).toContain(`missing (1): ${victim.id}`);
    expect(text.stdout).toContain('svcsync sync --reconcile');
    expect(text.stdout).toContain('Result: differences found (exit 4)');

    // One request (the first family's organization list) cannot finish anything.
    const bounded = await cli(['verify', '--config', config, '--max-requests', '1'], env);
    expect(bounded.code).toBe(4);
    expect(bounded.stdout).toContain('--max-requests 1 reached');
    expect(bounded.stdout).toContain('Result: not everything was checked (exit 4)');

    const zero = await cli(['verify', '--config', config, '--max-requests', '0'], env);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('--max-requests');
    const typo = await cli(['verify', '--config', config, '--stream', 'inventory.salesorderz'], env);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('"inventory.salesorderz"');
  }, 60_000);
});
