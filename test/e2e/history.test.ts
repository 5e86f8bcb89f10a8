import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { CATALOG } from '../../src/catalog/index.js';
import { historyPlan } from '../../src/loaders/derived/history-tables.js';
import { HistoryWriter } from '../../src/loaders/history-writer.js';
import { renderStatus } from '../../src/cli/commands/status.js';
import { collectStatus } from '../../src/scheduler/surface/status-document.js';
import { expectExit, instant, startE2E, stored, type E2E } from '../helpers/e2e.js';

/**
 * History tables against the sandbox's own history: after rounds of changes and syncs, the
 * warehouse as of an instant equals what the sandbox held then, as svcsync could have seen it.
 */

type Rec = Record<string, unknown>;

interface Followed {
  family: 'inventory' | 'invoice' | 'billing';
  stream: string;
  id: string;
  /** The change field, when the stream has one. */
  change?: string;
  /** Fields compared between a version and the sandbox's record. */
  fields: string[];
  /** A child table whose rows follow the record: its table, the truth's array, the element id. */
  lines?: { table: string; array: string; id: string };
}

const FOLLOWED: Followed[] = [
  {
    family: 'inventory',
    stream: 'sales_orders',
    id: 'salesorder_id',
    change: 'last_modified_time',
    fields: ['status', 'reference_number'],
    lines: { table: 'inventory_sales_orders__line_items', array: 'line_items', id: 'line_item_id' },
  },
  // Not description: under the hostile preset some end in characters a warehouse cannot hold (A38).
  { family: 'invoice', stream: 'projects', id: 'project_id', fields: ['status'] },
  { family: 'billing', stream: 'plans', id: 'plan_code', change: 'updated_time', fields: ['recurring_price', 'status'] },
  // A child stream: its records come and go with their project's list (names carry A38's characters under hostile).
  { family: 'invoice', stream: 'tasks', id: 'task_id', fields: ['project_id'] },
];

/** A version as the model of svcsync's history has it. */
interface ModelVersion {
  from: number;
  deleted: boolean;
  record: Rec;
}

/** Empty, absent and null are one value (sparse fields); numbers compare as numbers. */
function norm(v: unknown): unknown {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v === 'number') return v;
  const n = Number(v);
  return typeof v === 'string' && v.trim() !== '' && Number.isFinite(n) && /^-?[\d.]+$/.test(v) ? n : v;
}

function view(f: Followed, r: Rec): Rec {
  const out: Rec = { id: String(r[f.id]) };
  for (const k of f.fields) out[k] = norm(r[k]);
  if (f.lines) {
    const arr = Array.isArray(r[f.lines.array]) ? (r[f.lines.array] as Rec[]) : [];
    out['lines'] = arr.map((l) => String(l[f.lines!.id])).sort();
  }
  return out;
}

interface Sync {
  start: number;
  end: number;
}

/**
 * What svcsync's history should say of one stream: every record's versions as the syncs saw them.
 * A change seen with a change field begins at it; without one, during the sync that saw it; a
 * record gone begins its deletion during the sync that found it gone.
 */
function model(e: E2E, orgId: string, f: Followed, syncs: readonly Sync[]): Map<string, ModelVersion[]> {
  const byId = new Map<string, ModelVersion[]>();
  for (const s of syncs) {
    const seen = new Map(e.sandbox.truthAt(orgId, f.family, f.stream, s.start).map((r) => [String(r[f.id]), r]));
    for (const [id, r] of seen) {
      const list = byId.get(id) ?? [];
      const last = list.at(-1);
      const changed = !last || last.deleted || JSON.stringify(view(f, last.record)) !== JSON.stringify(view(f, r));
      if (!changed) continue;
      const from = f.change ? instant(r[f.change]) : s.start;
      list.push({ from: last && from <= last.from ? last.from + 1 : from, deleted: false, record: r });
      byId.set(id, list);
    }
    for (const [id, list] of byId) {
      const last = list.at(-1)!;
      if (!last.deleted && !seen.has(id)) list.push({ from: s.start, deleted: true, record: last.record });
    }
  }
  return byId;
}

function expectedAt(versions: Map<string, ModelVersion[]>, f: Followed, t: number): Rec[] {
  const out: Rec[] = [];
  for (const list of versions.values()) {
    const current = list.filter((v) => v.from <= t).at(-1);
    if (current && !current.deleted) out.push(view(f, current.record));
  }
  return out.sort((a, b) => String(a['id']).localeCompare(String(b['id'])));
}

async function asOf(e: E2E, orgId: string, f: Followed, t: number): Promise<Rec[]> {
  const p = e.warehouse.sql.param;
  const at = new Date(t).toISOString();
  const table = `${f.family}_${f.stream}`;
  const current = (n: number): string =>
    `"_valid_from" <= ${p(n)} AND ("_valid_to" IS NULL OR "_valid_to" > ${p(n + 1)}) AND "_change" <> 'deleted'`;
  const rows = await e.query<Rec>(`SELECT * FROM "${table}_history" WHERE organization_id = ${p(1)} AND ${current(2)}`, [orgId, at, at]);
  const lines = new Map<string, string[]>();
  if (f.lines) {
    const found = await e.query<Rec>(
      `SELECT "${f.id}" AS parent, "${f.lines.id}" AS line FROM "${f.lines.table}_history" ` +
        `WHERE organization_id = ${p(1)} AND ${current(2)}`,
      [orgId, at, at],
    );
    for (const l of found) lines.set(String(l['parent']), [...(lines.get(String(l['parent'])) ?? []), String(l['line'])]);
  }
  return rows
    .map((r) => {
      const out: Rec = { id: String(r[f.id]) };
      for (const k of f.fields) out[k] = norm(r[k]);
      if (f.lines) out['lines'] = (lines.get(String(r[f.id])) ?? []).sort();
      return out;
    })
    .sort((a, b) => String(a['id']).localeCompare(String(b['id'])));
}

const CASES = DIALECTS.flatMap((dialect) => (['default', 'hostile'] as const).map((preset) => ({ dialect, preset })));

describe.each(CASES)('history tables on $dialect against the $preset sandbox', ({ dialect, preset }) => {
  let e: E2E;
  const syncs: Sync[] = [];
  const quiet: number[] = [];

  async function sync(): Promise<void> {
    const start = e.sandbox.now();
    expectExit(await e.sync('reconcile'), 0);
    syncs.push({ start, end: e.sandbox.now() });
    e.sandbox.advanceClock(60_000);
  }

  beforeAll(async () => {
    // Records do not change mid-walk: the model reads the truth at each sync's start.
    const options = preset === 'hostile' ? { preset, variants: { changeWhilePagingEvery: 0 } } : {};
    e = await startE2E(dialect, { scale: 6, organizations: 1, ...options }, { connection: { history: 'all' } });
    await sync();
    for (let round = 0; round < 3; round++) {
      e.sandbox.advanceClock(10 * 60_000);
      quiet.push(e.sandbox.now());
      e.sandbox.advanceClock(10 * 60_000);
      const streams = ['inventory.sales_orders', 'invoice.projects', 'billing.plans', 'invoice.tasks'];
      // A restore of a record deleted (and seen deleted) in an earlier round.
      if (round === 2) e.sandbox.mutate({ restore: 1, streams: ['inventory.sales_orders', 'invoice.projects', 'billing.plans'] });
      e.sandbox.mutate({
        modify: 2,
        create: 1,
        delete: 1,
        streams,
      });
      e.sandbox.advanceClock(10 * 60_000);
      quiet.push(e.sandbox.now());
      e.sandbox.advanceClock(10 * 60_000);
      await sync();
    }
  }, 300_000);
  afterAll(async () => e?.close());

  it('as of each sync and instants between, every followed stream equals the sandbox as svcsync saw it', async () => {
    // Under the orgIdPerFamily variant (hostile) a business has another organization id in each family.
    const ids = e.sandbox.organizations()[0]!.ids;
    const instants = [...syncs.map((s) => s.end), ...quiet].sort((a, b) => a - b);
    for (const f of FOLLOWED) {
      const orgId = ids[f.family];
      const versions = model(e, orgId, f, syncs);
      for (const t of instants) {
        const expected = expectedAt(versions, f, t);
        expect(expected.length, `${f.stream} has records at ${new Date(t).toISOString()}`).toBeGreaterThan(0);
        expect(await asOf(e, orgId, f, t), `${f.family}.${f.stream} as of ${new Date(t).toISOString()}`).toEqual(expected);
      }
    }
  });

  it('keeps one open version per live record and the change kinds it saw', async () => {
    const dup = await e.query(
      `SELECT organization_id, salesorder_id FROM inventory_sales_orders_history WHERE "_valid_to" IS NULL
       GROUP BY organization_id, salesorder_id HAVING COUNT(*) > 1`,
    );
    expect(dup).toEqual([]);
    const kinds = await e.query<{ change: string }>(`SELECT DISTINCT "_change" AS change FROM invoice_projects_history`);
    expect(kinds.map((k) => k.change).sort()).toEqual(['created', 'deleted', 'restored', 'updated']);
    for (const table of ['inventory_sales_orders', 'billing_plans']) {
      const restored = await e.query(`SELECT 1 FROM ${table}_history WHERE "_change" = 'restored'`);
      expect(restored.length, table).toBe(1);
    }
  });
});

/** Versions per history table, and open ones. */
async function versionCounts(e: E2E, tables: readonly string[]): Promise<Record<string, [number, number]>> {
  const out: Record<string, [number, number]> = {};
  for (const t of tables) {
    const [row] = await e.query<{ n: number | string; open: number | string }>(
      `SELECT COUNT(*) AS n, SUM(CASE WHEN "_valid_to" IS NULL THEN 1 ELSE 0 END) AS open FROM "${t}_history"`,
    );
    out[t] = [Number(row!.n), Number(row!.open)];
  }
  return out;
}

const FOLLOWED_TABLES = [
  'inventory_sales_orders',
  'inventory_sales_orders__line_items',
  'invoice_projects',
  'invoice_tasks',
  'billing_plans',
  'inventory_contacts',
  'inventory_contact_persons',
  'books_vendor_credits',
  'books_vendor_credit_refunds',
];

describe.each(DIALECTS)('history without changes on %s', (dialect) => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 6, organizations: 1 }, { connection: { history: 'all' } });
    expectExit(await e.sync(), 0);
    e.sandbox.advanceClock(10 * 60_000);
    e.sandbox.mutate({ modify: 2, create: 1, delete: 1 });
    e.sandbox.advanceClock(10 * 60_000);
    expectExit(await e.sync('reconcile'), 0);
  }, 300_000);
  afterAll(async () => e?.close());

  it('a rerun, a reconcile, a backfill and the same rows written again add no version and close none', async () => {
    const before = await versionCounts(e, FOLLOWED_TABLES);
    expect(before['inventory_sales_orders']![0]).toBeGreaterThan(before['inventory_sales_orders']![1]);
    for (const run of [() => e.sync(), () => e.sync('reconcile'), () => e.sync('backfill', { since: '2000-01-01' })]) {
      e.sandbox.advanceClock(60_000);
      expectExit(await run(), 0);
      expect(await versionCounts(e, FOLLOWED_TABLES)).toEqual(before);
    }
    // Every open version is a live row's (or a deleted one's deletion), one each.
    const live = await e.query<{ n: number | string }>(`SELECT COUNT(*) AS n FROM inventory_sales_orders WHERE "_deleted_at" IS NULL`);
    const open = await e.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM inventory_sales_orders_history WHERE "_valid_to" IS NULL AND "_change" <> 'deleted'`,
    );
    expect(Number(open[0]!.n)).toBe(Number(live[0]!.n));
  });

  it('the statements of a page run again over every row write nothing (a page that arrives twice)', async () => {
    const before = await versionCounts(e, FOLLOWED_TABLES);
    const writer = new HistoryWriter(e.warehouse.sql);
    const plan = historyPlan(CATALOG, 'all');
    const orgId = e.sandbox.organizations()[0]!.ids;
    for (const s of plan.values()) {
      const organizationId = orgId[s.stream.family];
      const scope = { kind: 'all', organizationId } as const;
      const queries = [
        ...writer.recordQueries(s, scope, new Date(e.sandbox.now()).toISOString(), null),
        ...writer.deletionQueries(s, scope, null),
      ];
      await e.warehouse.batch(queries);
    }
    expect(await versionCounts(e, FOLLOWED_TABLES)).toEqual(before);
  });
});

/** `svcsync status` (the document and its text) shows the sales orders' history, and no other stream's. */
async function expectStatus(e: E2E, history: { on: boolean; versions: number }): Promise<void> {
  const orgs = await collectStatus(e.config, e.warehouse, e.sandbox.now());
  const streams = orgs.flatMap((o) => o.streams);
  expect(streams.find((s) => s.stream === 'inventory.sales_orders')?.history).toEqual(history);
  expect(streams.filter((s) => s.history !== undefined).map((s) => s.stream)).toEqual(['inventory.sales_orders']);
  const line = renderStatus(orgs)
    .split('\n')
    .find((l) => l.includes('inventory.sales_orders'));
  expect(line).toContain(`history ${history.on ? 'on' : 'off'}, ${history.versions} versions`);
}

describe.each(DIALECTS)('turning history on and off on %s', (dialect) => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 6, organizations: 1 });
    expectExit(await e.sync(), 0);
    e.sandbox.advanceClock(10 * 60_000);
    e.sandbox.mutate({ modify: 2, create: 1, streams: ['inventory.sales_orders'] });
    e.sandbox.advanceClock(10 * 60_000);
    expectExit(await e.sync(), 0);
  }, 300_000);
  afterAll(async () => e?.close());

  const setHistory = (value: 'off' | string[]): void => {
    e.config.connections[0]!.history = value;
  };

  async function rows(table: string): Promise<Rec[]> {
    return e.query<Rec>(`SELECT * FROM "${table}" ORDER BY salesorder_id, "_valid_from"`);
  }

  it('starts from the current rows: one created version each, from its change time', async () => {
    const orgId = e.sandbox.organizations()[0]!.ids.inventory;
    setHistory(['inventory.sales_orders']);
    e.sandbox.advanceClock(60_000);
    expectExit(await e.sync(), 0);
    const versions = await rows('inventory_sales_orders_history');
    const truth = e.sandbox.truth(orgId, 'inventory', 'sales_orders');
    expect(versions.length).toBe(truth.length);
    for (const r of truth) {
      const v = versions.filter((x) => String(x['salesorder_id']) === String(r['salesorder_id']));
      expect(v.map((x) => [x['_change'], x['_valid_to'], stored(x['_valid_from'])])).toEqual([
        ['created', null, instant(r['last_modified_time'])],
      ]);
    }
    const lines = await e.query<{ n: number | string }>(`SELECT COUNT(*) AS n FROM inventory_sales_orders__line_items_history`);
    const current = await e.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM inventory_sales_orders__line_items WHERE "_deleted_at" IS NULL`,
    );
    expect(Number(lines[0]!.n)).toBe(Number(current[0]!.n));
    // Other streams keep none.
    await expectStatus(e, { on: true, versions: versions.length });
    const where = dialect === 'postgres' ? 'pg_tables WHERE schemaname = current_schema() AND tablename' : 'sqlite_master WHERE name';
    const other = await e.query(`SELECT 1 FROM ${where} = 'billing_plans_history'`);
    expect(other).toEqual([]);
  });

  it('turned off, keeps its tables and writes nothing; turned on again, catches up with what changed meanwhile', async () => {
    setHistory('off');
    e.sandbox.advanceClock(10 * 60_000);
    const m = e.sandbox.mutate({ modify: 2, delete: 1, streams: ['inventory.sales_orders'] });
    expect(m.modified + m.deleted).toBe(3);
    e.sandbox.advanceClock(10 * 60_000);
    const before = await rows('inventory_sales_orders_history');
    expectExit(await e.sync('reconcile'), 0);
    expect(await rows('inventory_sales_orders_history')).toEqual(before);
    const record = await e.query<{ disabled_at: string | null }>(
      `SELECT disabled_at FROM _svcsync_history WHERE table_name = 'inventory_sales_orders'`,
    );
    expect(record.map((r) => r.disabled_at === null)).toEqual([false]);
    await expectStatus(e, { on: false, versions: before.length });

    setHistory(['inventory.sales_orders']);
    e.sandbox.advanceClock(60_000);
    expectExit(await e.sync(), 0);
    const kinds = await e.query<{ change: string; n: number | string }>(
      `SELECT "_change" AS change, COUNT(*) AS n FROM inventory_sales_orders_history GROUP BY "_change" ORDER BY 1`,
    );
    const created = before.length;
    expect(kinds.map((k) => [k.change, Number(k.n)])).toEqual([
      ['created', created],
      ['deleted', 1],
      ['updated', 2],
    ]);
  });
});
