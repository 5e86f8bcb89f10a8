import { afterEach, describe, expect, it } from 'vitest';
import { CommitCuttingProxy } from '../helpers/commit-cutting-proxy.js';
import { PG_BASE_URL } from '../helpers/dialects.js';
import { expectExit, startE2E, truthIds, type E2E } from '../helpers/e2e.js';

/**
 * The reply to a COMMIT lost after the server committed (a connection cut between the two), on
 * a real Postgres connection through a proxy that cuts it. svcsync cannot tell a lost reply from
 * a failed commit and runs the unit of work again: the second run must change nothing.
 */
const ORDERS = 'inventory.sales_orders';

function target(): { host: string; port: number } {
  const u = new URL(PG_BASE_URL);
  return { host: u.hostname, port: Number(u.port || 5432) };
}

/** The streams' live ids equal the sandbox's. */
async function expectStreamsEqualTruth(e: E2E, org: string, streams: readonly string[]): Promise<void> {
  for (const name of streams) {
    const [family, stream] = name.split('.') as ['inventory', string];
    expect(await e.liveIds(org, family, stream), name).toEqual(truthIds(e.sandbox, org, family, stream));
  }
}

const has = (pattern: RegExp) => (statements: readonly string[]) => statements.some((s) => pattern.test(s));

describe(
  'a lost COMMIT reply (postgres, through a proxy that cuts the connection after the server committed)',
  { timeout: 120_000 },
  () => {
    let e: E2E | undefined;
    let proxy: CommitCuttingProxy | undefined;
    afterEach(async () => {
      await e?.close();
      await proxy?.close();
      e = undefined;
      proxy = undefined;
    });

    async function start(history = false): Promise<{ e: E2E; proxy: CommitCuttingProxy; org: string }> {
      proxy = await CommitCuttingProxy.start(target());
      const p = proxy;
      e = await startE2E(
        'postgres',
        { scale: 6, organizations: 1, streamScale: { [ORDERS]: 375 } },
        history ? { connection: { history: 'all' } } : {},
        { through: (url) => p.through(url) },
      );
      return { e, proxy: p, org: e.sandbox.organizations()[0]!.organization_id };
    }

    it("of a reconcile's pass end marks nothing deleted, writes no history, and reports no deletion", async () => {
      const { e, proxy, org } = await start(true);
      expectExit(await e.sync('incremental', { streams: [ORDERS] }), 0);
      const versionsBefore = await e.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM inventory_sales_orders_history');
      // The last page of the orders' reconcile: it marks the rows no page listed, and forgets what the pages listed.
      proxy.cutAfterCommit((s) => has(/^UPDATE "inventory_sales_orders" SET "_deleted_at"/)(s) && has(/DELETE FROM "_svcsync_listed"/)(s));
      const summary = await e.sync('reconcile', { streams: [ORDERS] });
      expect(proxy.cut).toHaveLength(1);
      expectExit(summary, 0);
      const orders = summary.organizations[0]!.streams.find((s) => s.stream === ORDERS)!;
      expect(orders.deleted).toBe(0);
      const gone = await e.query<{ n: number | string }>(
        'SELECT COUNT(*) AS n FROM inventory_sales_orders WHERE organization_id = $1 AND _deleted_at IS NOT NULL',
        [org],
      );
      expect(Number(gone[0]!.n)).toBe(0);
      const lines = await e.query<{ n: number | string }>(
        'SELECT COUNT(*) AS n FROM inventory_sales_orders__line_items WHERE _deleted_at IS NOT NULL',
      );
      expect(Number(lines[0]!.n)).toBe(0);
      const versionsAfter = await e.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM inventory_sales_orders_history');
      expect(Number(versionsAfter[0]!.n)).toBe(Number(versionsBefore[0]!.n));
      await expectStreamsEqualTruth(e, org, [ORDERS]);
    });

    it("of a page, a single record and a child list writes each once, with the first attempt's counts", async () => {
      const { e, proxy, org } = await start(true);
      // A list page of orders (it queues their single reads), one order's single read (its lines), a contact's person list.
      const done = has(/^delete from "_svcsync_pending"/i);
      proxy.cutAfterCommit(has(/^insert into "_svcsync_pending"/i), 1);
      proxy.cutAfterCommit((s) => done(s) && has(/^insert into "inventory_sales_orders__line_items"/i)(s), 1);
      proxy.cutAfterCommit((s) => done(s) && has(/^insert into "inventory_contact_persons"/i)(s), 2);
      const summary = await e.sync('incremental', { streams: [ORDERS, 'inventory.contact_persons'] });
      expect(proxy.cut.length).toBe(4);
      expectExit(summary, 0);
      await expectStreamsEqualTruth(e, org, [ORDERS, 'inventory.contacts', 'inventory.contact_persons']);
      // A first sync writes every person: a retried child list reports what its first attempt wrote, not 0.
      const persons = summary.organizations[0]!.streams.find((s) => s.stream === 'inventory.contact_persons')!;
      expect(persons.written).toBe(truthIds(e.sandbox, org, 'inventory', 'contact_persons').length);
      const queued = await e.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM _svcsync_pending WHERE stream IN ($1, $2)', [
        ORDERS,
        'inventory.contact_persons',
      ]);
      expect(Number(queued[0]!.n)).toBe(0);
      // One version per order: a retried page or single read adds none.
      const versions = await e.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM inventory_sales_orders_history');
      expect(Number(versions[0]!.n)).toBe(375);
    });

    it("of a daily-usage reservation counts each request once: svcsync's count equals the server's", async () => {
      const { e, proxy, org } = await start();
      proxy.cutAfterCommit(has(/update "_svcsync_usage" set "count" = "count" \+/), 2);
      expectExit(await e.sync('incremental', { streams: [ORDERS] }), 0);
      expect(proxy.cut.length).toBe(2);
      const usage = await e.query<{ count: number | string }>('SELECT count FROM _svcsync_usage WHERE organization_id = $1', [org]);
      expect(Number(usage[0]!.count)).toBe(e.sandbox.requestLog().byOrganization[org]);
    });

    it('of a returned reservation gives the requests back once', async () => {
      const { e, proxy, org } = await start();
      // The run's end returns what it reserved and did not send.
      proxy.cutAfterCommit(has(/update "_svcsync_usage" set "count" = CASE/i), 1);
      expectExit(await e.sync('incremental', { streams: [ORDERS] }), 0);
      expect(proxy.cut.length).toBe(1);
      const usage = await e.query<{ count: number | string }>('SELECT count FROM _svcsync_usage WHERE organization_id = $1', [org]);
      expect(Number(usage[0]!.count)).toBe(e.sandbox.requestLog().byOrganization[org]);
    });
  },
);
