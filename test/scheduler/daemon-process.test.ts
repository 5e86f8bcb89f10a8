import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { writeProcessConfig } from '../helpers/process-config.js';

const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));

describe('svcsync daemon as a real process', () => {
  let sandbox: Sandbox;
  let tw: TestWarehouse;
  let configPath: string;
  beforeAll(async () => {
    // Slow answers and two records a page: a job is always mid-page when the signal comes.
    sandbox = await startSandbox({ seed: 5, scale: 40, organizations: 1, unlimited: true, faults: { latencyMs: 150 } });
    tw = await freshWarehouse('sqlite');
    configPath = writeProcessConfig(sandbox, tw.url, ['daemon:', '  schedules: { incremental: "* * * * * *", settings: "* * * * * *" }']);
  });
  afterAll(async () => {
    await sandbox?.stop();
    await tw?.drop();
  });

  it('on SIGTERM mid-page exits 0 within the grace bound, with the page committed', async () => {
    const child = spawn(process.execPath, [BIN, 'daemon', '--config', configPath, '--grace-ms', '5000'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SVCSYNC_LOG_LEVEL: 'debug' },
    });
    let stderr = '';
    let signalledAt = 0;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    );
    child.stderr.on('data', (d) => {
      stderr += String(d);
      // A pass has begun and its pages take 150 ms each: the signal lands mid-page.
      if (!signalledAt && stderr.includes('"msg":"starting pass"')) {
        signalledAt = Date.now();
        child.kill('SIGTERM');
      }
    });
    const result = await exited;
    expect(signalledAt, stderr.slice(-2000)).toBeGreaterThan(0);
    expect(result.code, stderr.slice(-2000)).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(5000 + 3000);
    expect(stderr).toContain('SIGTERM received');
    expect(stderr).toContain('daemon stopped');
    // Every job shares the connection's access token.
    expect(sandbox.requestLog().token.refresh).toBe(1);
    const w = await openWarehouse(tw.url);
    try {
      // What was committed is there: contacts rows and the pass position that records them.
      const rows = await w.db.selectFrom('inventory_contacts').select('contact_id').execute();
      expect(rows.length).toBeGreaterThan(0);
      const running = await w.db.selectFrom('_svcsync_runs').select('status').where('status', '=', 'running').execute();
      expect(running).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);
});
