import { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { migratedWarehouses } from '../helpers/dialects.js';

// A table shaped as a stream table is for svcsync's lookups: keyed by organization and id.
const PROBED = { name: 'stats_probe', primaryKey: ['organization_id', 'plan_code'] };

async function fill(w: Warehouse, perOrganization: number): Promise<void> {
  await w.db.executeQuery(
    CompiledQuery.raw(
      `CREATE TABLE stats_probe (organization_id text NOT NULL, plan_code text NOT NULL, _deleted_at timestamptz,
       _hash text, _synced_at timestamptz NOT NULL, body text, PRIMARY KEY (organization_id, plan_code))`,
    ),
  );
  await w.db.executeQuery(
    CompiledQuery.raw(
      `INSERT INTO stats_probe SELECT o::text, 'PLAN-' || lpad(i::text, 6, '0'), NULL, md5(i::text), now(), repeat('x', 400)
       FROM generate_series(1, 2) AS o, generate_series(1, $1::int) AS i`,
      [perOrganization],
    ),
  );
}

const estimate = async (w: Warehouse): Promise<number> =>
  Number(
    (
      await w.db.executeQuery<{ n: number }>(
        CompiledQuery.raw(`SELECT reltuples AS n FROM pg_class WHERE oid = to_regclass('stats_probe')`),
      )
    ).rows[0]!.n,
  );

/** The index condition Postgres plans for the lookup of a page's ids (TableWriter.rowsUntouchedSince's shape). */
async function lookupIndexCondition(w: Warehouse): Promise<string> {
  const ids = Array.from({ length: 200 }, (_, i) => `PLAN-${String(7201 + i).padStart(6, '0')}`);
  const list = ids.map((_, i) => `$${i + 2}`).join(', ');
  const plan = await w.db.executeQuery<{ 'QUERY PLAN': string }>(
    CompiledQuery.raw(
      'EXPLAIN SELECT count(*) FROM stats_probe WHERE organization_id = $1 AND _deleted_at IS NULL AND _hash IS NOT NULL ' +
        `AND plan_code IN (${list})`,
      ['1', ...ids],
    ),
  );
  return plan.rows.map((r) => r['QUERY PLAN']).join('\n');
}

describe('planner statistics after a pass (postgres)', () => {
  const open = migratedWarehouses('postgres');

  it('analyzes a table a pass filled, and the lookup of a page then goes by the whole key', async () => {
    const w = await open();
    await fill(w, 10_000);
    expect(await estimate(w)).toBeLessThan(0); // never analyzed
    expect(await w.sql.refreshStatistics(w.db, [PROBED], 20_000)).toBe(true);
    expect(await estimate(w)).toBe(20_000);
    expect(await lookupIndexCondition(w)).toMatch(/Index Cond: \(\(organization_id = '1'::text\) AND \(plan_code = ANY/);
  });

  it('leaves a table alone after a pass that wrote few rows, or a tenth of what it holds', async () => {
    const w = await open();
    await fill(w, 10_000);
    expect(await w.sql.refreshStatistics(w.db, [PROBED], 999)).toBe(false);
    expect(await estimate(w)).toBeLessThan(0);
    await w.db.executeQuery(CompiledQuery.raw('ANALYZE stats_probe'));
    expect(await w.sql.refreshStatistics(w.db, [PROBED], 2000)).toBe(false);
    expect(await w.sql.refreshStatistics(w.db, [PROBED], 2001)).toBe(true);
  });
});

describe('planner statistics after a pass (sqlite)', () => {
  const open = migratedWarehouses('sqlite');

  it('gathers none: SQLite looks keys up by the index without them', async () => {
    const w = await open();
    expect(await w.sql.refreshStatistics(w.db, [{ name: 'billing_plans', primaryKey: ['organization_id', 'plan_code'] }], 50_000)).toBe(
      false,
    );
    const stat = await w.db.executeQuery(CompiledQuery.raw(`SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'`));
    expect(stat.rows).toEqual([]);
  });
});
