import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { startCli } from '../helpers/cli-process.js';
import { DIALECTS, freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { writeProcessConfig } from '../helpers/process-config.js';

/** Resolves once the sandbox has been asked for `n` requests of the organization. */
function requestsReach(sandbox: Sandbox, organizationId: string, n: number): Promise<void> {
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      if ((sandbox.requestLog().byOrganization[organizationId] ?? 0) < n) return;
      clearInterval(poll);
      resolve();
    }, 5);
  });
}

describe.each(DIALECTS)('the run after a SIGKILLed svcsync sync, on %s (real processes)', (dialect) => {
  let sandbox: Sandbox;
  let tw: TestWarehouse;
  let configPath: string;
  beforeAll(async () => {
    // Slow answers: the first process is mid-sync when it is killed. A window of 3 s keeps the takeover's wait short.
    sandbox = await startSandbox({ seed: 9, scale: 30, organizations: 1, unlimited: true, faults: { latencyMs: 150 } });
    tw = await freshWarehouse(dialect);
    configPath = writeProcessConfig(sandbox, tw.url, [], {
      limits: '{ per_minute: 1000000, per_day: 100000000, window_ms: 3000 }',
    });
  });
  afterAll(async () => {
    await sandbox?.stop();
    await tw?.drop();
  });

  it('says once, at the default level, why it waits before its first request and for how long', async () => {
    const organizationId = sandbox.organizations()[0]!.organization_id;
    const killed = startCli(['sync', '--config', configPath]);
    await requestsReach(sandbox, organizationId, 2);
    killed.child.kill('SIGKILL');
    await killed.done;

    const next = await startCli(['sync', '--config', configPath], { env: { SVCSYNC_LOG_LEVEL: 'warn' } }).done;
    expect(next.code, next.stderr.slice(-2000)).toBe(0);
    const lines = next.stderr.split('\n').filter((l) => l.includes('ended without releasing it'));
    expect(lines, next.stderr.slice(-2000)).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line['level']).toBe('warn');
    expect(line['organization_id']).toBe(organizationId);
    expect(line['wait_s']).toBe(3);
    expect(String(line['msg'])).toContain(`organization ${organizationId}: the previous svcsync process ended without releasing it`);
    expect(String(line['msg'])).toContain('waiting 3 s before the first request');
  }, 60_000);
});
