import { afterEach, describe, expect, it } from 'vitest';
import { streamTables } from '../../src/catalog/index.js';
import { findStream } from '../../src/catalog/index.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, type E2E } from '../helpers/e2e.js';

/**
 * "Marked deleted" counts rows, as "written" does: a reconcile that finds sales orders gone marks
 * their lines and the rest of their child rows too, and says so in the summary, per table in
 * `_svcsync_run_streams`, and in the warehouse.
 */
const ORDERS = 'inventory.sales_orders';

describe.each(DIALECTS)('rows marked deleted on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  /** Rows marked deleted in each of the orders' tables, read from the warehouse. */
  async function markedByTable(w: E2E): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const { name } of streamTables(findStream(ORDERS)!)) {
      const rows = await w.query<{ n: number | string }>(`SELECT COUNT(*) AS n FROM "${name}" WHERE _deleted_at IS NOT NULL`);
      const n = Number(rows[0]!.n);
      if (n > 0) out[name] = n;
    }
    return out;
  }

  it('a reconcile counts the orders and their child-table rows it marks, in the summary and in _svcsync_run_streams', async () => {
    e = await startE2E(dialect, { scale: 12, organizations: 1 });
    expectExit(await e.sync('incremental', { streams: [ORDERS] }), 0);
    e.sandbox.mutate({ delete: 3, streams: [ORDERS] });
    const summary = await e.sync('reconcile', { streams: [ORDERS] });
    expectExit(summary, 0);
    const marked = await markedByTable(e);
    expect(marked['inventory_sales_orders']).toBe(3);
    const total = Object.values(marked).reduce((a, b) => a + b, 0);
    // The three orders' lines, at least, are rows too.
    expect(total).toBeGreaterThan(3);
    const orders = summary.organizations[0]!.streams.find((s) => s.stream === ORDERS)!;
    expect(orders.deleted).toBe(total);
    expect(orders.deletedTables).toEqual(marked);
    const recorded = await e.query<{ deleted: number | string; deleted_tables: string }>(
      `SELECT deleted, deleted_tables FROM _svcsync_run_streams WHERE stream = '${ORDERS}' AND deleted IS NOT NULL AND deleted > 0`,
    );
    expect(recorded).toHaveLength(1);
    expect(Number(recorded[0]!.deleted)).toBe(total);
    expect(JSON.parse(recorded[0]!.deleted_tables)).toEqual(marked);
  });
});
