import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, truthIds, type E2E } from '../helpers/e2e.js';
import { cycleDayOf } from '../../src/extractors/children-cycle.js';

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
    // The ghost rows planted by hand below are children that changed while their contact did not:
    // the cycle's checks of A25 would rightly take them for a server that does not touch parents
    // (the next describe) and re-read every contact's lists. Trusted here, to follow the cycle alone.
    const sync = { reconcile_children_every_days: 7, shortcuts: { child_changes_touch_parent: 'trust' } };
    e = await startE2E(dialect, { scale: 10, organizations: 1 }, { sync });
    expectExit(await e.sync('incremental', { streams: STREAMS }), 0);
    org = e.sandbox.organizations()[0]!.organization_id;
  }, 120_000);
  afterAll(async () => e?.close());

  /**
   * A live person row renamed to an id the API does not have: a child deletion no parent change
   * announced. Returns the contact it belongs to.
   */
  async function plantGhostPerson(id: string): Promise<string> {
    const p = e.warehouse.sql.param;
    const [row] = await e.query<{ contact_person_id: string; contact_id: string }>(
      `SELECT contact_person_id, contact_id FROM inventory_contact_persons WHERE organization_id = ${p(1)} AND _deleted_at IS NULL ` +
        'ORDER BY contact_person_id LIMIT 1',
      [org],
    );
    await e.query(
      `UPDATE inventory_contact_persons SET contact_person_id = ${p(1)} WHERE organization_id = ${p(2)} AND contact_person_id = ${p(3)}`,
      [id, org, row!.contact_person_id],
    );
    return row!.contact_id;
  }

  async function ghostDeleted(id: string): Promise<boolean> {
    const p = e.warehouse.sql.param;
    const rows = await e.query<{ d: unknown }>(
      `SELECT _deleted_at AS d FROM inventory_contact_persons WHERE organization_id = ${p(1)} AND contact_person_id = ${p(2)}`,
      [org, id],
    );
    return rows[0]!.d !== null;
  }

  /** The live contacts whose day of the 7-day cycle is the sandbox's current UTC day. */
  const dueToday = (): string[] =>
    truthIds(e.sandbox, org, 'inventory', 'contacts').filter((id) => cycleDayOf(id, 7) === Math.floor(e.sandbox.now() / DAY) % 7);

  let ghostContact = '';
  let reread = 0;

  it("counts the first sync as the children's re-read: a day on, a reconcile reads list pages and a seventh of child lists", async () => {
    const streams = await e.query<{ stream: string; children_reread_at: string | null }>(
      `SELECT stream, children_reread_at FROM _svcsync_streams WHERE stream = 'inventory.contacts'`,
    );
    expect(streams[0]!.children_reread_at).not.toBeNull();
    ghostContact = await plantGhostPerson('ghost-1');
    e.sandbox.advanceClock(DAY);
    const mutation = e.sandbox.mutate({ delete: 2, streams: ['inventory.sales_orders', 'inventory.contacts'] });
    expect(mutation.deleted).toBeGreaterThan(0);
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
    const log = e.sandbox.requestLog();
    // Child lists of the contacts due today only; no single reads (nothing changed).
    expect(perRecord(log.byEndpoint).filter((k) => !k.includes('/contacts/{id}/'))).toEqual([]);
    const due = dueToday();
    expect(log.byEndpoint['GET /inventory/v1/contacts/{id}/contactpersons'] ?? 0).toBe(due.length);
    expect(log.byEndpoint['GET /inventory/v1/contacts/{id}/comments'] ?? 0).toBe(due.length);
    expect(due.length).toBeLessThan(truthIds(e.sandbox, org, 'inventory', 'contacts').length);
    reread += due.length;
    expect(log.byEndpoint['GET /inventory/v1/contacts']).toBeGreaterThan(0);
    // Top-level deletions are found from the list pages, as on every reconcile.
    for (const stream of ['sales_orders', 'contacts'])
      expect(await e.liveIds(org, 'inventory', stream)).toEqual(truthIds(e.sandbox, org, 'inventory', stream));
    // The ghost child is found on its contact's day of the cycle, not before.
    expect(await ghostDeleted('ghost-1')).toBe(due.includes(ghostContact));
    // A second reconcile the same day re-reads no child list.
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
    expect(perRecord(e.sandbox.requestLog().byEndpoint)).toEqual([]);
  });

  it("over a week of nightly reconciles every contact's persons are re-read once, and the ghost is marked deleted", async () => {
    for (let night = 2; night <= 7; night++) {
      e.sandbox.advanceClock(DAY);
      e.sandbox.resetRequestLog();
      expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
      const n = e.sandbox.requestLog().byEndpoint['GET /inventory/v1/contacts/{id}/contactpersons'] ?? 0;
      expect(n).toBe(dueToday().length);
      reread += n;
    }
    expect(reread).toBe(truthIds(e.sandbox, org, 'inventory', 'contacts').length);
    expect(await ghostDeleted('ghost-1')).toBe(true);
    expect(await e.liveIds(org, 'inventory', 'contact_persons')).toEqual(truthIds(e.sandbox, org, 'inventory', 'contact_persons'));
  });

  it('sync --reconcile --deep re-reads the children whether or not the cycle is due', async () => {
    await plantGhostPerson('ghost-2');
    e.sandbox.advanceClock(60_000);
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('reconcile', { streams: STREAMS, deep: true }), 0);
    const contacts = truthIds(e.sandbox, org, 'inventory', 'contacts').length;
    expect(e.sandbox.requestLog().byEndpoint['GET /inventory/v1/contacts/{id}/contactpersons']).toBe(contacts);
    expect(await ghostDeleted('ghost-2')).toBe(true);
  });
});

describe.each(DIALECTS)('children that change without their parent changing (variant childChangesKeepParent), on %s', (dialect) => {
  let e: E2E;
  let org: string;
  beforeAll(async () => {
    e = await startE2E(
      dialect,
      { scale: 10, organizations: 1, variants: { childChangesKeepParent: true } },
      { sync: { reconcile_children_every_days: 7 } },
    );
    expectExit(await e.sync('incremental', { streams: STREAMS }), 0);
    org = e.sandbox.organizations()[0]!.organization_id;
  }, 120_000);
  afterAll(async () => e?.close());

  const contacts = (): number => truthIds(e.sandbox, org, 'inventory', 'contacts').length;

  it("are found by the next run's checks (A25): reported once, and every contact's lists are read in that run", async () => {
    e.sandbox.advanceClock(60_000);
    e.sandbox.mutate({ modify: '100%', delete: 1, streams: ['inventory.contact_persons'] });
    e.sandbox.resetRequestLog();
    const second = await e.sync('incremental', { streams: STREAMS });
    expectExit(second, 0);
    expect(await e.liveIds(org, 'inventory', 'contact_persons')).toEqual(truthIds(e.sandbox, org, 'inventory', 'contact_persons'));
    const notes = second.organizations.flatMap((o) => o.shortcuts ?? []);
    expect(notes.map((n) => [n.assumption, n.stream])).toEqual([['A25', 'inventory.contact_persons']]);
    expect(notes[0]!.evidence).toMatch(/did not change, yet its inventory.contact_persons list had/);
    // The checks' sample, then every contact's persons.
    expect(e.sandbox.requestLog().byEndpoint['GET /inventory/v1/contacts/{id}/contactpersons']).toBeGreaterThanOrEqual(contacts());
    const verdicts = await e.query<{ stream: string; state: string }>(
      `SELECT stream, state FROM _svcsync_shortcuts WHERE shortcut = 'child_changes_touch_parent' ORDER BY stream`,
    );
    expect(verdicts.find((v) => v.stream === 'inventory.contact_persons')?.state).toBe('refuted');
  });

  it("from then on every reconcile reads every contact's lists, and the finding is not reported again", async () => {
    e.sandbox.advanceClock(DAY);
    e.sandbox.mutate({ delete: 1, create: 1, streams: ['inventory.contact_persons'] });
    e.sandbox.resetRequestLog();
    const reconcile = await e.sync('reconcile', { streams: STREAMS });
    expectExit(reconcile, 0);
    expect(e.sandbox.requestLog().byEndpoint['GET /inventory/v1/contacts/{id}/contactpersons']).toBe(contacts());
    expect(await e.liveIds(org, 'inventory', 'contact_persons')).toEqual(truthIds(e.sandbox, org, 'inventory', 'contact_persons'));
    expect(reconcile.organizations.flatMap((o) => o.shortcuts ?? [])).toEqual([]);
  });
});

describe.each(DIALECTS)(
  'a reconcile skips the children cycle of parents whose children the checks found to signal them (A25 trusted), on %s',
  (dialect) => {
    it('reads the list pages and no child list; with --deep, every child list', async () => {
      const e = await startE2E(dialect, { scale: 10, organizations: 1 }, { sync: { reconcile_children_every_days: 7 } });
      try {
        expectExit(await e.sync('incremental', { streams: STREAMS }), 0);
        const org = e.sandbox.organizations()[0]!.organization_id;
        const now = new Date(e.sandbox.now()).toISOString();
        // The verdict the checks reach after three agreeing samples, for both child streams of the contacts.
        await e.query(`DELETE FROM _svcsync_shortcuts WHERE shortcut = 'child_changes_touch_parent'`, []);
        for (const stream of ['inventory.contact_persons', 'inventory.contact_comments']) {
          const p = e.warehouse.sql.param;
          await e.query(
            'INSERT INTO _svcsync_shortcuts (connection, organization_id, shortcut, stream, state, checks, since_check, ' +
              'first_checked_at, last_checked_at, updated_at) ' +
              `VALUES (${p(1)}, ${p(2)}, 'child_changes_touch_parent', ${p(3)}, 'trusted', 3, 0, ${p(4)}, ${p(5)}, ${p(6)})`,
            ['e2e', org, stream, now, now, now],
          );
        }
        e.sandbox.advanceClock(DAY);
        e.sandbox.mutate({ delete: 1, streams: ['inventory.contacts'] });
        e.sandbox.resetRequestLog();
        expectExit(await e.sync('reconcile', { streams: STREAMS }), 0);
        const log = e.sandbox.requestLog().byEndpoint;
        expect(log['GET /inventory/v1/contacts']).toBeGreaterThan(0);
        expect(log['GET /inventory/v1/contacts/{id}/contactpersons'] ?? 0).toBe(0);
        expect(log['GET /inventory/v1/contacts/{id}/comments'] ?? 0).toBe(0);
        expect(await e.liveIds(org, 'inventory', 'contacts')).toEqual(truthIds(e.sandbox, org, 'inventory', 'contacts'));
        // --deep still reads every contact's lists.
        e.sandbox.resetRequestLog();
        expectExit(await e.sync('reconcile', { streams: STREAMS, deep: true }), 0);
        expect(e.sandbox.requestLog().byEndpoint['GET /inventory/v1/contacts/{id}/contactpersons']).toBe(
          truthIds(e.sandbox, org, 'inventory', 'contacts').length,
        );
      } finally {
        await e.close();
      }
    }, 120_000);
  },
);
