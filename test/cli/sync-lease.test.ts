import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { writeProcessConfig } from '../helpers/process-config.js';
import { startCli } from '../helpers/cli-process.js';

const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));

interface Done {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[]): Promise<Done> {
  const child = spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVCSYNC_LOG_LEVEL: 'info' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Resolves once the sandbox has answered `n` requests for the organization. */
function requestsReach(sandbox: Sandbox, organizationId: string, n: number): Promise<void> {
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      if ((sandbox.requestLog().byOrganization[organizationId] ?? 0) < n) return;
      clearInterval(poll);
      resolve();
    }, 5);
  });
}

describe('a hand-run svcsync sync next to a running sync of the same SQLite warehouse (real processes)', () => {
  let sandbox: Sandbox;
  let tw: TestWarehouse;
  let configPath: string;
  let organizationId: string;
  beforeAll(async () => {
    // Slow answers and two records a page: the first process is mid-sync when the second starts.
    sandbox = await startSandbox({ seed: 8, scale: 30, organizations: 1, unlimited: true, faults: { latencyMs: 250 } });
    organizationId = sandbox.organizations()[0]!.organization_id;
    tw = await freshWarehouse('sqlite');
    configPath = writeProcessConfig(sandbox, tw.url);
  });
  afterAll(async () => {
    await sandbox?.stop();
    await tw?.drop();
  });

  async function liveContacts(): Promise<number> {
    const w = await openWarehouse(tw.url);
    try {
      const rows = await w.db.selectFrom('inventory_contacts').select('contact_id').where('_deleted_at', 'is', null).execute();
      return rows.length;
    } finally {
      await w.close();
    }
  }

  it('the second process skips the organization it does not own (exit 4, unfinished here; a clear line); the data ends exact', async () => {
    const first = run(['sync', '--config', configPath]);
    await requestsReach(sandbox, organizationId, 3);
    // Slow answers while the second process runs, so the first still holds the organization
    // however long the second takes to start on a loaded machine.
    sandbox.setFaults({ latencyMs: 2_000 });
    const second = await run(['sync', '--config', configPath]);
    sandbox.setFaults({ latencyMs: 250 });
    const one = await first;
    expect(one.code, one.stderr.slice(-2000)).toBe(0);
    expect(second.code, second.stderr.slice(-2000)).toBe(4);
    expect(second.stderr).toContain(`organization ${organizationId} is being synced by another svcsync process`);
    expect(second.stderr).toContain('svcsync sync --wait');
    expect(second.stdout).toContain('busy');
    expect(await liveContacts()).toBe(sandbox.count(organizationId, 'inventory', 'contacts'));
  });

  it('with --wait the second process waits for the first, then syncs; the data ends exact', async () => {
    let firstEnded = 0;
    const first = run(['sync', '--reconcile', '--config', configPath]).then((r) => {
      firstEnded = Date.now();
      return r;
    });
    await requestsReach(sandbox, organizationId, sandbox.requestLog().byOrganization[organizationId]! + 3);
    // Slow answers until the second process has found the organization taken, however long it takes to start.
    sandbox.setFaults({ latencyMs: 2_000 });
    const started = startCli(['sync', '--wait', '--config', configPath]);
    let said = '';
    started.child.stderr?.on('data', (d: Buffer) => (said += d.toString()));
    for (let i = 0; i < 400 && !said.includes('waiting for it to finish'); i++) await new Promise((r) => setTimeout(r, 50));
    sandbox.setFaults({ latencyMs: 250 });
    const second = await started.done;
    // It waited: it ended after the first let go.
    expect(firstEnded).toBeGreaterThan(0);
    const one = await first;
    expect(one.code, one.stderr.slice(-2000)).toBe(0);
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    // The wait says for whom it waits, once, at the default level.
    expect(second.stderr.split('waiting for it to finish (--wait)').length - 1).toBe(1);
    expect(second.stderr).not.toContain('being synced by another process');
    expect(second.stdout).not.toContain('busy');
    expect(await liveContacts()).toBe(sandbox.count(organizationId, 'inventory', 'contacts'));
  });
});
