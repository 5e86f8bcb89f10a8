import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { openWarehouse } from '../../src/loaders/warehouse.js';

/**
 * Migrated warehouses by copy, as kysely's own test setup does: the run migrates one warehouse of
 * each dialect once (test/global-setup.ts), and every test that wants a migrated warehouse gets a
 * copy of it. Migrating a warehouse costs 1-4 s (some 30 migrations, then the views, comments,
 * foreign keys and data dictionary); a copy costs a few milliseconds on SQLite (a file copy) and
 * about 0.1 s on Postgres (`CREATE DATABASE … TEMPLATE`, a copy of the database's files).
 *
 * A copy holds exactly what the migration wrote: tables, views, the migration records and the
 * derived record, whose digest does not name the schema. Tests of the migration itself (the
 * migrate tests, upgrades of legacy warehouses, warehouses in schemas of their own, another
 * catalog or revision) start from an empty warehouse and migrate it for real.
 */

/** Where the templates are, for the test workers (set by the global setup). */
const SQLITE_TEMPLATE = 'SVCSYNC_TEST_SQLITE_TEMPLATE';
const PG_TEMPLATE = 'SVCSYNC_TEST_PG_TEMPLATE';

/** The schema of the Postgres template, kept in every copy (each copy is a database of its own). */
const COPY_SCHEMA = 'warehouse';

/** The run's databases: the run's own, the template and every copy start with this. */
export function runDatabasePrefix(run: string): string {
  return `svcsync_test_${run}`;
}

function databaseUrl(base: string, database: string, schema?: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  url.search = schema ? `?options=${encodeURIComponent(`-c search_path=${schema}`)}` : '';
  return url.toString();
}

async function withAdmin<T>(base: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The SQLite template: a file migrated once, closed (its write-ahead log folded in) before any copy. */
async function makeSqliteTemplate(): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), 'svcsync-template-')), 'warehouse.db');
  const warehouse = await openWarehouse(`sqlite:${file}`);
  try {
    await migrateToLatest(warehouse);
  } finally {
    await warehouse.close();
  }
  return file;
}

/**
 * The Postgres template: a database of the run's, migrated once in one schema, with no session
 * left on it (CREATE DATABASE refuses to copy a database in use).
 */
async function makePostgresTemplate(base: string, run: string): Promise<string> {
  const database = `${runDatabasePrefix(run)}_template`;
  await withAdmin(base, (c) => c.query(`CREATE DATABASE "${database}"`));
  await withAdmin(databaseUrl(base, database), (c) => c.query(`CREATE SCHEMA "${COPY_SCHEMA}"`));
  const warehouse = await openWarehouse(databaseUrl(base, database, COPY_SCHEMA), { poolSize: 2 });
  try {
    await migrateToLatest(warehouse);
  } finally {
    await warehouse.close();
  }
  return database;
}

/**
 * Makes the run's templates and tells the workers where they are. A dialect whose template cannot
 * be made (no Postgres here) is left without one: its tests then migrate each warehouse, and fail
 * on their own if the database is missing.
 */
export async function makeTemplates(run: string, pgBase: string | undefined): Promise<void> {
  const [sqlite, postgres] = await Promise.all([
    makeSqliteTemplate(),
    pgBase
      ? makePostgresTemplate(pgBase, run).catch((error: unknown) => {
          console.warn(`could not make the run's Postgres template: ${(error as Error).message}`);
          return undefined;
        })
      : undefined,
  ]);
  process.env[SQLITE_TEMPLATE] = sqlite;
  if (postgres) process.env[PG_TEMPLATE] = postgres;
}

/** Drops the run's template copies and the templates (the SQLite template's folder with them). */
export async function dropTemplates(run: string, pgBase: string): Promise<void> {
  const sqlite = process.env[SQLITE_TEMPLATE];
  if (sqlite) rmSync(dirname(sqlite), { recursive: true, force: true });
  if (!process.env[PG_TEMPLATE]) return;
  const pattern = `${runDatabasePrefix(run).replaceAll('_', '\\_')}\\_%`;
  const names = await withAdmin(pgBase, async (c) => {
    const r = await c.query<{ name: string }>('SELECT datname AS name FROM pg_database WHERE datname LIKE $1', [pattern]);
    return r.rows.map((row) => row.name);
  });
  // A few at a time: each drop waits for a checkpoint, which concurrent drops share.
  const queue = [...names];
  await Promise.all(
    Array.from({ length: 4 }, () =>
      withAdmin(pgBase, async (c) => {
        for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
          await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        }
      }),
    ),
  );
}

/** A copy of the run's migrated SQLite template as a new file, or undefined without a template. */
export function copySqliteTemplate(): string | undefined {
  const template = process.env[SQLITE_TEMPLATE];
  if (!template) return undefined;
  const file = join(mkdtempSync(join(tmpdir(), 'svcsync-test-')), 'warehouse.db');
  copyFileSync(template, file);
  return `sqlite:${file}`;
}

/**
 * A copy of the run's migrated Postgres template as a new database of the run's (dropped by the
 * run's teardown), or undefined without a template. Its URL selects the copied schema.
 */
export async function copyPostgresTemplate(base: string): Promise<string | undefined> {
  const template = process.env[PG_TEMPLATE];
  const run = process.env['SVCSYNC_TEST_RUN'];
  if (!template || !run) return undefined;
  // Random: test files share processes (and one process's threads) and milliseconds.
  const database = `${runDatabasePrefix(run)}_${randomBytes(6).toString('hex')}`;
  await withAdmin(base, (c) => c.query(`CREATE DATABASE "${database}" TEMPLATE "${template}"`));
  return databaseUrl(base, database, COPY_SCHEMA);
}
