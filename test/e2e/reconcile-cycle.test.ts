import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, truthIds, type E2E } from '../helpers/e2e.js';

const DAY = 86_400_000;
/** The contacts' tree and the sales orders: list pages, child lists per contact, single reads per order. */
const STREAMS = ['inventory.contacts', 'inventory.contact_persons', 'inventory.contact_comments', 'inventory.sales_orders'];

/** Requests of the sandbox's log that are not a list's pages: child lists and single-record reads. */
function perRecord(byEndpoint: Record<string, number>): string[] {
  return Object.keys(byEndpoint).filter((k) => k.includes('{'));
}

describe.each(DIALECTS)('the reconcile re-reads lists daily and children on its slower cycle, on %s', (dialect) => {
  let e: E2E;
  let org: string;
  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 10, organizations: 1 }, { sync: { reconcile_children_every_days: 7 } });
    expectExit(await e.sync('incremental', { streams: STREAMS }), 0);
    org = e.sandbox.organizations()[0]!.organization_id;
  }, 120_000);
  afterAll(async () => e?.close());

  /** A live person row renamed to an id the API does not have: a child deletion no parent change announced. */
  async function plantGhostPerson(id: string): Promise<void> {
    const p = e.warehouse.sql.param;
    const [row] = await e.query<{ contact_person_id: string }>(
      `SELECT contact_person_id FROM inventory_contact_persons WHERE organization_id = ${p(1)} AND _deleted_at IS NULL ` +
        'ORDER BY contact_person_id LIMIT 1',
      [org],
    );
    await e.query(
      `UPDATE inventory_contact_persons SET contact_person_id = ${p(1)} WHERE organization_id = ${p(2)} AND contact_person_id = ${p(3)}`,
      [id, org, row!.contact_person_id],
    );
  }

  async function ghostDeleted(id: string): Promise<boolean> {
    const p = e.warehouse.sql.param;
    const rows = await e.query<{ d: unknown }>(
      `SELECT _deleted_at AS d FROM inventory_contact_persons WHERE organization_id = ${p(1)} AND contact_person_id = ${p(2)}`,
      [org, id],
    );
    return rows[0]!.d !== null;
  }

  it('the first sync counts as the children re-read: a day on, a reconcile sends list pages only and marks deletions', async () => {
    const streams = await e.query<{ stream: string; children_reread_at: string | null }>(
      `SELECT stream, children_reread_at FROM _svcsync_streams WHERE stream = 'inventory.contacts'`,
    );
    expect(streams[0]!.children_reread_at).not.toBeNull();
    await plantGhostPerson('ghost-1');
    e.sandbox.advanceClock(DAY);
    const mutation = e.sandbox.mutate({ delete: 2, streams: ['inventory.sales_orders', 'inventory.contacts'] });
    expect(mutation.deleted).toBeGreaterThan(0);
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
    const log = e.sandbox.requestLog();
    expect(perRecord(log.byEndpoint)).toEqual([]);
    expect(log.byEndpoint['GET /inventory/v1/contacts']).toBeGreaterThan(0);
    // Top-level deletions are found from the list pages, as on every reconcile.
    for (const stream of ['sales_orders', 'contacts'])
      expect(await e.liveIds(org, 'inventory', stream)).toEqual(truthIds(e.sandbox, org, 'inventory', stream));
    // The ghost child waits for the slower cycle.
    expect(await ghostDeleted('ghost-1')).toBe(false);
  });

  it("a week after the first sync, the reconcile re-reads every contact's persons and marks the ghost deleted", async () => {
    e.sandbox.advanceClock(6 * DAY);
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
    const log = e.sandbox.requestLog();
    const contacts = truthIds(e.sandbox, org, 'inventory', 'contacts').length;
    expect(log.byEndpoint['GET /inventory/v1/contacts/{id}/contactpersons']).toBe(contacts);
    expect(await ghostDeleted('ghost-1')).toBe(true);
    expect(await e.liveIds(org, 'inventory', 'contact_persons')).toEqual(truthIds(e.sandbox, org, 'inventory', 'contact_persons'));
    // The next day's reconcile is back to list pages.
    e.sandbox.advanceClock(DAY);
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
    expect(perRecord(e.sandbox.requestLog().byEndpoint)).toEqual([]);
  });

  it('sync --reconcile --deep re-reads the children whether or not the cycle is due', async () => {
    await plantGhostPerson('ghost-2');
    e.sandbox.advanceClock(60_000);
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('reconcile', { streams: STREAMS, deep: true }), 0);
    expect(perRecord(e.sandbox.requestLog().byEndpoint).length).toBeGreaterThan(0);
    expect(await ghostDeleted('ghost-2')).toBe(true);
  });
});

describe.each(DIALECTS)('a child deleted without its parent changing (variant childChangesKeepParent), on %s', (dialect) => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 10, organizations: 1, variants: { childChangesKeepParent: true } });
    expectExit(await e.sync('incremental', { streams: STREAMS }), 0);
  }, 120_000);
  afterAll(async () => e?.close());

  it('is missed by incremental runs and the daily reconcile, and marked deleted by the children cycle when due', async () => {
    const org = e.sandbox.organizations()[0]!.organization_id;
    const truth = (): string[] => truthIds(e.sandbox, org, 'inventory', 'contact_persons');
    e.sandbox.advanceClock(DAY);
    expect(e.sandbox.mutate({ delete: 1, streams: ['inventory.contact_persons'] }).deleted).toBe(1);
    expectExit(await e.sync('incremental', { streams: STREAMS }), 0);
    expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
    expect((await e.liveIds(org, 'inventory', 'contact_persons')).length).toBe(truth().length + 1);
    e.sandbox.advanceClock(6 * DAY);
    expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
    expect(await e.liveIds(org, 'inventory', 'contact_persons')).toEqual(truth());
  });
});
