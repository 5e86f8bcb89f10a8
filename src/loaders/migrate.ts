import { sql, Migrator, type DatabaseIntrospector, type MigrationResultSet, type TableMetadata } from 'kysely';
import type { AnyDb } from './db.js';
import { MIGRATIONS } from '../../migrations/index.js';
import { WarehouseError } from '../core/errors.js';
import type { Warehouse } from './warehouse.js';
import { classifyWarehouseError } from './warehouse-errors.js';

export interface MigrationReport {
  applied: string[];
  pending: string[];
}

const MIGRATION_TABLE = '_svcsync_migrations';
const MIGRATION_LOCK_TABLE = '_svcsync_migrations_lock';

/**
 * Kysely's migrator asks whether its two bookkeeping tables exist by introspecting every column
 * of every table and view in every schema (with a comment and sequence lookup per column), four
 * times per `migrateToLatest`. In a Postgres database that holds other schemas (a team's
 * warehouse, or a test database with hundreds) that took seconds before every sync. This
 * answers the only questions the migrator asks (does our schema exist; which of the two tables
 * exist in it) with two catalog lookups scoped to our schema.
 */
export function scopedIntrospector(db: AnyDb, schema: string): DatabaseIntrospector {
  const getTables = async (): Promise<TableMetadata[]> => {
    const r = await sql<{ name: string }>`SELECT c.relname AS name FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND c.relname IN (${MIGRATION_TABLE}, ${MIGRATION_LOCK_TABLE}) AND c.relkind IN ('r', 'p')`.execute(db);
    return r.rows.map((t) => ({ name: t.name, schema, isView: false, columns: [] }));
  };
  return {
    getSchemas: async () => {
      const r = await sql<{ name: string }>`SELECT nspname AS name FROM pg_catalog.pg_namespace WHERE nspname = ${schema}`.execute(db);
      return r.rows;
    },
    getTables,
    getMetadata: async () => ({ tables: await getTables() }),
  };
}

/** The warehouse's Kysely with the scoped introspector in place of the database-wide one. */
function withScopedIntrospection(db: AnyDb, schema: string): AnyDb {
  const introspection = scopedIntrospector(db, schema);
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'introspection') return introspection;
      // Kysely keeps its state in private fields: its methods must run on the real instance.
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function migrator(warehouse: Warehouse): Promise<Migrator> {
  // Kysely looks for its bookkeeping tables in every schema; two warehouses in one Postgres
  // database (different search_path) would see each other's. Pin them to ours.
  const schema = await warehouse.sql.migrationSchema(warehouse.db);
  return new Migrator({
    db: schema ? withScopedIntrospection(warehouse.db, schema) : warehouse.db,
    provider: { getMigrations: () => Promise.resolve(MIGRATIONS) },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
}

/**
 * Whether every migration is applied already, from one plain read of the bookkeeping table (no
 * lock): false when it cannot tell (no table yet).
 */
async function allApplied(warehouse: Warehouse): Promise<boolean> {
  const schema = await warehouse.sql.migrationSchema(warehouse.db);
  const table = schema ? sql.id(schema, MIGRATION_TABLE) : sql.id(MIGRATION_TABLE);
  try {
    const r = await sql<{ name: string }>`SELECT name FROM ${table}`.execute(warehouse.db);
    const applied = new Set(r.rows.map((row) => row.name));
    return Object.keys(MIGRATIONS).every((name) => applied.has(name));
  } catch {
    return false;
  }
}

/**
 * Applies every pending migration; safe to call before every sync. When nothing is pending it
 * only reads the bookkeeping table: kysely's migrator takes a database-wide lock (a transaction
 * holding an advisory lock) even then, and one process paused inside it (SIGSTOP, a hung VM)
 * stalled every other process's runs behind it.
 *
 * All or nothing, one process at a time, on both dialects: the pending migrations and their
 * records run in one transaction (Postgres and SQLite both roll DDL back), behind kysely's
 * advisory lock on Postgres and a `BEGIN IMMEDIATE` on SQLite (src/loaders/sqlite-driver.ts).
 * A second process waits for the first, then reads the records inside its own transaction and
 * finds nothing to do; a migration cut short (a full disk, a lost connection) leaves nothing
 * behind, so running it again succeeds.
 */
export async function migrateToLatest(warehouse: Warehouse): Promise<MigrationReport> {
  if (await allApplied(warehouse)) return { applied: [], pending: [] };
  const m = await migrator(warehouse);
  const result: MigrationResultSet = await m.migrateToLatest();
  const applied = (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  if (result.error) throw migrationFailure(warehouse, result);
  const all = await m.getMigrations();
  return { applied, pending: all.filter((x) => !x.executedAt).map((x) => x.name) };
}

/** What a failed migration run tells the user: the migration, the warehouse, the cause and that nothing was kept. */
function migrationFailure(warehouse: Warehouse, result: MigrationResultSet): WarehouseError {
  const failed = (result.results ?? []).find((r) => r.status === 'Error')?.migrationName;
  const missing = /previously executed migration (\S+) is missing/.exec(result.error instanceof Error ? result.error.message : '');
  if (missing) {
    return new WarehouseError(
      `${warehouse.displayUrl} was upgraded by a newer svcsync (its migration ${missing[1]} is unknown to this version)`,
      {
        fault: 'other',
        warehouse: warehouse.displayUrl,
        hint: 'run the svcsync version that upgraded it, or a newer one; an older version never downgrades a warehouse.',
      },
    );
  }
  const cause = classifyWarehouseError(result.error, warehouse.faults);
  const what = failed ? `migration ${failed}` : 'the migrations';
  return new WarehouseError(`Could not apply ${what}: ${cause.message}`, {
    fault: cause.fault,
    warehouse: warehouse.displayUrl,
    hint:
      `${(cause.hint ?? '').replace(/, then run the same command again.*$/, '.')} Nothing of it was kept (pending migrations run in ` +
      'one transaction): `svcsync migrate` (or the same command) applies them once the cause is fixed.',
    cause: result.error,
  });
}

export async function migrationStatus(warehouse: Warehouse): Promise<Array<{ name: string; executedAt: Date | undefined }>> {
  const all = await (await migrator(warehouse)).getMigrations();
  return all.map((x) => ({ name: x.name, executedAt: x.executedAt }));
}
