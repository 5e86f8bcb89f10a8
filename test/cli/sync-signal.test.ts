import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { writeProcessConfig } from '../helpers/process-config.js';

const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));

/** Runs the CLI; `onStart` gets a way to send it SIGINT. */
function run(args: string[], onStart?: (interrupt: () => void) => void): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVCSYNC_LOG_LEVEL: 'info' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  onStart?.(() => child.kill('SIGINT'));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Sends SIGINT once the sandbox has been asked for a page of the organization (answered 150 ms later). */
function interruptOnFirstRequest(sandbox: Sandbox, organizationId: string): { fired: () => boolean; onStart: (kill: () => void) => void } {
  let signalled = false;
  return {
    fired: () => signalled,
    onStart: (kill) => {
      const before = sandbox.requestLog().byOrganization[organizationId] ?? 0;
      const poll = setInterval(() => {
        if (signalled || (sandbox.requestLog().byOrganization[organizationId] ?? 0) <= before) return;
        signalled = true;
        clearInterval(poll);
        kill();
      }, 5);
    },
  };
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
    // The signal goes once the sandbox has been asked for the first contacts page (answered 150 ms later).
    const interrupt = interruptOnFirstRequest(sandbox, organizationId);
    const first = await run(['sync', '--config', configPath], interrupt.onStart);
    expect(interrupt.fired(), first.stderr.slice(-2000)).toBe(true);
    expect(first.code, first.stderr.slice(-2000)).toBe(4);
    expect(first.stderr).toContain('stopping after the current page');
    expect(first.stderr).toContain('stopped. Every committed page is kept');
    // The summary of what was committed goes to stdout, as a finished run's does.
    expect(first.stdout).toContain('⏹ stopped (interrupted by SIGINT)');
    expect(first.stdout).toMatch(new RegExp(`⏹ p / organization ${organizationId} .*: stopped`));
    expect(first.stdout).toMatch(/inventory\.contacts +\d+ records +\d+ written .* stopped/);
    expect(first.stdout).toContain('Result: partial: some work is left for the next run (exit 4)');
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
      const line = /inventory\.contacts +(\d+) records +(\d+) written/.exec(first.stdout);
      expect(line?.slice(1).map(Number)).toEqual([rows.length, rows.length]);
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

  it('--json prints the stopped run as one object with its version, what it committed and exit 4', async () => {
    const fresh = await freshWarehouse('sqlite');
    try {
      const config = writeProcessConfig(sandbox, fresh.url);
      const organizationId = sandbox.organizations()[0]!.organization_id;
      const interrupt = interruptOnFirstRequest(sandbox, organizationId);
      const stopped = await run(['sync', '--json', '--config', config], interrupt.onStart);
      expect(interrupt.fired(), stopped.stderr.slice(-2000)).toBe(true);
      expect(stopped.code, stopped.stderr.slice(-2000)).toBe(4);
      const summary = JSON.parse(stopped.stdout) as {
        version: string;
        stopped: string;
        exitCode: number;
        organizations: { organizationId: string; status: string; streams: { stream: string; status: string; written: number }[] }[];
      };
      expect(summary.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(summary.stopped).toBe('interrupted by SIGINT');
      expect(summary.exitCode).toBe(4);
      const org = summary.organizations.find((o) => o.organizationId === organizationId);
      expect(org?.status).toBe('stopped');
      const w = await openWarehouse(fresh.url);
      try {
        const rows = await w.db.selectFrom('inventory_contacts').select('contact_id').execute();
        const contacts = org?.streams.find((s) => s.stream === 'inventory.contacts');
        expect(contacts?.status).toBe('stopped');
        expect(contacts?.written).toBe(rows.length);
        expect(rows.length).toBeGreaterThan(0);
      } finally {
        await w.close();
      }
    } finally {
      await fresh.drop();
    }
  }, 60_000);
});
