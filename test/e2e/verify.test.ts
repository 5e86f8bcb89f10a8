import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { runVerify, type StreamVerification, type VerifySummary } from '../../src/extractors/verify.js';
import { verificationsOfRun } from '../../src/state/verify.js';
import { DIALECTS } from '../helpers/dialects.js';
import { ID_FIELDS, expectExit, startE2E, truthIds, type E2E, type Family } from '../helpers/e2e.js';

const PER_PAGE = 5;

/**
 * The streams read from a list of their own (no parent id in the path), written out here
 * rather than derived from the catalog, so a wrong catalog entry cannot make the test agree.
 */
const TOP_LEVEL: Array<[Family, string]> = [
  ['books', 'users'],
  ['books', 'vendor_credits'],
  ['books', 'webhooks'],
  ['inventory', 'currencies'],
  ['inventory', 'contacts'],
  ['inventory', 'sales_orders'],
  ['inventory', 'vendor_credits'],
  ['invoice', 'projects'],
  ['billing', 'plans'],
  ['billing', 'recurring_expenses'],
  ['billing', 'events'],
];
const PER_PARENT = [
  'books.vendor_credit_refunds',
  'books.vendor_credit_bills',
  'inventory.contact_persons',
  'inventory.contact_comments',
  'inventory.vendor_credit_refunds',
  'invoice.tasks',
];
const FAMILIES = 4;

describe.each(DIALECTS)('svcsync verify on %s', (dialect) => {
  let e: E2E;
  const log = new CapturedLog();
  const verify = (
    extra: { maxRequests?: number; streams?: string[]; organization?: string; children?: boolean; sample?: number } = {},
  ): Promise<VerifySummary> =>
    runVerify({
      config: e.config,
      warehouse: e.warehouse,
      clock: e.sandbox.clock,
      logger: createLogger({ level: 'warn', secrets: e.secrets, destination: log }),
      secrets: e.secrets,
      signal: new AbortController().signal,
      ...extra,
    });
  const find = (s: VerifySummary, org: string, stream: string): StreamVerification => {
    const found = s.streams.find((x) => x.organizationId === org && x.stream === stream);
    if (!found) throw new Error(`${stream} of ${org} not in the report`);
    return found;
  };
  /** Everything verify must leave alone: pass state, cursors, and data rows (their _synced_at too). */
  const snapshot = async (): Promise<unknown> => ({
    streams: await e.query('SELECT * FROM _svcsync_streams ORDER BY connection, organization_id, stream'),
    pending: await e.query('SELECT COUNT(*) AS n FROM _svcsync_pending'),
    runs: await e.query('SELECT COUNT(*) AS n FROM _svcsync_runs'),
    orgs: await e.query('SELECT * FROM _svcsync_organizations ORDER BY family, organization_id'),
    data: await Promise.all(
      [...TOP_LEVEL.map(([f, s]) => `${f}_${s}`), 'inventory_organizations', 'inventory_sales_orders__line_items'].map((t) =>
        e.query(`SELECT COUNT(*) AS n, MAX(_synced_at) AS synced, SUM(CASE WHEN _deleted_at IS NULL THEN 0 ELSE 1 END) AS gone FROM ${t}`),
      ),
    ),
  });

  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 12 }, { sync: { per_page: PER_PAGE } });
    expectExit(await e.sync(), 0);
  }, 120_000);
  afterAll(async () => e?.close());

  it('after a full sync every list agrees (exit 0), reading exactly the list pages and writing no data', async () => {
    const before = await snapshot();
    e.sandbox.resetRequestLog();
    const s = await verify();
    expect(
      s.exitCode,
      JSON.stringify(
        s.streams.filter((x) => x.status !== 'agree'),
        null,
        2,
      ),
    ).toBe(0);
    const orgs = e.sandbox.organizations();
    expect(s.streams.length).toBe(orgs.length * TOP_LEVEL.length);
    let pages = 0;
    for (const org of orgs) {
      for (const [family, stream] of TOP_LEVEL) {
        const r = find(s, org.organization_id, `${family}.${stream}`);
        const n = e.sandbox.count(org.organization_id, family, stream);
        expect(r.status).toBe('agree');
        expect([r.apiCount, r.warehouseCount, r.missingCount, r.extraCount]).toEqual([n, n, 0, 0]);
        const expected = Math.max(1, Math.ceil(n / PER_PAGE));
        expect(r.pages, `${family}.${stream} pages`).toBe(expected);
        expect(r.requests).toBe(expected);
        pages += expected;
      }
    }
    expect(pages).toBeGreaterThan(orgs.length * TOP_LEVEL.length); // some lists span several pages
    // Requests: the organization list of each family, then list pages; nothing else.
    expect(s.requests).toBe(pages + FAMILIES);
    const sent = e.sandbox.requestLog().byEndpoint;
    const gets = Object.entries(sent).filter(([k]) => k.startsWith('GET '));
    expect(gets.reduce((a, [, n]) => a + n, 0)).toBe(s.requests);
    expect(gets.filter(([k]) => k.includes('{'))).toEqual([]);
    expect(sent['GET /inventory/v1/salesorders']).toBe(
      orgs.reduce((a, o) => a + Math.max(1, Math.ceil(e.sandbox.count(o.organization_id, 'inventory', 'sales_orders') / PER_PAGE)), 0),
    );
    // Child streams read per parent are named as not checked.
    expect(s.skipped.map((x) => x.stream).sort()).toEqual([...PER_PARENT].sort());
    expect(await snapshot()).toEqual(before);
    // One row per organization and stream, all agreeing.
    const rows = await verificationsOfRun(e.warehouse.db, s.runId);
    expect(rows.length).toBe(orgs.length * TOP_LEVEL.length);
    expect(new Set(rows.map((r) => r.status))).toEqual(new Set(['agree']));
    const so = rows.find((r) => r.organization_id === orgs[0]!.organization_id && r.stream === 'inventory.sales_orders')!;
    expect(Number(so.api_count)).toBe(e.sandbox.count(orgs[0]!.organization_id, 'inventory', 'sales_orders'));
    expect(JSON.parse(so.extra_examples!)).toEqual([]);
  });

  it('records deleted behind its back are reported as extra (exit 4) and kept in _svcsync_verify', async () => {
    e.sandbox.advanceClock(10 * 60_000);
    const mutation = e.sandbox.mutate({ delete: 2 });
    expect(mutation.deleted).toBeGreaterThan(0);
    const s = await verify();
    expect(s.exitCode).toBe(4);
    let extras = 0;
    for (const org of e.sandbox.organizations()) {
      for (const [family, stream] of TOP_LEVEL) {
        const live = await e.liveIds(org.organization_id, family, stream);
        const truth = truthIds(e.sandbox, org.organization_id, family, stream);
        const gone = live.filter((id) => !truth.includes(id)).sort();
        const r = find(s, org.organization_id, `${family}.${stream}`);
        expect(r.status, `${family}.${stream}`).toBe(gone.length ? 'differ' : 'agree');
        expect(r.extraCount).toBe(gone.length);
        expect([...r.extra].sort()).toEqual(gone.slice(0, 10));
        expect(r.missingCount).toBe(0);
        expect([r.apiCount, r.warehouseCount]).toEqual([truth.length, live.length]);
        extras += gone.length;
      }
    }
    expect(extras).toBeGreaterThan(0);
    const rows = await verificationsOfRun(e.warehouse.db, s.runId);
    const differ = rows.filter((r) => r.status === 'differ');
    expect(differ.length).toBe(s.streams.filter((x) => x.status === 'differ').length);
    expect(differ.reduce((a, r) => a + Number(r.extra_count), 0)).toBe(extras);
    for (const r of differ) {
      const reported = find(s, r.organization_id, r.stream);
      expect(JSON.parse(r.extra_examples!)).toEqual(reported.extra);
      expect(Number(r.missing_count)).toBe(0);
    }
  });

  it('rows removed from the warehouse by hand are reported missing; sync --reconcile heals both and verify agrees again', async () => {
    const org = e.sandbox.organizations().find((o) => e.sandbox.count(o.organization_id, 'inventory', 'sales_orders') >= 2)!;
    const ids = (await e.liveIds(org.organization_id, 'inventory', 'sales_orders'))
      .filter((id) => truthIds(e.sandbox, org.organization_id, 'inventory', 'sales_orders').includes(id))
      .slice(0, 2);
    expect(ids.length).toBe(2);
    const ph = (i: number): string => (dialect === 'postgres' ? `$${i}` : '?');
    await e.query(`DELETE FROM inventory_sales_orders WHERE organization_id = ${ph(1)} AND salesorder_id IN (${ph(2)}, ${ph(3)})`, [
      org.organization_id,
      ...ids,
    ]);
    const s = await verify({ streams: ['inventory.sales_orders'], organization: org.organization_id });
    expect(s.exitCode).toBe(4);
    expect(s.streams.length).toBe(1);
    const r = find(s, org.organization_id, 'inventory.sales_orders');
    expect(r.status).toBe('differ');
    expect(r.missing).toEqual([...ids].sort());
    expect(r.missingCount).toBe(2);
    // Other organizations and streams were not read.
    expect(s.requests).toBe(r.requests + FAMILIES);

    expectExit(await e.sync('reconcile'), 0);
    const healed = await verify();
    expect(
      healed.exitCode,
      JSON.stringify(
        healed.streams.filter((x) => x.status !== 'agree'),
        null,
        2,
      ),
    ).toBe(0);
    expect(healed.streams.every((x) => x.status === 'agree')).toBe(true);
    expect(find(healed, org.organization_id, 'inventory.sales_orders').apiCount).toBe(
      truthIds(e.sandbox, org.organization_id, 'inventory', 'sales_orders').length,
    );
  });

  it("--children reads every parent's child list: agrees, then finds a child removed by hand and one added at the source", async () => {
    const orgs = e.sandbox.organizations();
    const all = await verify({ children: true });
    expect(
      all.exitCode,
      JSON.stringify(
        all.streams.filter((x) => x.status !== 'agree'),
        null,
        2,
      ),
    ).toBe(0);
    expect(all.skipped).toEqual([]);
    expect(all.streams.length).toBe(orgs.length * (TOP_LEVEL.length + PER_PARENT.length));
    for (const org of orgs)
      for (const name of PER_PARENT) {
        const [family, stream] = name.split('.') as [Family, string];
        const r = find(all, org.organization_id, name);
        const n = e.sandbox.count(org.organization_id, family, stream);
        expect([r.status, r.apiCount, r.warehouseCount, r.missingCount, r.extraCount], name).toEqual(['agree', n, n, 0, 0]);
      }

    const org = orgs.find((o) => e.sandbox.count(o.organization_id, 'invoice', 'tasks') >= 2)!.organization_id;
    const [removed] = (await e.liveIds(org, 'invoice', 'tasks')).sort();
    const ph = (i: number): string => (dialect === 'postgres' ? `$${i}` : '?');
    await e.query(`DELETE FROM invoice_tasks WHERE organization_id = ${ph(1)} AND task_id = ${ph(2)}`, [org, removed]);
    const before = new Set(truthIds(e.sandbox, org, 'invoice', 'tasks'));
    const created = e.sandbox.mutate({ create: 1, streams: ['invoice.tasks'], organizationId: org });
    expect(created.created).toBe(1);
    const added = truthIds(e.sandbox, org, 'invoice', 'tasks').filter((id) => !before.has(id));
    expect(added.length).toBe(1);
    const s = await verify({ children: true, streams: ['invoice.tasks'], organization: org });
    expect(s.exitCode).toBe(4);
    const r = find(s, org, 'invoice.tasks');
    expect(r.status).toBe('differ');
    expect(r.missing).toEqual([removed!, added[0]!].sort());
    expect(r.extraCount).toBe(0);
    // Every project's task list was read, within the request count it reports.
    const projects = e.sandbox.count(org, 'invoice', 'projects');
    expect(r.requests).toBeGreaterThanOrEqual(projects);

    // A sample reads that many parents' lists only.
    e.sandbox.resetRequestLog();
    const sampled = await verify({ children: true, sample: 2, streams: ['invoice.tasks'], organization: org });
    const t = find(sampled, org, 'invoice.tasks');
    expect(t.sampledParents).toBe(2);
    expect(e.sandbox.requestLog().byEndpoint['GET /invoice/v3/projects/{id}/tasks']).toBe(2);

    expectExit(await e.sync('reconcile'), 0);
    expect((await verify({ children: true })).exitCode).toBe(0);
  });

  it('--max-requests stops it: the lists not read to the end are incomplete, never agreeing (exit 4)', async () => {
    e.sandbox.resetRequestLog();
    const max = FAMILIES + 3;
    const s = await verify({ maxRequests: max });
    expect(s.exitCode).toBe(4);
    expect(s.requests).toBeLessThanOrEqual(max);
    const sent = Object.entries(e.sandbox.requestLog().byEndpoint)
      .filter(([k]) => k.startsWith('GET '))
      .reduce((a, [, n]) => a + n, 0);
    expect(sent).toBe(s.requests);
    expect(s.streams.length).toBe(e.sandbox.organizations().length * TOP_LEVEL.length);
    const incomplete = s.streams.filter((x) => x.status === 'incomplete');
    expect(incomplete.length).toBeGreaterThanOrEqual(s.streams.length - 3);
    for (const x of incomplete) {
      expect([x.apiCount, x.missingCount, x.extraCount]).toEqual([null, null, null]);
      expect(x.error).toMatch(/--max-requests 7 reached/);
    }
    // A list counted as agreeing was read to its end within the bound.
    for (const x of s.streams.filter((y) => y.status === 'agree')) expect(x.apiCount).toBe(x.warehouseCount);
    expect(s.streams.reduce((a, x) => a + x.requests, 0)).toBe(s.requests - FAMILIES);
    const rows = await verificationsOfRun(e.warehouse.db, s.runId);
    expect(rows.filter((r) => r.status === 'incomplete').length).toBe(incomplete.length);
    expect(rows.filter((r) => r.status === 'incomplete').every((r) => r.api_count === null && r.error !== null)).toBe(true);

    // A bound smaller than the organization lists: nothing is known, and it says so.
    const tiny = await verify({ maxRequests: 2 });
    expect(tiny.exitCode).toBe(4);
    expect(tiny.streams).toEqual([]);
    expect(tiny.requests).toBeLessThanOrEqual(2);
    expect(tiny.connectionFailures).toEqual([expect.objectContaining({ connection: 'e2e', kind: 'incomplete' })]);
  });

  it('a daily budget spent mid-run leaves the rest of that organization incomplete (exit 4), and the budget is kept', async () => {
    const org = e.sandbox.organizations()[0]!.organization_id;
    const usage = await e.query<{ count: number | string }>(
      `SELECT count FROM _svcsync_usage WHERE organization_id = ${dialect === 'postgres' ? '$1' : '?'} ORDER BY day DESC LIMIT 1`,
      [org],
    );
    const used = Number(usage[0]!.count);
    const connection = { ...e.config.connections[0]!, limits: { ...e.config.connections[0]!.limits, per_day: used + 3, reserve: 0 } };
    const s = await runVerify({
      config: { ...e.config, connections: [connection] },
      warehouse: e.warehouse,
      clock: e.sandbox.clock,
      logger: createLogger({ level: 'warn', secrets: e.secrets, destination: log }),
      secrets: e.secrets,
      signal: new AbortController().signal,
      organization: org,
    });
    expect(s.exitCode).toBe(4);
    // Three list requests fit in what is left today; the organization lists are not charged to it.
    expect(s.requests).toBe(FAMILIES + 3);
    expect(s.streams.reduce((a, x) => a + x.requests, 0)).toBe(3);
    const incomplete = s.streams.filter((x) => x.status === 'incomplete');
    expect(incomplete.length).toBeGreaterThan(0);
    for (const x of incomplete) {
      expect(x.error).toMatch(/daily quota is spent/);
      expect(x.apiCount).toBeNull();
    }
    expect(s.streams.filter((x) => x.status === 'failed')).toEqual([]);
    const after = await e.query<{ count: number | string }>(
      `SELECT count FROM _svcsync_usage WHERE organization_id = ${dialect === 'postgres' ? '$1' : '?'} ORDER BY day DESC LIMIT 1`,
      [org],
    );
    expect(Number(after[0]!.count)).toBe(used + 3);
  });
});

// ID_FIELDS keeps the independent list of streams honest: every top-level stream named above exists there.
describe('the stream lists of this test', () => {
  it('name real streams', () => {
    for (const [family, stream] of TOP_LEVEL) expect(ID_FIELDS[family][stream], `${family}.${stream}`).toBeDefined();
    for (const name of PER_PARENT) {
      const [family, stream] = name.split('.') as [Family, string];
      expect(ID_FIELDS[family][stream], name).toBeDefined();
    }
    const all = Object.entries(ID_FIELDS).flatMap(([f, streams]) =>
      Object.keys(streams)
        .filter((s) => s !== 'organizations')
        .map((s) => `${f}.${s}`),
    );
    expect([...TOP_LEVEL.map(([f, s]) => `${f}.${s}`), ...PER_PARENT].sort()).toEqual(all.sort());
  });
});
