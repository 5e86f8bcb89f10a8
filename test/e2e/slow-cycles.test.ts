import { afterEach, describe, expect, it } from 'vitest';
import { cycleDayOf } from '../../src/extractors/children-cycle.js';
import type { Family } from '../../sandbox/index.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, truthIds, type E2E } from '../helpers/e2e.js';

const DAY = 86_400_000;
const CREDITS = ['books.vendor_credits', 'books.vendor_credit_refunds', 'books.vendor_credit_bills'];
const PROJECTS = ['invoice.projects', 'invoice.tasks'];
const DETAIL = 'GET /books/v3/vendorcredits/{id}';
const REFUNDS = 'GET /books/v3/vendorcredits/{id}/refunds';
const BILLS = 'GET /books/v3/vendorcredits/{id}/bills';
const TASKS = 'GET /invoice/v3/projects/{id}/tasks';

/**
 * A live child row renamed to an id the API does not have: a child deletion no parent change
 * announced, found only when its parent's child lists (or the record carrying them) are re-read.
 */
async function plantGhost(e: E2E, table: string, id: string, parentKey: string, org: string): Promise<string> {
  const p = e.warehouse.sql.param;
  const [row] = await e.query<{ id: string; parent: string }>(
    `SELECT ${id} AS id, ${parentKey} AS parent FROM ${table} ` +
      `WHERE organization_id = ${p(1)} AND _deleted_at IS NULL ORDER BY ${id} LIMIT 1`,
    [org],
  );
  await e.query(`UPDATE ${table} SET ${id} = ${p(1)} WHERE organization_id = ${p(2)} AND ${id} = ${p(3)}`, [
    `ghost-${table}`,
    org,
    row!.id,
  ]);
  return String(row!.parent);
}

async function ghostDeleted(e: E2E, table: string, id: string): Promise<boolean> {
  const p = e.warehouse.sql.param;
  const rows = await e.query<{ d: unknown }>(`SELECT _deleted_at AS d FROM ${table} WHERE ${id} = ${p(1)}`, [`ghost-${table}`]);
  return rows[0]!.d !== null;
}

/** The parents of a stream whose day of an `every`-day cycle is the sandbox's current UTC day. */
function dueToday(e: E2E, org: string, family: Family, stream: string, every: number): string[] {
  return truthIds(e.sandbox, org, family, stream).filter((id) => cycleDayOf(id, every) === Math.floor(e.sandbox.now() / DAY) % every);
}

/** How many of the credits have entries in the field (the truth's record). */
function withEntries(e: E2E, org: string, credits: readonly string[], field: string): number {
  const due = new Set(credits);
  return e.sandbox
    .truth(org, 'books', 'vendor_credits')
    .filter((c) => due.has(String(c['vendor_credit_id'])) && (c[field] as unknown[]).length > 0).length;
}

const count = (e: E2E, endpoint: string): number => e.sandbox.requestLog().byEndpoint[endpoint] ?? 0;

describe.each(DIALECTS)('the slow cycles, on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it.each([
    ['the record carries its lists whole (A48)', 0],
    ['the record sends its lists empty (the other reading)', 1],
  ])(
    "a nightly reconcile re-reads the due books credits' refunds and bills through each credit's own record: %s",
    async (_reading, dropped) => {
      e = await startE2E(
        dialect,
        { scale: 20, organizations: 1, variants: { embeddedChildrenDropped: dropped } },
        // The ghost refund planted by hand is a child that changed while its credit did not: the
        // cycle's checks of A25 would take it for a server that does not touch parents
        // (test/e2e/reconcile-cycle.test.ts). Trusted here, to follow the cycle alone.
        { sync: { reconcile_children_every_days: 3, shortcuts: { child_changes_touch_parent: 'trust' } } },
      );
      const org = e.sandbox.organizations()[0]!.organization_id;
      expectExit(await e.sync('incremental', { streams: CREDITS }), 0);
      const ghostOf = await plantGhost(e, 'books_vendor_credit_refunds', 'vendor_credit_refund_id', 'vendor_credit_id', org);
      const seen = new Set<string>();
      for (let night = 1; night <= 3; night++) {
        e.sandbox.advanceClock(DAY);
        e.sandbox.resetRequestLog();
        expectExit(await e.sync('reconcile', { streams: CREDITS }), 0);
        const due = dueToday(e, org, 'books', 'vendor_credits', 3);
        due.forEach((id) => seen.add(id));
        // One single read per due credit; its lists only where the record cannot prove them whole.
        expect(count(e, DETAIL)).toBe(due.length);
        // (a credit with no entries proves its empty lists whole by a zero total).
        expect(count(e, REFUNDS)).toBe(dropped ? withEntries(e, org, due, 'vendor_credit_refunds') : 0);
        expect(count(e, BILLS)).toBe(dropped ? withEntries(e, org, due, 'bills_credited') : 0);
        expect(await ghostDeleted(e, 'books_vendor_credit_refunds', 'vendor_credit_refund_id')).toBe(seen.has(ghostOf));
      }
      expect(seen.size).toBe(truthIds(e.sandbox, org, 'books', 'vendor_credits').length);
      for (const stream of ['vendor_credit_refunds', 'vendor_credit_bills'])
        expect(await e.liveIds(org, 'books', stream)).toEqual(truthIds(e.sandbox, org, 'books', stream));
    },
    120_000,
  );

  it("with --cycle, a tree read whole re-reads a share of its projects' tasks a day; a plain sync reads them all", async () => {
    e = await startE2E(dialect, { scale: 20, organizations: 1 }, { sync: { whole_read_every_days: 3 } });
    const org = e.sandbox.organizations()[0]!.organization_id;
    const projects = truthIds(e.sandbox, org, 'invoice', 'projects');
    expectExit(await e.sync('incremental', { streams: PROJECTS }), 0);
    const ghostOf = await plantGhost(e, 'invoice_tasks', 'task_id', 'project_id', org);
    const seen = new Set<string>();
    for (let day = 1; day <= 3; day++) {
      e.sandbox.advanceClock(DAY);
      e.sandbox.resetRequestLog();
      expectExit(await e.sync('incremental', { streams: PROJECTS, cycle: true }), 0);
      const due = dueToday(e, org, 'invoice', 'projects', 3);
      due.forEach((id) => seen.add(id));
      expect(count(e, TASKS)).toBe(due.length);
      expect(await ghostDeleted(e, 'invoice_tasks', 'task_id')).toBe(seen.has(ghostOf));
      // A second run the same day reads the tasks of no project whose record is unchanged.
      e.sandbox.resetRequestLog();
      expectExit(await e.sync('incremental', { streams: PROJECTS, cycle: true }), 0);
      expect(count(e, TASKS)).toBe(0);
    }
    expect(seen.size).toBe(projects.length);
    expect(await e.liveIds(org, 'invoice', 'tasks')).toEqual(truthIds(e.sandbox, org, 'invoice', 'tasks'));
    // A task changed under a project whose record did not change: a plain sync reads every project's tasks.
    e.sandbox.mutate({ modify: 3, create: 2, delete: 2, families: ['invoice'], streams: ['tasks'] });
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('incremental', { streams: PROJECTS }), 0);
    expect(count(e, TASKS)).toBe(projects.length);
    expect(await e.liveIds(org, 'invoice', 'tasks')).toEqual(truthIds(e.sandbox, org, 'invoice', 'tasks'));
  }, 120_000);

  it('events the server deletes (the other reading of A51) are marked deleted by a hand-run sync --reconcile', async () => {
    e = await startE2E(dialect, { scale: 20, organizations: 1, variants: { eventsDeleted: true } });
    const org = e.sandbox.organizations()[0]!.organization_id;
    expectExit(await e.sync('incremental', { streams: ['billing.events'] }), 0);
    e.sandbox.advanceClock(60_000);
    expect(e.sandbox.mutate({ delete: 3, families: ['billing'], streams: ['events'] }).deleted).toBe(3);
    expectExit(await e.sync('incremental', { streams: ['billing.events'] }), 0);
    expect((await e.liveIds(org, 'billing', 'events')).length).toBe(truthIds(e.sandbox, org, 'billing', 'events').length + 3);
    expectExit(await e.sync('reconcile', { streams: ['billing.events'] }), 0);
    expect(await e.liveIds(org, 'billing', 'events')).toEqual(truthIds(e.sandbox, org, 'billing', 'events'));
  }, 120_000);
});
