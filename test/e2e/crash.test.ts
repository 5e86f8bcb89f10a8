import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCliKilledAfterPages as runCli, writeKilledRunConfig, type KilledRun as CliRun } from '../helpers/cli-process.js';
import { DIALECTS, freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { ID_FIELDS, truthIds, type Family } from '../helpers/e2e.js';

const CASES = DIALECTS.flatMap((dialect) => (['default', 'hostile'] as const).map((preset) => ({ dialect, preset })));

// Concurrent: each case has its own sandbox and warehouse, and a kill lands wherever its run is when
// the log shows the page count (any point is a point the run must recover from), so the four cases'
// CLI processes and the sandboxes' latency overlap instead of queueing.
describe.concurrent.each(CASES)('a sync killed with SIGKILL on $dialect against the $preset sandbox', ({ dialect, preset }) => {
  let sandbox: Sandbox;
  let tw: TestWarehouse;
  let configPath: string;
  beforeAll(async () => {
    // Added latency makes a run last long enough to be killed at several points of it.
    // Under hostile, records do not change mid-walk here: the last run's result is compared
    // with the truth, and changes during that run are the next run's to catch.
    sandbox = await startSandbox({
      seed: 11,
      scale: 60,
      organizations: 2,
      unlimited: true,
      faults: { latencyMs: 8 },
      preset,
      variants: { changeWhilePagingEvery: 0 },
    });
    tw = await freshWarehouse(dialect);
    configPath = writeKilledRunConfig(sandbox, tw.url, { prefix: 'svcsync-crash-', secretEnv: 'CRASH_SECRET' });
  });
  afterAll(async () => {
    await sandbox?.stop();
    await tw?.drop();
  });

  it('converges on the truth after being killed at several points', async () => {
    const kills: CliRun[] = [];
    let leftMidWork = 0;
    for (const pages of [2, 9, 25, 60]) {
      kills.push(await runCli(['sync', '--config', configPath], pages));
      // Did this kill leave a pass half-walked or child/detail work queued?
      const w = await openWarehouse(tw.url);
      try {
        const open = await w.db
          .selectFrom('_svcsync_streams')
          .select('stream')
          .where('pass_kind', 'is not', null)
          .execute()
          .catch(() => []);
        const queued = await w.db
          .selectFrom('_svcsync_pending')
          .select('item_id')
          .execute()
          .catch(() => []);
        if (open.length + queued.length > 0) leftMidWork++;
      } finally {
        await w.close();
      }
    }
    expect(kills.filter((k) => k.signal === 'SIGKILL').length).toBeGreaterThan(1);
    expect(leftMidWork, 'no kill landed in the middle of the work').toBeGreaterThan(0);
    sandbox.mutate({ modify: 3, create: 2 });
    const final = await runCli(['sync', '--config', configPath]);
    expect(final.code, final.stderr + final.stdout).toBe(0);
    expect(final.stdout).toContain('Result: success');
    const warehouse: Warehouse = await openWarehouse(tw.url);
    try {
      for (const org of sandbox.organizations()) {
        for (const family of Object.keys(ID_FIELDS) as Family[]) {
          for (const stream of Object.keys(ID_FIELDS[family])) {
            if (stream === 'organizations') continue;
            const id = ID_FIELDS[family][stream]!;
            const rows = await warehouse.db
              .selectFrom(`${family}_${stream}`)
              .select(id)
              .where('organization_id', '=', org.ids[family])
              .where('_deleted_at', 'is', null)
              .execute();
            expect(rows.map((r) => String(r[id])).sort(), `${family}.${stream}`).toEqual(
              truthIds(sandbox, org.ids[family], family, stream),
            );
          }
        }
      }
      // Nothing left half-done: no pass in progress and no queued work.
      const open = await warehouse.db.selectFrom('_svcsync_streams').select('stream').where('pass_kind', 'is not', null).execute();
      expect(open).toEqual([]);
      const pending = await warehouse.db.selectFrom('_svcsync_pending').select('item_id').execute();
      expect(pending).toEqual([]);
    } finally {
      await warehouse.close();
    }
  }, 180_000);
});
