import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { writeProcessConfig } from '../helpers/process-config.js';

const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));

/** Runs the CLI; `onStart` gets a way to send it SIGINT. */
function run(args: string[], onStart?: (interrupt: () => void) => void): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVCSYNC_LOG_LEVEL: 'info' },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  onStart?.(() => child.kill('SIGINT'));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('svcsync sync interrupted by SIGINT (a real process)', () => {
  let sandbox: Sandbox;
  let tw: TestWarehouse;
  let configPath: string;
  beforeAll(async () => {
    // Slow answers and two records a page: the signal always lands while a page is in flight.
    sandbox = await startSandbox({ seed: 6, scale: 30, organizations: 1, unlimited: true, faults: { latencyMs: 150 } });
    tw = await freshWarehouse('sqlite');
    configPath = writeProcessConfig(sandbox, tw.url);
  });
  afterAll(async () => {
    await sandbox?.stop();
    await tw?.drop();
  });

  it('the first SIGINT stops after the page in flight, which is committed; the next run converges', async () => {
    const organizationId = sandbox.organizations()[0]!.organization_id;
    let signalled = false;
    // The signal goes once the sandbox has been asked for the first contacts page (answered 150 ms later).
    const first = await run(['sync', '--config', configPath], (kill) => {
      const poll = setInterval(() => {
        if (signalled || (sandbox.requestLog().byOrganization[organizationId] ?? 0) < 1) return;
        signalled = true;
        clearInterval(poll);
        kill();
      }, 5);
    });
    expect(signalled, first.stderr.slice(-2000)).toBe(true);
    expect(first.code, first.stderr.slice(-2000)).toBe(4);
    expect(first.stderr).toContain('stopping after the current page');
    expect(first.stderr).toContain('stopped. Every committed page is kept');
    const w = await openWarehouse(tw.url);
    try {
      // The page that was in flight when the signal came was received and committed with the pass position.
      const state = await w.db
        .selectFrom('_svcsync_streams')
        .select(['pass_next_page', 'pass_kind'])
        .where('stream', '=', 'inventory.contacts')
        .execute();
      expect(Number(state[0]?.pass_next_page)).toBeGreaterThanOrEqual(2);
      const rows = await w.db.selectFrom('inventory_contacts').select('contact_id').execute();
      expect(rows.length).toBe((Number(state[0]!.pass_next_page) - 1) * 2);
      const runs = await w.db.selectFrom('_svcsync_runs').select('status').execute();
      expect(runs.map((r): unknown => r.status)).toEqual(['stopped']);
    } finally {
      await w.close();
    }

    const second = await run(['sync', '--config', configPath]);
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    const w2 = await openWarehouse(tw.url);
    try {
      const rows = await w2.db.selectFrom('inventory_contacts').select('contact_id').where('_deleted_at', 'is', null).execute();
      expect(rows.length).toBe(sandbox.count(organizationId, 'inventory', 'contacts'));
    } finally {
      await w2.close();
    }
  }, 60_000);
});
