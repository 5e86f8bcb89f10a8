import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach } from 'vitest';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { type Dialect } from '../../src/loaders/sql-dialect.js';
import { copyPostgresTemplate, copySqliteTemplate } from './templates.js';

export const PG_BASE_URL = process.env['SVCSYNC_TEST_PG'] ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Every suite that touches a warehouse runs once per dialect (as kysely's own tests do). */
export const DIALECTS: readonly Dialect[] = ['sqlite', 'postgres'];

export interface TestWarehouse {
  url: string;
  open(): Promise<Warehouse>;
  drop(): Promise<void>;
}

let counter = 0;

/**
 * A fresh, empty warehouse: a new SQLite file, or a new Postgres schema (selected through
 * search_path) so that test files running side by side never see each other's tables.
 */
export async function freshWarehouse(dialect: Dialect): Promise<TestWarehouse> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'svcsync-test-'));
    const url = `sqlite:${join(dir, 'warehouse.db')}`;
    return { url, open: () => openWarehouse(url), drop: () => Promise.resolve() };
  }
  // The run's id (test/global-setup.ts) lets the run drop its schemas at the end; the random
  // part keeps names unique however test files share processes and milliseconds.
  const run = process.env['SVCSYNC_TEST_RUN'];
  const schema = `t_${run ?? 'x'}_${process.pid}_${counter++}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_BASE_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.end();
  const url = `${PG_BASE_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return {
    url,
    open: () => openWarehouse(url, { poolSize: 4 }),
    drop: async () => {
      // Inside a vitest run the global teardown drops every schema of the run at once.
      if (run) return;
      const c = new pg.Client({ connectionString: PG_BASE_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    },
  };
}

/**
 * A fresh warehouse already migrated to the latest migration, as `freshWarehouse` then
 * `migrateToLatest` leave it: a copy of the run's migrated template (test/helpers/templates.ts),
 * or that migration itself where the run has no template.
 */
export async function migratedWarehouse(dialect: Dialect): Promise<TestWarehouse> {
  const url = dialect === 'sqlite' ? copySqliteTemplate() : await copyPostgresTemplate(PG_BASE_URL);
  if (url !== undefined) {
    const options = dialect === 'sqlite' ? {} : { poolSize: 4 };
    // Inside a vitest run the global teardown drops the copies with the run.
    return { url, open: () => openWarehouse(url, options), drop: () => Promise.resolve() };
  }
  const tw = await freshWarehouse(dialect);
  const warehouse = await tw.open();
  try {
    await migrateToLatest(warehouse);
  } finally {
    await warehouse.close();
  }
  return tw;
}

/**
 * A fresh Postgres warehouse whose tables and views have schemas of their own
 * (`warehouse.schema`, `warehouse.views_schema`), named for this run so that its teardown drops them.
 */
export function warehouseInSchemas(): TestWarehouse & { schemas: { tables: string; views: string } } {
  const prefix = `t_${process.env['SVCSYNC_TEST_RUN'] ?? 'x'}_${process.pid}_${counter++}_${randomBytes(4).toString('hex')}`;
  const schemas = { tables: `${prefix}_svcsync`, views: `${prefix}_analytics` };
  return {
    url: PG_BASE_URL,
    schemas,
    open: () => openWarehouse(PG_BASE_URL, { poolSize: 4, schema: schemas.tables, viewsSchema: schemas.views }),
    drop: async () => {
      // Inside a vitest run the global teardown drops every schema of the run at once.
      if (process.env['SVCSYNC_TEST_RUN']) return;
      const c = new pg.Client({ connectionString: PG_BASE_URL });
      await c.connect();
      for (const s of [schemas.tables, schemas.views]) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
      await c.end();
    },
  };
}

/**
 * For a describe block: a function that opens a fresh, migrated warehouse of `dialect`, which is
 * closed after the test that opened it.
 */
export function migratedWarehouses(dialect: Dialect): () => Promise<Warehouse> {
  let warehouse: Warehouse | undefined;
  afterEach(async () => {
    await warehouse?.close();
    warehouse = undefined;
  });
  return async () => {
    warehouse = await (await migratedWarehouse(dialect)).open();
    return warehouse;
  };
}
