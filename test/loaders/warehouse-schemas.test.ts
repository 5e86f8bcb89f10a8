import { randomBytes } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { viewDefinitions } from '../../src/catalog/views.js';
import { parseConfig } from '../../src/config/load.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { createReadonlyRole } from '../../src/loaders/readonly-role.js';
import { openWarehouse, withSearchPath, type OpenOptions, type Warehouse } from '../../src/loaders/warehouse.js';
import { PG_BASE_URL } from '../helpers/dialects.js';

/**
 * `warehouse.schema` and `warehouse.views_schema` (Postgres): the tables, svcsync's state, kysely's
 * migration records and the leases in one schema, the `_live` and `report_` views in another, so a
 * BI tool shown only that one shows only the views. Views already in the tables' schema move on
 * the next rebuild, and back when the setting is removed.
 */

const VIEWS = viewDefinitions(CATALOG).map((v) => v.name);
const REPORTS = VIEWS.filter((v) => v.startsWith('report_'));

describe('warehouse.schema and warehouse.views_schema in the configuration', () => {
  const base = { connections: [{ name: 'c', client_id: 'i', client_secret: 's', refresh_token: 'r' }] };
  it('are read on Postgres, refused on SQLite (it has no schemas), and must be plain lower-case names', () => {
    const ok = parseConfig({ ...base, warehouse: { url: 'postgres://u@h/db', schema: 'raw', views_schema: 'bi' } }, { env: {} });
    expect([ok.warehouse.schema, ok.warehouse.views_schema]).toEqual(['raw', 'bi']);
    expect(() => parseConfig({ ...base, warehouse: { url: 'sqlite:./w.db', views_schema: 'bi' } }, { env: {} })).toThrow(
      /warehouse\.views_schema.*Postgres warehouse only/s,
    );
    expect(() => parseConfig({ ...base, warehouse: { url: 'postgres://u@h/db', schema: 'Raw Data' } }, { env: {} })).toThrow(
      /warehouse\.schema/,
    );
  });

  it('the search_path goes after any options the URL has, so it wins', () => {
    const url = withSearchPath('postgres://u@h:5432/db?options=-c%20statement_timeout%3D5000', 'raw');
    expect(new URL(url).searchParams.get('options')).toBe('-c statement_timeout=5000 -c search_path=raw');
    expect(new URL(withSearchPath('postgres://u@h/db', 'raw')).searchParams.get('options')).toBe('-c search_path=raw');
  });
});

describe('a Postgres warehouse with its views in a schema of their own', () => {
  // Named as the run's schemas are, so the run's teardown drops them (test/global-setup.ts).
  const prefix = `t_${process.env['SVCSYNC_TEST_RUN'] ?? 'x'}_${randomBytes(4).toString('hex')}`;
  const tables = `${prefix}_raw`;
  const views = `${prefix}_bi`;
  const role = `svcsync_ro_${randomBytes(5).toString('hex')}`;
  let admin: pg.Client;
  const open: Warehouse[] = [];

  async function warehouse(options: OpenOptions): Promise<Warehouse> {
    const w = await openWarehouse(PG_BASE_URL, { poolSize: 2, ...options });
    open.push(w);
    return w;
  }
  async function rows<T>(w: Warehouse, text: string, params: unknown[] = []): Promise<T[]> {
    return (await w.db.executeQuery<T>(CompiledQuery.raw(text, params))).rows;
  }
  async function viewsIn(schema: string): Promise<string[]> {
    const r = await admin.query<{ name: string }>('SELECT viewname AS name FROM pg_views WHERE schemaname = $1 ORDER BY 1', [schema]);
    return r.rows.map((x) => x.name);
  }

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: PG_BASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    for (const w of open) await w.close().catch(() => undefined);
    await admin.query(`DROP OWNED BY "${role}"`).catch(() => undefined);
    await admin.query(`DROP ROLE IF EXISTS "${role}"`).catch(() => undefined);
    // Inside a vitest run the global teardown drops the run's schemas; outside one, here.
    if (!process.env['SVCSYNC_TEST_RUN'])
      for (const s of [tables, views]) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`).catch(() => undefined);
    await admin.end();
  });

  it('makes both schemas, keeps tables, state, migration records and leases in one and every view in the other', async () => {
    const w = await warehouse({ schema: tables, viewsSchema: views });
    expect(w.schemas).toEqual({ tables, views });
    expect((await migrateToLatest(w)).derived).toBe('applied');
    const [current] = await rows<{ schema: string }>(w, 'SELECT current_schema() AS schema');
    expect(current!.schema).toBe(tables);
    const inTables = await admin.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = $1', [tables]);
    const names = inTables.rows.map((r) => r.name);
    for (const t of ['inventory_sales_orders', '_svcsync_tables', '_svcsync_migrations', '_svcsync_derived', '_svcsync_leases'])
      expect(names, t).toContain(t);
    expect(await viewsIn(views)).toEqual([...VIEWS].sort());
    expect(await viewsIn(tables)).toEqual([]);
    // A lease, on the leases' own connection: it finds its table through the same search_path.
    const lease = (await w.leases.acquire('c', 'org-1', { wait: false }))!;
    expect(lease.generation).toBe(1);
    await lease.release();
    // The views read the tables across the schemas, and carry their comments where they are.
    const [count] = await rows<{ n: string }>(w, `SELECT count(*) AS n FROM "${views}"."report_sales_order_lines"`);
    expect(Number(count!.n)).toBe(0);
    const comment = await admin.query<{ c: string }>(`SELECT obj_description(to_regclass($1), 'pg_class') AS c`, [
      `"${views}"."report_sales_order_lines"`,
    ]);
    expect(comment.rows[0]!.c).toMatch(/One row per line item/);
    const [record] = await rows<{ views: string }>(w, 'SELECT views FROM _svcsync_derived');
    expect(JSON.parse(record!.views)).toContain(`${views}.report_sales_order_lines`);
    expect((await migrateToLatest(w)).derived).toBe('current');
  });

  it('the read-only role may use both schemas and read the views; it is told to look in the views first', async () => {
    const w = await warehouse({ schema: tables, viewsSchema: views });
    const result = await createReadonlyRole(w, role);
    expect([result.schema, result.viewsSchema]).toEqual([tables, views]);
    const granted = await admin.query<{ t: boolean; v: boolean; report: boolean; raw: boolean }>(
      `SELECT has_schema_privilege($1, $2, 'USAGE') AS t, has_schema_privilege($1, $3, 'USAGE') AS v,
              has_table_privilege($1, $4, 'SELECT') AS report, has_table_privilege($1, $5, 'SELECT') AS raw`,
      [role, tables, views, `"${views}"."report_sales_order_lines"`, `"${tables}"."inventory_sales_orders"`],
    );
    expect(granted.rows[0]).toEqual({ t: true, v: true, report: true, raw: true });
  });

  it('views in the tables\u2019 schema move to views_schema on the next rebuild, and back when it is unset', async () => {
    const own = `${prefix}_moved`;
    const target = `${prefix}_moved_bi`;
    const before = await warehouse({ schema: own });
    expect((await migrateToLatest(before)).derived).toBe('applied');
    expect(await viewsIn(own)).toEqual([...VIEWS].sort());

    const moved = await warehouse({ schema: own, viewsSchema: target });
    expect((await migrateToLatest(moved)).derived).toBe('applied');
    expect(await viewsIn(target)).toEqual([...VIEWS].sort());
    expect(await viewsIn(own)).toEqual([]);
    for (const report of REPORTS) await rows(moved, `SELECT * FROM "${target}"."${report}" LIMIT 1`);

    const back = await warehouse({ schema: own });
    expect((await migrateToLatest(back)).derived).toBe('applied');
    expect(await viewsIn(own)).toEqual([...VIEWS].sort());
    expect(await viewsIn(target)).toEqual([]);
  });
});
