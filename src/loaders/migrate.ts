import { sql, Migrator, type DatabaseIntrospector, type Migration, type MigrationResultSet, type TableMetadata } from 'kysely';
import type { AnyDb } from './db.js';
import { MIGRATIONS } from '../../migrations/index.js';
import { CATALOG, type StreamSpec } from '../catalog/index.js';
import { WarehouseError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { svcsyncVersion } from '../core/version.js';
import {
  applyDerived,
  derivedVerdict,
  dropBeforeMigrations,
  readDerivedRecord,
  type DerivedOutcome,
  type DerivedRecord,
  ViewsInUseError,
} from './derived/apply-derived.js';
import { deriveObjects, derivedObjectsOf, type DerivedObjects } from './derived/derived-objects.js';
import { existingHistoryTables } from './derived/ensure-history.js';
import type { Warehouse } from './warehouse.js';
import { classifyWarehouseError } from './warehouse-errors.js';

export interface MigrationReport {
  applied: string[];
  pending: string[];
  /**
   * What became of the views and the data dictionary (src/loaders/derived/): rebuilt, already
   * current, or left as a newer svcsync made them.
   */
  derived: DerivedOutcome;
}

export interface MigrateOptions {
  /** The catalog the views and the dictionary come from (tests change it); `CATALOG` by default. */
  catalog?: readonly StreamSpec[];
  /** The derivation's revision, `DERIVED_REVISION` by default (tests play an older svcsync). */
  derivedRevision?: number;
  /** Where a refusal to touch a newer svcsync's objects is told; the warehouse's logger by default. */
  logger?: Logger;
  /** The migrations, `MIGRATIONS` by default (tests add one). */
  migrations?: Record<string, Migration>;
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

/**
 * The same questions on SQLite, which has no schemas. Kysely's own introspector reads the columns
 * of every table and view (`pragma_table_info` of each): slow, and it fails outright on a view of
 * the user's that reads one of svcsync's views while they are dropped for a migration.
 */
export function sqliteScopedIntrospector(db: AnyDb): DatabaseIntrospector {
  const getTables = async (): Promise<TableMetadata[]> => {
    const r = await sql<{ name: string }>`SELECT name FROM sqlite_master
      WHERE type = 'table' AND name IN (${MIGRATION_TABLE}, ${MIGRATION_LOCK_TABLE})`.execute(db);
    return r.rows.map((t) => ({ name: t.name, isView: false, columns: [] }));
  };
  return { getSchemas: () => Promise.resolve([]), getTables, getMetadata: async () => ({ tables: await getTables() }) };
}

/** The warehouse's Kysely with a scoped introspector in place of the database-wide one. */
function withIntrospector(db: AnyDb, introspection: DatabaseIntrospector): AnyDb {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'introspection') return introspection;
      // Kysely keeps its state in private fields: its methods must run on the real instance.
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The migrations, the first to run dropping the derived views beforehand in the same transaction:
 * Postgres refuses to alter or drop a column a view reads (SQLite to drop or rename one), so no
 * migration needs to think of the views.
 */
function droppingDerivedViews(
  warehouse: Warehouse,
  objects: DerivedObjects,
  migrations: Record<string, Migration>,
): Record<string, Migration> {
  let dropped = false;
  const out: Record<string, Migration> = {};
  for (const [name, migration] of Object.entries(migrations)) {
    out[name] = {
      ...migration,
      up: async (db) => {
        if (!dropped) {
          dropped = true;
          await dropBeforeMigrations(db, warehouse.faults, objects);
        }
        await migration.up(db);
      },
    };
  }
  return out;
}

async function migrator(warehouse: Warehouse, migrations: Record<string, Migration> = MIGRATIONS): Promise<Migrator> {
  // Kysely looks for its bookkeeping tables in every schema; two warehouses in one Postgres
  // database (different search_path) would see each other's. Pin them to ours.
  const schema = await warehouse.sql.migrationSchema(warehouse.db);
  return new Migrator({
    db: withIntrospector(warehouse.db, schema ? scopedIntrospector(warehouse.db, schema) : sqliteScopedIntrospector(warehouse.db)),
    provider: { getMigrations: () => Promise.resolve(migrations) },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
}

/**
 * The names of the applied migrations, from one plain read of the bookkeeping table (no lock);
 * undefined when there is no table yet.
 */
async function appliedMigrations(warehouse: Warehouse): Promise<Set<string> | undefined> {
  const schema = await warehouse.sql.migrationSchema(warehouse.db);
  const table = schema ? sql.id(schema, MIGRATION_TABLE) : sql.id(MIGRATION_TABLE);
  try {
    const r = await sql<{ name: string }>`SELECT name FROM ${table}`.execute(warehouse.db);
    return new Set(r.rows.map((row) => row.name));
  } catch {
    return undefined;
  }
}

/**
 * How the warehouse's tables compare with this svcsync's migrations, read without changing
 * anything: `empty` (svcsync never migrated it), `behind` (some migrations pending: an older
 * svcsync wrote it), `current`, or `newer` (a newer svcsync applied migrations this one does not
 * know; its tables hold at least what this one reads).
 */
export async function migrationState(
  warehouse: Warehouse,
  migrations: Record<string, Migration> = MIGRATIONS,
): Promise<'empty' | 'behind' | 'current' | 'newer'> {
  const names = await appliedMigrations(warehouse);
  if (!names || names.size === 0) return 'empty';
  if (!Object.keys(migrations).every((name) => names.has(name))) return 'behind';
  return [...names].some((name) => !(name in migrations)) ? 'newer' : 'current';
}

/** A newer svcsync's objects are told about once per warehouse a process opens, not before every run. */
const toldNewer = new WeakSet<Warehouse>();

function tellNewer(warehouse: Warehouse, logger: Logger | undefined, objects: DerivedObjects, recorded: DerivedRecord | undefined): void {
  if (!logger || toldNewer.has(warehouse)) return;
  toldNewer.add(warehouse);
  const by = recorded ? `svcsync ${recorded.version} (derived revision ${recorded.revision})` : 'a newer svcsync';
  logger.warn(
    {
      warehouse: warehouse.displayUrl,
      recorded_revision: recorded?.revision ?? null,
      recorded_version: recorded?.version ?? null,
      revision: objects.revision,
      version: svcsyncVersion(),
    },
    `${warehouse.displayUrl}: its views and data dictionary were made by ${by}, newer than this svcsync ` +
      `${svcsyncVersion()} (derived revision ${objects.revision}); they are left as they are and the sync runs. ` +
      'Upgrade svcsync here to the version the other processes run.',
  );
}

/**
 * Applies every pending migration, then rebuilds the derived objects (views, dictionary, comments,
 * foreign keys; src/loaders/derived/) when the catalog or their code changed; safe to call before
 * every sync. When nothing is pending and the derived objects are current it only reads (the
 * migration records and `_svcsync_derived`): kysely's migrator takes a database-wide lock (a
 * transaction holding an advisory lock) even then, and one process paused inside it (SIGSTOP, a
 * hung VM) stalled every other process's runs behind it.
 *
 * All or nothing, one process at a time, on both dialects: the pending migrations and their
 * records run in one transaction (Postgres and SQLite both roll DDL back), behind kysely's
 * advisory lock on Postgres and a `BEGIN IMMEDIATE` on SQLite (src/loaders/sqlite-driver.ts); the
 * derived objects are rebuilt in a second one behind the same lock. A second process waits for
 * the first, then reads the records inside its own transaction and finds nothing to do; a
 * migration cut short (a full disk, a lost connection) leaves nothing behind, so running it again
 * succeeds.
 */
export async function migrateToLatest(warehouse: Warehouse, options: MigrateOptions = {}): Promise<MigrationReport> {
  const catalog = options.catalog ?? CATALOG;
  // The dictionary describes the history tables the warehouse holds: made by a run start, never by a migration.
  const history = await existingHistoryTables(warehouse.db, warehouse.dialect, catalog);
  const objects =
    options.derivedRevision === undefined
      ? derivedObjectsOf(catalog, warehouse.dialect, warehouse.schemas, history)
      : deriveObjects(catalog, warehouse.dialect, options.derivedRevision, warehouse.schemas, history);
  const logger = options.logger ?? warehouse.logger;
  const migrations = options.migrations ?? MIGRATIONS;
  const names = await appliedMigrations(warehouse);
  const known = Object.keys(migrations);
  let applied: string[] = [];
  const pending: string[] = [];
  let newerMigrations = false;
  if (names && known.every((name) => names.has(name))) {
    newerMigrations = [...names].some((name) => !(name in migrations));
    // Every migration is applied, so the record's table exists: one read.
    const recorded = await readDerivedRecord(warehouse.db, warehouse.dialect, 'exists');
    const verdict = derivedVerdict(recorded, objects, newerMigrations);
    if (verdict === 'current') return { applied, pending, derived: 'current' };
    if (verdict === 'newer') {
      tellNewer(warehouse, logger, objects, recorded);
      return { applied, pending, derived: 'newer' };
    }
  } else {
    const m = await migrator(warehouse, droppingDerivedViews(warehouse, objects, migrations));
    const result: MigrationResultSet = await m.migrateToLatest();
    applied = (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    if (result.error) throw migrationFailure(warehouse, result);
    // Kysely runs every pending migration or none: with no error, nothing is left pending.
  }
  let derived: DerivedOutcome;
  try {
    derived = await applyDerived(warehouse, objects, { newerMigrations });
  } catch (error) {
    throw derivedFailure(warehouse, error);
  }
  if (derived === 'newer') tellNewer(warehouse, logger, objects, await readDerivedRecord(warehouse.db, warehouse.dialect));
  return { applied, pending, derived };
}

/** The hint of a classified fault without its "run the same command again" ending, which the caller words for itself. */
function hintOf(cause: WarehouseError): string {
  return (cause.hint ?? '').replace(/, then run the same command again.*$/, '.');
}

/** What a failed rebuild of the derived objects tells the user: the warehouse, the cause and that nothing was kept. */
function derivedFailure(warehouse: Warehouse, error: unknown): unknown {
  if (!(error instanceof WarehouseError) || error instanceof ViewsInUseError) return error;
  return new WarehouseError(`Could not rebuild the views and the data dictionary: ${error.message}`, {
    fault: error.fault,
    warehouse: warehouse.displayUrl,
    hint:
      `${hintOf(error)} Nothing of it was kept (they are rebuilt in one transaction): \`svcsync migrate\` (or the same ` +
      'command) rebuilds them once the cause is fixed.',
    cause: error,
  });
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
  if (result.error instanceof ViewsInUseError) return result.error;
  const cause = classifyWarehouseError(result.error, warehouse.faults);
  const what = failed ? `migration ${failed}` : 'the migrations';
  return new WarehouseError(`Could not apply ${what}: ${cause.message}`, {
    fault: cause.fault,
    warehouse: warehouse.displayUrl,
    hint:
      `${hintOf(cause)} Nothing of it was kept (pending migrations run in ` +
      'one transaction): `svcsync migrate` (or the same command) applies them once the cause is fixed.',
    cause: result.error,
  });
}

export async function migrationStatus(warehouse: Warehouse): Promise<Array<{ name: string; executedAt: Date | undefined }>> {
  const all = await (await migrator(warehouse)).getMigrations();
  return all.map((x) => ({ name: x.name, executedAt: x.executedAt }));
}
