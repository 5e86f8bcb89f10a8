import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, type E2E } from '../helpers/e2e.js';

/** Sandbox endpoints of the lists svcsync asks to sort newest first. */
const SORTED_LISTS = [
  'GET /inventory/v1/salesorders',
  'GET /inventory/v1/contacts',
  'GET /inventory/v1/vendorcredits',
  'GET /books/v3/vendorcredits',
  'GET /billing/v1/events',
];

describe.each(DIALECTS)('incremental sync on %s', (dialect) => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 15 });
    expectExit(await e.sync(), 0);
  }, 120_000);
  afterAll(async () => e?.close());

  it('after the first sync, checks three unchanged parents per child stream (A25) once: a new connection', async () => {
    e.sandbox.advanceClock(5 * 60_000);
    e.sandbox.resetRequestLog();
    expectExit(await e.sync(), 0);
    const log = e.sandbox.requestLog();
    const orgs = e.sandbox.organizations().length;
    const perRecord = Object.entries(log.byEndpoint).filter(([k]) => k.includes('{') && k !== 'GET /invoice/v3/projects/{id}/tasks');
    // A books credit's record carries both of its lists (A48): one read checks both.
    expect(Object.fromEntries(perRecord)).toEqual({
      'GET /inventory/v1/contacts/{id}/contactpersons': 3 * orgs,
      'GET /inventory/v1/contacts/{id}/comments': 3 * orgs,
      'GET /inventory/v1/vendorcredits/{id}/refunds': 3 * orgs,
      'GET /books/v3/vendorcredits/{id}': 3 * orgs,
    });
    const verdicts = await e.query<{ state: string; n: number | string }>(
      `SELECT state, COUNT(*) AS n FROM _svcsync_shortcuts WHERE shortcut = 'child_changes_touch_parent' GROUP BY state`,
    );
    // persons, comments, inventory refunds, books refunds and credited bills: trusted, in every organization.
    expect(verdicts.map((v) => [v.state, Number(v.n)])).toEqual([['trusted', 5 * orgs]]);
  });

  it('reads one page per sorted list and nothing per record when nothing changed', async () => {
    e.sandbox.advanceClock(10 * 60_000);
    e.sandbox.resetRequestLog();
    const summary = await e.sync();
    expectExit(summary, 0);
    const log = e.sandbox.requestLog();
    const orgs = e.sandbox.organizations().length;
    for (const endpoint of SORTED_LISTS) expect(log.byEndpoint[endpoint], endpoint).toBe(orgs);
    // No single-record completions, and no child lists of parents that have a change field:
    // none changed. Tasks are read for every project, which has no change field.
    const perRecord = Object.entries(log.byEndpoint).filter(([k]) => k.includes('{') && k !== 'GET /invoice/v3/projects/{id}/tasks');
    expect(perRecord).toEqual([]);
    const projects = e.sandbox.organizations().reduce((a, o) => a + e.sandbox.count(o.organization_id, 'invoice', 'projects'), 0);
    expect(log.byEndpoint['GET /invoice/v3/projects/{id}/tasks']).toBe(projects);
    // Nothing changed, so no stream changed a row: not the incremental ones, nor the full-refresh
    // ones and child lists, which rewrite every row they read (to find deletions) and change none.
    const streams = summary.organizations.flatMap((o) => o.streams);
    expect(streams.filter((s) => s.status === 'ok').length).toBe(streams.length);
    expect(streams.filter((s) => s.written !== 0).map((s) => `${s.stream}: ${s.written}`)).toEqual([]);
    const fullRefresh = streams.filter((s) =>
      ['books.users', 'inventory.currencies', 'invoice.projects', 'invoice.tasks'].includes(s.stream),
    );
    expect(fullRefresh.length).toBe(4 * orgs);
    for (const s of fullRefresh) expect(s.records, s.stream).toBeGreaterThan(0);
  });

  it('a run for one known organization (a daemon or worker job, sync --org) does not list the organizations again', async () => {
    const org = e.sandbox.organizations()[1]!.organization_id;
    e.sandbox.advanceClock(60_000);
    e.sandbox.resetRequestLog();
    const summary = await e.sync('incremental', { organization: org });
    expectExit(summary, 0);
    expect(summary.organizations.map((o) => [o.organizationId, o.families.length])).toEqual([[org, 4]]);
    const log = e.sandbox.requestLog();
    expect(Object.keys(log.byEndpoint).filter((k) => k.endsWith('/organizations'))).toEqual([]);
    expect(Object.keys(log.byOrganization)).toEqual([org]);
    // An organization discovery has not recorded is looked up as before.
    await e.query('DELETE FROM _svcsync_organizations');
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('incremental', { organization: org }), 0);
    expect(Object.keys(e.sandbox.requestLog().byEndpoint).filter((k) => k.endsWith('/organizations')).length).toBe(4);
  });

  it('discovery alone (the organizations job: no streams) records the organizations and leases none', async () => {
    await e.query('DELETE FROM _svcsync_leases');
    e.sandbox.resetRequestLog();
    const summary = await e.sync('incremental', { streams: [] });
    expectExit(summary, 0);
    expect(summary.organizations).toEqual([]);
    expect(await e.query('SELECT organization_id FROM _svcsync_leases')).toEqual([]);
    const log = e.sandbox.requestLog();
    // A token, then one organization list per family: nothing organization-scoped.
    expect(Object.keys(log.byEndpoint).filter((k) => !k.endsWith('/organizations') && !k.includes('/oauth/'))).toEqual([]);
    expect(log.byOrganization).toEqual({});
    const known = await e.query<{ organization_id: string }>('SELECT DISTINCT organization_id FROM _svcsync_organizations');
    expect(known.length).toBe(e.sandbox.organizations().length);
  });

  it('after records are modified and created, writes them and only them, and equals the truth', async () => {
    e.sandbox.advanceClock(10 * 60_000);
    const mutation = e.sandbox.mutate({ modify: 3, create: 2 });
    expect(mutation.modified + mutation.created).toBeGreaterThan(0);
    e.sandbox.resetRequestLog();
    const summary = await e.sync();
    expectExit(summary, 0);
    await expectEqualsTruth(e, { ignoreDeletes: true });
    // Sales orders: every changed one had its single record read again, no more.
    const log = e.sandbox.requestLog();
    const changedOrders =
      (mutation.streams['inventory.sales_orders']?.modified ?? 0) + (mutation.streams['inventory.sales_orders']?.created ?? 0);
    expect(log.byEndpoint['GET /inventory/v1/salesorders/{id}'] ?? 0).toBe(changedOrders);
  });

  it('marks deleted records after --reconcile and then equals the truth exactly', async () => {
    e.sandbox.advanceClock(10 * 60_000);
    const mutation = e.sandbox.mutate({ delete: 2 });
    expect(mutation.deleted).toBeGreaterThan(0);
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e, { ignoreDeletes: true });
    expectExit(await e.sync('reconcile'), 0);
    await expectEqualsTruth(e);
    const deleted = await e.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM inventory_sales_orders WHERE _deleted_at IS NOT NULL');
    expect(Number(deleted[0]!.n)).toBeGreaterThan(0);
  });
});
