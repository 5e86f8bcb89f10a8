import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SyncSummary } from '../../src/extractors/sync-run.js';
import type { Dialect } from '../../src/loaders/sql-dialect.js';
import { DIALECTS } from '../helpers/dialects.js';
import { ID_FIELDS, expectExit, instant, startE2E, stored, type E2E, type Family } from '../helpers/e2e.js';

/**
 * The ten example questions of docs/bi.md, run as written on both dialects against a synced
 * sandbox, and each answer checked against values computed here from the sandbox's truth (never
 * from the warehouse). A query that stops running, or stops giving the truth's answer, fails.
 */

type Rec = Record<string, unknown>;

export interface ExampleQuestion {
  n: number;
  title: string;
  /** The query for each dialect (the same text when the page gives one for both). */
  sql: Record<Dialect, string>;
}

/** The numbered questions under "## Example questions" and their ```sql blocks. */
export function exampleQuestions(markdown: string): ExampleQuestion[] {
  const start = markdown.indexOf('\n## Example questions');
  if (start < 0) throw new Error('docs/bi.md has no "## Example questions" section');
  const rest = markdown.slice(start + 1);
  const end = rest.indexOf('\n## ', 3);
  const section = end < 0 ? rest : rest.slice(0, end);
  const parts = section.split(/^### /m).slice(1);
  return parts.map((part) => {
    const heading = /^(\d+)\. (.+)$/m.exec(part);
    if (!heading) throw new Error(`docs/bi.md: a question heading is not "### N. Title": ${part.slice(0, 60)}`);
    const blocks = [...part.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1]!.trim().replace(/;$/, ''));
    const sql: Partial<Record<Dialect, string>> = {};
    for (const block of blocks) {
      const marker = /^-- (SQLite|Postgres)\n/.exec(block);
      const dialects: Dialect[] = marker ? [marker[1] === 'SQLite' ? 'sqlite' : 'postgres'] : ['sqlite', 'postgres'];
      for (const d of dialects) {
        if (sql[d] !== undefined) throw new Error(`docs/bi.md question ${heading[1]}: two queries for ${d}`);
        sql[d] = block;
      }
    }
    if (!sql.sqlite || !sql.postgres) throw new Error(`docs/bi.md question ${heading[1]}: no query for every dialect`);
    return { n: Number(heading[1]), title: heading[2]!, sql: sql as Record<Dialect, string> };
  });
}

const QUESTIONS = exampleQuestions(readFileSync(new URL('../../docs/bi.md', import.meta.url), 'utf8'));

const num = (value: unknown): number => Number(value);
/** Ids and names as text; blank is none. */
function text(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}
const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
/** "hh:mm" (or a number) as hours, parsed here independently of svcsync's parser. */
function hours(value: unknown): number {
  if (typeof value === 'number') return value;
  const [h, m] = String(value).split(':');
  return Number(h) + Number(m ?? 0) / 60;
}
function expectClose(actual: unknown, expected: number, label: string, tolerance = 1e-6): void {
  expect(Math.abs(num(actual) - expected), `${label}: ${String(actual)} vs ${expected}`).toBeLessThanOrEqual(tolerance);
}
/** A key of text values, the same for the truth's values and the warehouse's. */
const keyOf = (values: readonly unknown[]): string => values.map((v) => String(text(v))).join('|');
/** Rows keyed by some of their columns, to compare with the truth whatever the order (collations differ). */
function byKey(rows: readonly Rec[], columns: readonly string[]): Map<string, Rec> {
  const out = new Map<string, Rec>();
  for (const row of rows) {
    const key = keyOf(columns.map((c) => row[c]));
    expect(out.has(key), `one row per ${columns.join(', ')}: ${key}`).toBe(false);
    out.set(key, row);
  }
  return out;
}
function expectNonIncreasing(rows: readonly Rec[], column: string): void {
  for (let i = 1; i < rows.length; i++)
    expect(num(rows[i - 1]![column]), `${column} descending`).toBeGreaterThanOrEqual(num(rows[i]![column]));
}

interface Group {
  count: number;
  sum: number;
  /** Tolerance: rounding of the API's bcy_total per order. */
  tolerance: number;
}
function add(groups: Map<string, Group>, key: string, value: number, tolerance = 1e-6): void {
  const g = groups.get(key) ?? { count: 0, sum: 0, tolerance: 1e-6 };
  g.count++;
  g.sum += value;
  g.tolerance += tolerance;
  groups.set(key, g);
}

const REVENUE_STATUSES = (status: unknown): boolean => status !== 'draft' && status !== 'void';

/**
 * How the sandbox quotes exchange_rate: `default`, base-currency units per unit of the record's
 * currency; `inverse`, the other way (variant inverseExchangeRate, A37).
 */
type Reading = 'default' | 'inverse';

/** What each question's answer must be, from the truth. */
type Check = (e: E2E, rows: Rec[], summary: SyncSummary, reading: Reading) => number;

/** Base-currency units per unit of the order's currency, whichever way the sandbox quoted it. */
const baseRate = (order: Rec, reading: Reading): number =>
  reading === 'inverse' ? 1 / Number(order['exchange_rate']) : Number(order['exchange_rate']);

function inventoryOrders(e: E2E): Array<{ org: string; order: Rec; precision: number }> {
  return e.sandbox.organizations().flatMap((o) =>
    e.sandbox.truth(o.ids.inventory, 'inventory', 'sales_orders').map((order) => ({
      org: o.ids.inventory,
      order,
      precision: Number(order['price_precision']),
    })),
  );
}
/** The list's bcy_total is total × rate rounded to the price precision (the truth holds the single record). */
const bcyTolerance = (precision: number): number => 0.51 * 10 ** -precision + 1e-9;
const orderBcy = (order: Rec, reading: Reading): number => Number(order['total']) * baseRate(order, reading);

const CHECKS: Record<number, Check> = {
  1: (e, rows, _, reading) => {
    const expected = new Map<string, Group>();
    for (const { org, order, precision } of inventoryOrders(e)) {
      if (!REVENUE_STATUSES(order['status'])) continue;
      add(expected, `${org}|${String(order['date']).slice(0, 7)}`, orderBcy(order, reading), bcyTolerance(precision));
    }
    const actual = byKey(rows, ['organization_id', 'month']);
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, g] of expected) {
      expect(num(actual.get(key)!['orders']), key).toBe(g.count);
      expectClose(actual.get(key)!['revenue_bcy'], g.sum, `${key} revenue_bcy`, g.tolerance);
    }
    return rows.length;
  },
  2: (e, rows, _, reading) => {
    const names = new Map<string, unknown>();
    for (const o of e.sandbox.organizations())
      for (const c of e.sandbox.truth(o.ids.inventory, 'inventory', 'contacts'))
        names.set(`${o.ids.inventory}|${String(c['contact_id'])}`, c['contact_name']);
    const groups = new Map<string, Group & { name: unknown }>();
    for (const { org, order, precision } of inventoryOrders(e)) {
      if (!REVENUE_STATUSES(order['status'])) continue;
      const key = `${org}|${String(order['customer_id'])}`;
      add(groups, key, orderBcy(order, reading), bcyTolerance(precision));
      groups.get(key)!.name = names.get(key) ?? order['customer_name'];
    }
    const top = [...groups.entries()].sort(([ka, a], [kb, b]) => b.sum - a.sum || (ka < kb ? -1 : 1)).slice(0, 10);
    expect(rows.map((r) => `${String(r['organization_id'])}|${String(r['customer_id'])}`)).toEqual(top.map(([k]) => k));
    top.forEach(([key, g], i) => {
      expect(rows[i]!['customer_name'], key).toBe(g.name);
      expect(num(rows[i]!['orders']), key).toBe(g.count);
      expectClose(rows[i]!['revenue_bcy'], g.sum, `${key} revenue_bcy`, g.tolerance);
    });
    return rows.length;
  },
  3: (e, rows) => {
    const expected = new Map<string, { credits: number; balance: number; refunded: number }>();
    for (const o of e.sandbox.organizations()) {
      for (const family of ['books', 'inventory'] as const) {
        const org = o.ids[family];
        const refunds = e.sandbox.truth(org, family, 'vendor_credit_refunds');
        for (const credit of e.sandbox.truth(org, family, 'vendor_credits')) {
          if (credit['status'] !== 'open') continue;
          const key = keyOf([org, family, credit['vendor_name'], credit['currency_code']]);
          const g = expected.get(key) ?? { credits: 0, balance: 0, refunded: 0 };
          g.credits++;
          g.balance += Number(credit['balance']);
          g.refunded += sum(
            refunds.filter((r) => String(r['vendor_credit_id']) === String(credit['vendor_credit_id'])).map((r) => Number(r['amount'])),
          );
          expected.set(key, g);
        }
      }
    }
    const actual = byKey(rows, ['organization_id', 'family', 'vendor_name', 'currency_code']);
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, g] of expected) {
      expect(num(actual.get(key)!['credits']), key).toBe(g.credits);
      expectClose(actual.get(key)!['open_balance'], g.balance, `${key} open_balance`);
      expectClose(actual.get(key)!['refunded'], g.refunded, `${key} refunded`);
    }
    expectNonIncreasing(rows, 'open_balance');
    return rows.length;
  },
  4: (e, rows) => {
    const expected = new Map<string, { projects: number; unbilled: number }>();
    for (const o of e.sandbox.organizations()) {
      const org = o.ids.invoice;
      const tasks = e.sandbox.truth(org, 'invoice', 'tasks');
      for (const project of e.sandbox.truth(org, 'invoice', 'projects')) {
        const key = keyOf([org, project['customer_id'], project['customer_name']]);
        const g = expected.get(key) ?? { projects: 0, unbilled: 0 };
        g.projects++;
        g.unbilled += sum(
          tasks.filter((t) => String(t['project_id']) === String(project['project_id'])).map((t) => hours(t['un_billed_hours'])),
        );
        expected.set(key, g);
      }
    }
    for (const [key, g] of expected) if (!(g.unbilled > 0)) expected.delete(key);
    const actual = byKey(rows, ['organization_id', 'customer_id', 'customer_name']);
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, g] of expected) {
      expect(num(actual.get(key)!['projects']), key).toBe(g.projects);
      expectClose(actual.get(key)!['unbilled_hours'], g.unbilled, `${key} unbilled_hours`);
    }
    expectNonIncreasing(rows, 'unbilled_hours');
    return rows.length;
  },
  5: (e, rows) => {
    const expected = new Map<string, Group>();
    for (const o of e.sandbox.organizations()) {
      const org = o.ids.billing;
      for (const r of e.sandbox.truth(org, 'billing', 'recurring_expenses')) {
        if (r['status'] !== 'active') continue;
        add(expected, keyOf([org, r['customer_name'], r['currency_code']]), Number(r['total']));
      }
    }
    const actual = byKey(rows, ['organization_id', 'customer_name', 'currency_code']);
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, g] of expected) {
      expect(num(actual.get(key)!['recurring_expenses']), key).toBe(g.count);
      expectClose(actual.get(key)!['amount'], g.sum, `${key} amount`);
    }
    return rows.length;
  },
  6: (e, rows, _, reading) => {
    const expected = new Map<string, Group>();
    const quantities = new Map<string, number>();
    // A line's unit price in the base currency: its rate at the order's rate, rounded to the price
    // precision where the API sends bcy_rate, derived (unrounded) where it does not.
    const prices = new Map<string, { min: number; max: number; tolerance: number }>();
    let foreign = 0;
    for (const { org, order, precision } of inventoryOrders(e)) {
      if (!REVENUE_STATUSES(order['status'])) continue;
      const rate = baseRate(order, reading);
      if (rate !== 1) foreign++;
      for (const line of order['line_items'] as Rec[]) {
        const key = keyOf([org, line['item_id'], line['name']]);
        add(expected, key, Number(line['item_total']) * rate);
        quantities.set(key, (quantities.get(key) ?? 0) + Number(line['quantity']));
        const price = Number(line['rate']) * rate;
        const tolerance = line['bcy_rate'] === undefined ? 1e-6 : bcyTolerance(precision);
        const p = prices.get(key) ?? { min: price, max: price, tolerance };
        prices.set(key, { min: Math.min(p.min, price), max: Math.max(p.max, price), tolerance: Math.max(p.tolerance, tolerance) });
      }
    }
    expect(foreign, 'orders in a currency other than the base currency').toBeGreaterThan(0);
    const actual = byKey(rows, ['organization_id', 'item_id', 'item_name']);
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, g] of expected) {
      expect(num(actual.get(key)!['lines']), key).toBe(g.count);
      expectClose(actual.get(key)!['quantity'], quantities.get(key)!, `${key} quantity`);
      expectClose(actual.get(key)!['sales_bcy'], g.sum, `${key} sales_bcy`);
      const p = prices.get(key)!;
      expectClose(actual.get(key)!['lowest_rate_bcy'], p.min, `${key} lowest_rate_bcy`, p.tolerance);
      expectClose(actual.get(key)!['highest_rate_bcy'], p.max, `${key} highest_rate_bcy`, p.tolerance);
    }
    expectNonIncreasing(rows, 'sales_bcy');
    return rows.length;
  },
  7: (e, rows) => {
    const expected: string[] = [];
    for (const o of e.sandbox.organizations()) {
      const org = o.ids.inventory;
      const ordered = new Set(e.sandbox.truth(org, 'inventory', 'sales_orders').map((so) => String(so['customer_id'])));
      for (const c of e.sandbox.truth(org, 'inventory', 'contacts'))
        if (c['contact_type'] === 'customer' && !ordered.has(String(c['contact_id'])))
          expected.push(`${org}|${String(c['contact_id'])}|${String(c['contact_name'])}`);
    }
    expect(rows.map((r) => `${String(r['organization_id'])}|${String(r['contact_id'])}|${String(r['contact_name'])}`).sort()).toEqual(
      expected.sort(),
    );
    return rows.length;
  },
  8: (e, rows) => {
    const actual = byKey(rows, ['organization_id', 'project_id']);
    const keys: string[] = [];
    for (const o of e.sandbox.organizations()) {
      const org = o.ids.invoice;
      const tasks = e.sandbox.truth(org, 'invoice', 'tasks');
      for (const project of e.sandbox.truth(org, 'invoice', 'projects')) {
        const key = `${org}|${String(project['project_id'])}`;
        keys.push(key);
        const own = tasks.filter((t) => String(t['project_id']) === String(project['project_id']));
        const row = actual.get(key);
        expect(row, key).toBeDefined();
        expect(row!['project_name'], key).toBe(project['project_name']);
        expect(num(row!['tasks']), key).toBe(own.length);
        expect(num(row!['tasks_with_unbilled_hours']), key).toBe(own.filter((t) => hours(t['un_billed_hours']) > 0).length);
        expectClose(row!['billed_hours'], sum(own.map((t) => hours(t['billed_hours']))), `${key} billed_hours`);
      }
    }
    expect([...actual.keys()].sort()).toEqual(keys.sort());
    expectNonIncreasing(rows, 'tasks');
    return rows.length;
  },
  9: (e, rows) => {
    const expected = new Map<string, Group>();
    for (const o of e.sandbox.organizations()) {
      const org = o.ids.billing;
      for (const ev of e.sandbox.truth(org, 'billing', 'events')) {
        const day = new Date(instant(ev['event_time'])).toISOString().slice(0, 10);
        add(expected, `${org}|${day}|${String(ev['event_type'])}`, 1);
      }
    }
    const actual = byKey(rows, ['organization_id', 'day', 'event_type']);
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, g] of expected) expect(num(actual.get(key)!['events']), key).toBe(g.count);
    return rows.length;
  },
  10: (e, rows, summary) => {
    const actual = byKey(rows, ['connection', 'organization_id', 'stream']);
    const expected: string[] = [];
    for (const o of e.sandbox.organizations()) {
      for (const family of Object.keys(ID_FIELDS) as Family[]) {
        for (const stream of Object.keys(ID_FIELDS[family])) {
          if (stream === 'organizations') continue;
          const key = keyOf(['e2e', o.ids[family], `${family}.${stream}`]);
          expected.push(key);
          const row = actual.get(key);
          expect(row, key).toBeDefined();
          expect(row!['last_status'], key).toBe('ok');
          expect(row!['run_status'], key).toBe('ok');
          expect(row!['last_command'], key).toBe('incremental');
          // Records read, single-record reads included: at least every record of the truth on a first run.
          expect(num(row!['last_records']), key).toBeGreaterThanOrEqual(e.sandbox.count(o.ids[family], family, stream));
          const at = stored(row!['last_success_at']);
          expect(at, key).toBeGreaterThanOrEqual(Date.parse(summary.startedAt));
          expect(at, key).toBeLessThanOrEqual(Date.parse(summary.finishedAt));
        }
      }
    }
    expect([...actual.keys()].sort()).toEqual(expected.sort());
    return rows.length;
  },
};

/**
 * Every question against the default server, and against one that quotes exchange_rate the other
 * way and sends no line's bcy_rate (variants inverseExchangeRate and omitLineBcyRate, A37), so the
 * base-currency figures are derived in the direction each order's bcy_total shows.
 */
describe.each(
  DIALECTS.flatMap((dialect) => [
    { dialect, reading: 'default' as const, server: 'the default sandbox' },
    { dialect, reading: 'inverse' as const, server: 'a sandbox quoting exchange_rate the other way, without bcy_rate' },
  ]),
)('the example questions of docs/bi.md on $dialect against $server', ({ dialect, reading }) => {
  let e: E2E;
  let summary: SyncSummary;
  beforeAll(async () => {
    e = await startE2E(dialect, reading === 'inverse' ? { variants: { inverseExchangeRate: true, omitLineBcyRate: true } } : {});
    summary = await e.sync();
    expectExit(summary, 0);
  }, 180_000);
  afterAll(async () => {
    await e?.close();
  });

  it('the page has ten numbered questions, each with its query', () => {
    expect(QUESTIONS.map((q) => q.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it.each(QUESTIONS.map((q) => [`${q.n}. ${q.title}`, q] as const))('%s', async (_, q) => {
    const rows = await e.query<Rec>(q.sql[dialect]);
    const check = CHECKS[q.n];
    expect(check, `a check for question ${q.n}`).toBeDefined();
    expect(check!(e, rows, summary, reading), `question ${q.n} answers with rows`).toBeGreaterThan(0);
  });
});
