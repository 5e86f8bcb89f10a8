import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/logger.js';
import { runSync } from '../../src/extractors/sync-run.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { DIALECTS } from '../helpers/dialects.js';
import { startE2E, type E2E } from '../helpers/e2e.js';

describe.each(DIALECTS)('a run whose lease lapses mid-organization, on %s', (dialect) => {
  let e: E2E | undefined;
  let w: Warehouse | undefined;
  afterEach(async () => {
    await w?.close();
    await e?.close();
    e = w = undefined;
  });

  it('sends nothing more for it, fails it with the cause (no other owner, so not busy), exit 4; the next run completes it', async () => {
    e = await startE2E(dialect, { scale: 12, organizations: 2 }, { sync: { per_page: 2 } });
    // This process's lease clock: it stands still until the run has sent a few requests, then
    // jumps past the lease's time-to-live, as if the process had been paused (no heartbeat fires
    // within the test: 60 s).
    let now = Date.now();
    w = await openWarehouse(e.config.warehouse.url, { poolSize: 4, leaseTimings: { ttlMs: 20_000, heartbeatMs: 60_000, now: () => now } });
    const target = e.sandbox.organizations()[0]!.organization_id;
    let sentForTarget = 0;
    let afterLapse = 0;
    const summary = await runSync({
      config: { ...e.config, connections: [{ ...e.config.connections[0]!, streams: ['inventory.contacts'] }] },
      warehouse: w,
      clock: e.sandbox.clock,
      logger: createLogger({ level: 'info', secrets: e.secrets, destination: e.log }),
      secrets: e.secrets,
      signal: new AbortController().signal,
      command: 'sync',
      mode: 'incremental',
      organization: target,
      onRequest: (ev) => {
        if (ev.organizationId !== target) return;
        if (now > Date.now() + 1_000) afterLapse++;
        if (++sentForTarget === 2) now += 60_000;
      },
    });
    const outcome = summary.organizations.find((o) => o.organizationId === target)!;
    // Nobody else took the organization: it is this run's unfinished work, never "another process".
    expect(outcome.status).toBe('failed');
    expect(outcome.failure).toBe('lease');
    expect(outcome.error).toMatch(/not confirmed by the warehouse for 60 s \(this process was paused or cut off\)/);
    expect(outcome.error).not.toMatch(/another svcsync process/);
    // The request answered after the lapse was the one already in flight; none was sent after it.
    expect(afterLapse).toBeLessThanOrEqual(1);
    expect(summary.exitCode).toBe(4);
    const logged = e.log.records.filter((r) => r['level'] === 50 || r['level'] === 'error');
    expect(logged.some((r) => String(r['msg']).includes(`organization ${target}: the lease on organization ${target}`))).toBe(true);

    // The next run (a fresh lease) completes it.
    await w.close();
    w = undefined;
    const next = await e.sync('incremental', { organization: target, streams: ['inventory.contacts'] });
    expect(next.organizations.find((o) => o.organizationId === target)?.status).toBe('ok');
    const ids = await e.liveIds(target, 'inventory', 'contacts');
    expect(ids.length).toBe(e.sandbox.count(target, 'inventory', 'contacts'));
  });
});
