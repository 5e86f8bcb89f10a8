import { sql } from 'kysely';
import { WarehouseError } from '../../core/errors.js';
import { svcsyncVersion } from '../../core/version.js';
import type { AnyDb } from '../db.js';
import { ident } from '../sql-dialect.js';
import type { Warehouse } from '../warehouse.js';
import type { WarehouseTarget } from '../warehouse-errors.js';
import type { DerivedObjects } from './derived-objects.js';

/**
 * Applies the derived objects (src/loaders/derived/derived-objects.ts) to a warehouse: all in one
 * transaction, behind the migrations' lock, recorded in `_svcsync_derived` (one row: the
 * revision and hash applied, the views created, when, by which svcsync version).
 */

export const DERIVED_TABLE = '_svcsync_derived';

/**
 * The key of kysely's migration lock on Postgres (its PostgresAdapter's `LOCK_ID`). The derived
 * objects take it as a transaction lock, so they are never rebuilt while another process runs
 * migrations, nor by two processes at once.
 */
export const MIGRATION_LOCK_KEY = '3853314791062309107';

/** What `_svcsync_derived` says of the objects in place. */
export interface DerivedRecord {
  revision: number;
  hash: string;
  /** The views it created, in creation order. */
  views: string[];
  appliedAt: string;
  version: string;
}

/**
 * What a process does with the derived objects: `current` (the record matches: nothing), `apply`
 * (rebuild them), or `newer` (a newer svcsync made them, or the warehouse holds migrations this
 * version does not know: leave them alone, as pg-boss refuses a version mismatch).
 */
export type DerivedVerdict = 'current' | 'apply' | 'newer';

/** What became of the derived objects in one `migrateToLatest`. */
export type DerivedOutcome = 'applied' | 'current' | 'newer';

export function derivedVerdict(
  recorded: Pick<DerivedRecord, 'revision' | 'hash'> | undefined,
  ours: Pick<DerivedObjects, 'revision' | 'hash'>,
  newerMigrations: boolean,
): DerivedVerdict {
  if (recorded && recorded.revision === ours.revision && recorded.hash === ours.hash) return 'current';
  if (newerMigrations || (recorded !== undefined && recorded.revision > ours.revision)) return 'newer';
  return 'apply';
}

type DialectName = Warehouse['dialect'];

/** Whether `_svcsync_derived` exists (asked first: inside a Postgres transaction a failed read ends it). */
async function recordTableExists(db: AnyDb, dialect: DialectName): Promise<boolean> {
  const r =
    dialect === 'postgres'
      ? await sql`SELECT 1 FROM pg_catalog.pg_class WHERE relname = ${DERIVED_TABLE}
          AND relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p')`.execute(db)
      : await sql`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ${DERIVED_TABLE}`.execute(db);
  return r.rows.length > 0;
}

/**
 * The record, or undefined when there is none. `table` says whether `_svcsync_derived` is known to
 * exist (every migration applied); else it is looked up first, since inside a Postgres
 * transaction a failed read would end the transaction.
 */
export async function readDerivedRecord(
  db: AnyDb,
  dialect: DialectName,
  table: 'exists' | 'unknown' = 'unknown',
): Promise<DerivedRecord | undefined> {
  if (table === 'unknown' && !(await recordTableExists(db, dialect))) return undefined;
  const r = await sql<{ revision: number | string; hash: string; views: string; applied_at: string; svcsync_version: string }>`
    SELECT revision, hash, views, applied_at, svcsync_version FROM ${sql.id(DERIVED_TABLE)}`.execute(db);
  const row = r.rows[0];
  if (!row) return undefined;
  return {
    revision: Number(row.revision),
    hash: row.hash,
    views: JSON.parse(row.views) as string[],
    appliedAt: row.applied_at,
    version: row.svcsync_version,
  };
}

/**
 * Statements without parameters, in order. Postgres takes a chunk of them as one round trip
 * (its simple query protocol); better-sqlite3 prepares one statement at a time.
 */
async function runStatements(db: AnyDb, dialect: DialectName, statements: readonly string[]): Promise<void> {
  const chunk = dialect === 'postgres' ? 200 : 1;
  for (let i = 0; i < statements.length; i += chunk) await sql.raw(statements.slice(i, i + chunk).join(';\n')).execute(db);
}

/**
 * A view as the record and the derived objects name it: `name`, in the connection's schema, or
 * `schema.name` when the views live in a schema of their own (`warehouse.views_schema`).
 */
function viewParts(entry: string): { schema: string | undefined; name: string } {
  const dot = entry.indexOf('.');
  return dot < 0 ? { schema: undefined, name: entry } : { schema: entry.slice(0, dot), name: entry.slice(dot + 1) };
}

/** The views that exist among those named, each as the DROP statement that removes it. */
async function existingViewDrops(db: AnyDb, dialect: DialectName, entries: readonly string[]): Promise<string[]> {
  if (dialect === 'sqlite') {
    const r = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'view'`.execute(db);
    const have = new Set(r.rows.map((v) => v.name));
    return entries.filter((e) => have.has(e)).map((e) => `DROP VIEW ${ident(e)}`);
  }
  const schemas = [...new Set(entries.map((e) => viewParts(e).schema).filter((s): s is string => s !== undefined))];
  const r = await sql<{ schema: string; name: string; here: boolean }>`SELECT schemaname AS schema, viewname AS name,
      schemaname = current_schema() AS here FROM pg_catalog.pg_views
      WHERE schemaname = current_schema() OR schemaname = ANY(${schemas}::text[])`.execute(db);
  const have = new Set(r.rows.map((v) => `${v.schema}.${v.name}`));
  const current = r.rows.find((v) => v.here)?.schema;
  return entries.flatMap((entry) => {
    const { schema, name } = viewParts(entry);
    const where = schema ?? current;
    if (where === undefined || !have.has(`${where}.${name}`)) return [];
    return [`DROP VIEW ${schema === undefined ? ident(name) : `${ident(schema)}.${ident(name)}`}`];
  });
}

/**
 * Drops svcsync's views, dependents first: those the record names (in reverse creation order),
 * then any of `current` that exist (a warehouse whose views no record lists). Without CASCADE: a
 * view of the user's own that reads one of them stops the drop, with an error that names it.
 * Views the record places elsewhere than `current` (views_schema set, changed or unset since) are
 * dropped where they are, so they move with the setting.
 */
async function dropDerivedViews(
  db: AnyDb,
  target: WarehouseTarget,
  recorded: readonly string[] | undefined,
  current: readonly string[],
): Promise<void> {
  const order = [...new Set([...[...(recorded ?? [])].reverse(), ...[...current].reverse()])];
  try {
    await runStatements(db, target.dialect, await existingViewDrops(db, target.dialect, order));
  } catch (error) {
    throw viewsInUse(error, target) ?? error;
  }
}

/**
 * Drops the derived views before pending migrations run (Postgres refuses to alter a column a
 * view reads), in the migrations' transaction, and removes the record so that every process
 * rebuilds them after. A newer svcsync's objects are left alone.
 */
export async function dropBeforeMigrations(db: AnyDb, target: WarehouseTarget, objects: DerivedObjects): Promise<void> {
  const recorded = await readDerivedRecord(db, target.dialect);
  if (recorded && recorded.revision > objects.revision) return;
  await dropDerivedViews(
    db,
    target,
    recorded?.views,
    objects.views.map((v) => v.name),
  );
  if (recorded) await sql`DELETE FROM ${sql.id(DERIVED_TABLE)}`.execute(db);
}

async function rewriteDictionary(db: AnyDb, objects: DerivedObjects): Promise<void> {
  await db.deleteFrom('_svcsync_columns').execute();
  await db.deleteFrom('_svcsync_tables').execute();
  for (let i = 0; i < objects.tables.length; i += 100)
    await db
      .insertInto('_svcsync_tables')
      .values(objects.tables.slice(i, i + 100))
      .execute();
  for (let i = 0; i < objects.columns.length; i += 100) {
    await db
      .insertInto('_svcsync_columns')
      .values(objects.columns.slice(i, i + 100))
      .execute();
  }
}

/** The child tables' foreign keys that do not exist yet (one added by an earlier svcsync stays as it is). */
async function addMissingForeignKeys(db: AnyDb, objects: DerivedObjects): Promise<void> {
  if (objects.foreignKeys.length === 0) return;
  const existing = await sql<{ name: string }>`SELECT conname AS name FROM pg_catalog.pg_constraint
    WHERE contype = 'f' AND connamespace = current_schema()::regnamespace`.execute(db);
  const have = new Set(existing.rows.map((r) => r.name));
  await runStatements(
    db,
    'postgres',
    objects.foreignKeys.filter((fk) => !have.has(fk.name)).map((fk) => fk.add),
  );
}

/**
 * A view of the user's own reads one of svcsync's views, so Postgres refused to drop it. svcsync
 * does not drop what it did not create: the message names the view and says how to set it aside.
 */
export class ViewsInUseError extends WarehouseError {}

/** The error for a refused drop of svcsync's views, when other objects depend on them (Postgres 2BP01). */
function viewsInUse(error: unknown, target: WarehouseTarget): ViewsInUseError | undefined {
  const cause = error instanceof WarehouseError ? error.cause : error;
  const e = (cause && typeof cause === 'object' ? cause : {}) as { code?: unknown; detail?: unknown; message?: unknown };
  if (e.code !== '2BP01') return undefined;
  const detail = typeof e.detail === 'string' ? ` (${e.detail.replace(/\n/g, '; ')})` : '';
  return new ViewsInUseError(`${target.displayUrl}: svcsync could not re-create its views: ${String(e.message)}${detail}`, {
    fault: 'other',
    warehouse: target.displayUrl,
    hint:
      'a view of your own reads one of the views svcsync re-creates when an upgrade changes them. Save its definition ' +
      "(SELECT pg_get_viewdef('name')), drop it, run `svcsync migrate`, then create it again.",
    cause: error,
  });
}

export interface ApplyOptions {
  /** The warehouse holds migrations this svcsync does not know (a newer one migrated it). */
  newerMigrations: boolean;
  now?: () => number;
}

/**
 * Rebuilds the derived objects when the record says they differ, in one transaction: the views
 * (dropped and created again), the dictionary rows, the comments, the missing foreign keys, and
 * the record. Inside the transaction it holds the migrations' lock (Postgres: the advisory lock;
 * SQLite: the write lock its BEGIN IMMEDIATE took) and reads the record again, so of several
 * processes at once one rebuilds and the others find the work done.
 */
export async function applyDerived(warehouse: Warehouse, objects: DerivedObjects, options: ApplyOptions): Promise<DerivedOutcome> {
  const { dialect } = warehouse;
  const now = options.now ?? Date.now;
  const verdict = await warehouse.transaction(async (trx) => {
    if (dialect === 'postgres') await sql`SELECT pg_advisory_xact_lock(${sql.raw(MIGRATION_LOCK_KEY)})`.execute(trx);
    const recorded = await readDerivedRecord(trx, dialect);
    const verdict = derivedVerdict(recorded, objects, options.newerMigrations);
    if (verdict !== 'apply') return verdict;
    await dropDerivedViews(
      trx,
      warehouse.faults,
      recorded?.views,
      objects.views.map((v) => v.name),
    );
    // One at a time, so an error names the view's table (a column the catalog has and no migration added).
    for (const view of objects.views) await sql.raw(view.create).execute(trx);
    await rewriteDictionary(trx, objects);
    await runStatements(trx, dialect, objects.comments);
    await addMissingForeignKeys(trx, objects);
    await trx.deleteFrom(DERIVED_TABLE).execute();
    await trx
      .insertInto(DERIVED_TABLE)
      .values({
        id: 1,
        revision: objects.revision,
        hash: objects.hash,
        views: JSON.stringify(objects.views.map((v) => v.name)),
        applied_at: new Date(now()).toISOString(),
        svcsync_version: svcsyncVersion(),
      })
      .execute();
    return verdict;
  });
  return verdict === 'apply' ? 'applied' : verdict;
}
