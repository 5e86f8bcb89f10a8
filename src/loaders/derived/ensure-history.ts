import { CompiledQuery, sql } from 'kysely';
import { historyTableDefinitions } from '../../catalog/history.js';
import type { StreamSpec } from '../../catalog/index.js';
import type { AnyDb } from '../db.js';
import { HistoryWriter } from '../history-writer.js';
import type { Warehouse } from '../warehouse.js';
import { MIGRATION_LOCK_KEY } from './apply-derived.js';
import {
  addedColumnStatements,
  asOfFunctionBody,
  asOfFunctionComment,
  asOfFunctionName,
  asOfFunctionStatement,
  createHistoryStatements,
  historyTableName,
  historyTables,
  type HistoryPlan,
  type HistoryTable,
  type StreamHistory,
} from './history-tables.js';

/**
 * Makes the history tables a run needs before its first page (src/loaders/derived/history-tables.ts)
 * and keeps `_svcsync_history`, the record of which connection keeps which table's history since
 * when. A table newly turned on for a connection starts its history from the current rows of that
 * connection's organizations (one `created` version per row, at its change time or now); a table
 * turned off keeps its history table and is marked so. One transaction, behind the migrations'
 * lock on Postgres, so that processes starting together make each table once.
 */

export const HISTORY_RECORD_TABLE = '_svcsync_history';

interface RecordRow {
  connection: string;
  table_name: string;
  stream: string;
  enabled_at: string;
  disabled_at: string | null;
}

/**
 * The history tables the warehouse holds (in the tables' schema), among those the catalog can
 * have: what the dictionary and the comments describe (src/loaders/derived/derived-objects.ts).
 */
export async function existingHistoryTables(db: AnyDb, dialect: Warehouse['dialect'], catalog: readonly StreamSpec[]): Promise<string[]> {
  // Every name ending in "history"; the exact names are those of the catalog's history tables.
  const r =
    dialect === 'postgres'
      ? await sql<{ name: string }>`SELECT relname AS name FROM pg_catalog.pg_class
          WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p') AND relname LIKE '%history'`.execute(db)
      : await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%history'`.execute(db);
  const have = new Set(r.rows.map((x) => x.name));
  return historyNames(catalog).filter((name) => have.has(name));
}

const names = new WeakMap<readonly StreamSpec[], string[]>();

/** The names of every history table the catalog can have, worked out once per catalog. */
function historyNames(catalog: readonly StreamSpec[]): string[] {
  let list = names.get(catalog);
  if (!list) names.set(catalog, (list = historyTableDefinitions(catalog).map((d) => d.name)));
  return list;
}

/** The columns of the named tables that exist, in the order the warehouse holds them. */
async function existingColumns(db: AnyDb, dialect: Warehouse['dialect'], tables: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (dialect === 'postgres') {
    const r = await sql<{ table_name: string; column_name: string }>`SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ANY(${[...tables]}::text[]) ORDER BY table_name, ordinal_position`.execute(db);
    for (const row of r.rows) {
      const list = out.get(row.table_name);
      if (list) list.push(row.column_name);
      else out.set(row.table_name, [row.column_name]);
    }
    return out;
  }
  for (const t of tables) {
    const r = await sql<{ name: string }>`SELECT name FROM pragma_table_info(${t})`.execute(db);
    if (r.rows.length > 0)
      out.set(
        t,
        r.rows.map((c) => c.name),
      );
  }
  return out;
}

/** The as-of functions of the tables' schema, each with its body (to tell one made otherwise: an older svcsync's, fewer columns). */
async function existingFunctions(db: AnyDb): Promise<Map<string, string>> {
  const r = await sql<{ name: string; body: string }>`SELECT proname AS name, prosrc AS body FROM pg_catalog.pg_proc
    WHERE pronamespace = current_schema()::regnamespace AND proname LIKE 'svcsync_as_of_%'`.execute(db);
  return new Map(r.rows.map((x) => [x.name, x.body]));
}

/** The tables' schema: svcsync's sessions work in it (their search_path). */
async function tablesSchema(db: AnyDb, warehouse: Pick<Warehouse, 'schemas'>): Promise<string> {
  if (warehouse.schemas) return warehouse.schemas.tables;
  const r = await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(db);
  return r.rows[0]!.schema;
}

/**
 * Creates the missing history tables and columns (and on Postgres the as-of functions, in
 * `schema`, with their comments). Returns how many history tables it created.
 */
async function ensureTables(db: AnyDb, dialect: Warehouse['dialect'], schema: string, tables: readonly HistoryTable[]): Promise<number> {
  const columns = await existingColumns(db, dialect, [...tables.map((t) => t.history), ...tables.map((t) => t.table)]);
  const functions = dialect === 'postgres' ? await existingFunctions(db) : new Map<string, string>();
  let created = 0;
  for (const t of tables) {
    const have = columns.get(t.history);
    if (!have) created++;
    const statements = have ? addedColumnStatements(t, dialect, new Set(have)) : createHistoryStatements(t, dialect);
    for (const s of statements) await sql.raw(s).execute(db);
    if (dialect !== 'postgres') continue;
    const tableColumns = columns.get(t.table) ?? t.columns;
    if (functions.get(asOfFunctionName(t.table)) === asOfFunctionBody(t, tableColumns, schema)) continue;
    await sql.raw(asOfFunctionStatement(t, tableColumns, schema)).execute(db);
    await sql.raw(asOfFunctionComment(t, schema)).execute(db);
  }
  return created;
}

/** Starts a stream's history from the current rows of the connection's organizations. */
async function seed(
  db: AnyDb,
  writer: HistoryWriter,
  connection: string,
  s: StreamHistory,
  now: string,
  runId: string | null,
): Promise<void> {
  const orgs = await sql<{ organization_id: string }>`SELECT organization_id FROM _svcsync_organizations
    WHERE connection = ${connection} AND family = ${s.stream.family}`.execute(db);
  for (const { organization_id: organizationId } of orgs.rows) {
    const scope = { kind: 'all', organizationId } as const;
    for (const q of [...writer.recordQueries(s, scope, now, runId), ...writer.deletionQueries(s, scope, runId)]) await db.executeQuery(q);
  }
}

/**
 * `plans`: each connection's history plan (`historyPlan`). Afterwards every table of every plan has
 * its history table, and the record says what is on. Returns whether it created a history table
 * (the data dictionary, which describes those the warehouse holds, is then out of date).
 */
export async function ensureHistory(
  warehouse: Warehouse,
  plans: ReadonlyMap<string, HistoryPlan>,
  now: string,
  runId: string | null,
): Promise<boolean> {
  const wanted = [...plans.values()].some((p) => p.size > 0);
  const enabled = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql.id(HISTORY_RECORD_TABLE)}
    WHERE disabled_at IS NULL`.execute(warehouse.db);
  if (!wanted && Number(enabled.rows[0]?.n ?? 0) === 0) return false;
  const writer = new HistoryWriter(warehouse.sql);
  return warehouse.transaction(async (trx) => {
    if (warehouse.dialect === 'postgres') await sql`SELECT pg_advisory_xact_lock(${sql.raw(MIGRATION_LOCK_KEY)})`.execute(trx);
    const byName = new Map<string, HistoryTable>();
    for (const plan of plans.values()) for (const t of historyTables(plan)) byName.set(t.table, t);
    const schema = warehouse.dialect === 'postgres' ? await tablesSchema(trx, warehouse) : '';
    const created = await ensureTables(trx, warehouse.dialect, schema, [...byName.values()]);
    const rows = (await sql<RecordRow>`SELECT * FROM ${sql.id(HISTORY_RECORD_TABLE)}`.execute(trx)).rows;
    const record = new Map(rows.map((r) => [`${r.connection}\u0000${r.table_name}`, r]));
    for (const [connection, plan] of plans) {
      for (const s of plan.values()) {
        const on = record.get(`${connection}\u0000${s.top.table}`);
        if (on && on.disabled_at === null) continue;
        await seed(trx, writer, connection, s, now, runId);
        for (const t of [s.top, ...s.children]) {
          await sql`DELETE FROM ${sql.id(HISTORY_RECORD_TABLE)} WHERE connection = ${connection} AND table_name = ${t.table}`.execute(trx);
          await sql`INSERT INTO ${sql.id(HISTORY_RECORD_TABLE)} (connection, table_name, stream, enabled_at, disabled_at)
            VALUES (${connection}, ${t.table}, ${`${s.stream.family}.${s.stream.name}`}, ${now}, NULL)`.execute(trx);
        }
      }
      const kept = new Set(historyTables(plan).map((t) => t.table));
      for (const r of rows) {
        if (r.connection === connection && r.disabled_at === null && !kept.has(r.table_name))
          await sql`UPDATE ${sql.id(HISTORY_RECORD_TABLE)} SET disabled_at = ${now}
            WHERE connection = ${connection} AND table_name = ${r.table_name}`.execute(trx);
      }
    }
    return created > 0;
  });
}

/** What `_svcsync_history` says is on, per connection and table (for status). */
export async function historyRecord(db: AnyDb): Promise<RecordRow[]> {
  return (await sql<RecordRow>`SELECT * FROM ${sql.id(HISTORY_RECORD_TABLE)}`.execute(db)).rows;
}

/** Versions per organization (`organization|table`) in the history tables of the tables named. */
export async function historyVersionCounts(
  warehouse: Warehouse,
  tables: ReadonlySet<string>,
  organizationId: string | undefined,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const where = organizationId === undefined ? '' : ` WHERE "organization_id" = ${warehouse.sql.param(1)}`;
  for (const table of tables) {
    const result = await warehouse.db.executeQuery<{ organization_id: string; n: number | string }>(
      CompiledQuery.raw(
        `SELECT "organization_id", COUNT(*) AS n FROM "${historyTableName(table)}"${where} GROUP BY "organization_id"`,
        organizationId === undefined ? [] : [organizationId],
      ),
    );
    for (const r of result.rows) out.set(`${r.organization_id}|${table}`, Number(r.n));
  }
  return out;
}
