import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dialect } from '../../src/loaders/sql-dialect.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, type E2E } from '../helpers/e2e.js';

/**
 * The history questions of docs/bi.md ("The warehouse as it stood: history"), run as written on
 * both dialects with the page's instant replaced by one of the test's, and checked against the
 * sandbox's own history (truthAt, versions), never against the warehouse.
 */

type Rec = Record<string, unknown>;

const PAGE_INSTANT = '2026-10-31T23:59:59.999Z';

/** The section's `### H<n>. Title` questions and their ```sql blocks (one per dialect when marked). */
function historyQuestions(markdown: string): Map<string, Record<Dialect, string>> {
  const start = markdown.indexOf('\n## The warehouse as it stood: history');
  if (start < 0) throw new Error('docs/bi.md has no "## The warehouse as it stood: history" section');
  const rest = markdown.slice(start + 1);
  const end = rest.indexOf('\n## ', 3);
  const section = end < 0 ? rest : rest.slice(0, end);
  const out = new Map<string, Record<Dialect, string>>();
  for (const part of section.split(/^### /m).slice(1)) {
    const heading = /^(H\d+)\. /.exec(part);
    if (!heading) throw new Error(`docs/bi.md: a history question heading is not "### Hn. Title": ${part.slice(0, 60)}`);
    const sql: Partial<Record<Dialect, string>> = {};
    for (const m of part.matchAll(/^```sql\n([\s\S]*?)^```$/gm)) {
      const block = m[1]!.trim().replace(/;$/, '');
      const marker = /^-- (SQLite|Postgres)\n/.exec(block);
      for (const d of marker ? [marker[1] === 'SQLite' ? 'sqlite' : 'postgres'] : ['sqlite', 'postgres']) sql[d as Dialect] = block;
    }
    if (!sql.sqlite || !sql.postgres) throw new Error(`docs/bi.md question ${heading[1]}: no query for every dialect`);
    out.set(heading[1]!, sql as Record<Dialect, string>);
  }
  return out;
}

const QUESTIONS = historyQuestions(readFileSync(new URL('../../docs/bi.md', import.meta.url), 'utf8'));

const num = (v: unknown): number | null => (v === null || v === undefined || v === '' ? null : Number(v));

describe.each(DIALECTS)('the history questions of docs/bi.md on %s', (dialect) => {
  let e: E2E;
  let orgId: string;
  let close: number;
  const starts: number[] = [];

  async function sync(): Promise<void> {
    starts.push(e.sandbox.now());
    expectExit(await e.sync('reconcile'), 0);
    e.sandbox.advanceClock(60_000);
  }

  async function ask(q: string, at: number): Promise<Rec[]> {
    const text = QUESTIONS.get(q)![dialect].replaceAll(PAGE_INSTANT, new Date(at).toISOString());
    return e.query<Rec>(text);
  }

  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 10, organizations: 1 }, { connection: { history: ['inventory.sales_orders', 'billing.plans'] } });
    orgId = e.sandbox.organizations()[0]!.organization_id;
    await sync();
    e.sandbox.advanceClock(5 * 60_000);
    close = e.sandbox.now();
    for (let round = 0; round < 2; round++) {
      e.sandbox.advanceClock(10 * 60_000);
      e.sandbox.mutate({ modify: 3, create: 1, delete: 1, streams: ['inventory.sales_orders', 'billing.plans'] });
      e.sandbox.advanceClock(10 * 60_000);
      await sync();
    }
  }, 300_000);
  afterAll(async () => e?.close());

  it('the section has its three questions', () => {
    expect([...QUESTIONS.keys()]).toEqual(['H1', 'H2', 'H3']);
  });

  it('H1: the open orders at the close, their base-currency totals and line counts', async () => {
    const truth = e.sandbox
      .truthAt(orgId, 'inventory', 'sales_orders', close)
      .filter((r) => ['open', 'confirmed'].includes(String(r['status'])));
    const expected = truth
      .map((r) => ({
        id: String(r['salesorder_id']),
        status: r['status'],
        total: num(r['bcy_total']) ?? num(r['total'])! * num(r['exchange_rate'])!,
        lines: Array.isArray(r['line_items']) ? r['line_items'].length : 0,
      }))
      .sort((a, b) => a.id.localeCompare(b.id));
    expect(expected.length).toBeGreaterThan(0);
    const rows = (await ask('H1', close))
      .map((r) => ({ id: String(r['salesorder_id']), status: r['status'], total: num(r['total_bcy'])!, lines: Number(r['lines']) }))
      .sort((a, b) => a.id.localeCompare(b.id));
    expect(rows.map(({ total: _, ...rest }) => rest)).toEqual(expected.map(({ total: _, ...rest }) => rest));
    rows.forEach((r, i) => expect(r.total, r.id).toBeCloseTo(expected[i]!.total, 2));
  });

  it('H2: the orders changed after the close, with their values then and now', async () => {
    const last = starts.at(-1)!;
    const expected = e.sandbox
      .truthAt(orgId, 'inventory', 'sales_orders', close)
      .flatMap((r) => {
        const id = String(r['salesorder_id']);
        const seen = e.sandbox.versions(orgId, 'inventory', 'sales_orders', id).filter((v) => v.from <= last);
        const now = seen.at(-1)!;
        if (now.from <= close) return [];
        return [{ id, before: r['status'], after: now.record['status'], change: now.change }];
      })
      .sort((a, b) => a.id.localeCompare(b.id));
    expect(expected.map((x) => x.change)).toEqual(expect.arrayContaining(['updated', 'deleted']));
    const rows = (await ask('H2', close))
      .map((r) => ({ id: String(r['salesorder_id']), before: r['status_before'], after: r['status_after'], change: r['last_change'] }))
      .sort((a, b) => a.id.localeCompare(b.id));
    expect(rows).toEqual(expected);
  });

  it('H3: each price a plan had, in order, as the syncs saw them', async () => {
    const expected = new Map<string, number[]>();
    for (const s of starts) {
      for (const r of e.sandbox.truthAt(orgId, 'billing', 'plans', s)) {
        const list = expected.get(String(r['plan_code'])) ?? [];
        const price = num(r['recurring_price'])!;
        if (list.at(-1) !== price) list.push(price);
        expected.set(String(r['plan_code']), list);
      }
    }
    const actual = new Map<string, number[]>();
    for (const r of await ask('H3', close)) {
      const code = String(r['plan_code']);
      actual.set(code, [...(actual.get(code) ?? []), num(r['recurring_price'])!]);
    }
    expect([...expected.values()].some((p) => p.length > 1)).toBe(true);
    expect(new Map([...actual].sort())).toEqual(new Map([...expected].sort()));
  });
});
