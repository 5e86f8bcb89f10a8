import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, type E2E } from '../helpers/e2e.js';

describe.each(DIALECTS)('row lineage (_run_id) on %s', (dialect) => {
  let e: E2E;
  let firstRun: string;
  beforeAll(async () => {
    e = await startE2E(
      dialect,
      { scale: 10, organizations: 1 },
      { connection: { streams: ['inventory.sales_orders', 'inventory.contacts'] } },
    );
    const summary = await e.sync();
    expectExit(summary, 0);
    firstRun = summary.runId;
  }, 120_000);
  afterAll(async () => e?.close());

  it('every row, child rows included, names the run that wrote it, and that run is in _svcsync_runs', async () => {
    for (const table of ['inventory_sales_orders', 'inventory_sales_orders__line_items', 'inventory_contacts']) {
      const rows = await e.query<{ run_id: string | null; n: number | string }>(
        `SELECT t."_run_id" AS run_id, COUNT(*) AS n FROM "${table}" AS t GROUP BY t."_run_id"`,
      );
      expect(
        rows.map((r) => r.run_id),
        table,
      ).toEqual([firstRun]);
      expect(Number(rows[0]!.n), table).toBeGreaterThan(0);
    }
    const placeholder = e.warehouse.sql.param(1);
    const runs = await e.query<{ command: string; process: string }>(
      `SELECT command, process FROM _svcsync_runs WHERE run_id = ${placeholder}`,
      [firstRun],
    );
    expect(runs).toHaveLength(1);
    // And the process that ran it: host/pid, as a lease owner and the User-Agent name it.
    expect(runs[0]!.process).toBe(`${hostname()}/${process.pid}`);
  });

  it('an incremental run rewrites only the changed records, and only they carry its run id', async () => {
    const organizationId = e.sandbox.organizations()[0]!.organization_id;
    e.sandbox.advanceClock(10 * 60_000);
    const changed = e.sandbox.mutate({ organizationId, modify: 2, create: 0, streams: ['sales_orders'] });
    expect(changed.modified).toBe(2);
    const summary = await e.sync();
    expectExit(summary, 0);
    const rows = await e.query<{ run_id: string; n: number | string }>(
      'SELECT "_run_id" AS run_id, COUNT(*) AS n FROM "inventory_sales_orders" GROUP BY "_run_id"',
    );
    const byRun = new Map(rows.map((r) => [r.run_id, Number(r.n)]));
    expect(byRun.get(summary.runId)).toBe(2);
    expect(byRun.get(firstRun)).toBe(e.sandbox.count(organizationId, 'inventory', 'sales_orders') - 2);
  });
});
