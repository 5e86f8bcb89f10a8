import { childStreamsOf, qualifiedName, sqlType, tableDefinitions, type StreamSpec, type TableDef } from '../../catalog/index.js';
import { asOfFunctionName, changeField, historyTableName, pgName } from '../../catalog/history.js';
import type { HistorySetting } from '../../config/schema.js';
import { ident } from '../sql-dialect.js';
import { literal } from './derived-objects.js';
import type { Dialect } from '../sql-dialect.js';

/**
 * History tables (`{table}_history`): every version svcsync has seen of each row of a table whose
 * stream keeps history. Derived from the catalog's table definitions like the views, but they
 * hold data, so they are never dropped: created when missing, and given the columns their table
 * gained (src/loaders/derived/ensure-history.ts). Pure: statements and plans only.
 */

export { asOfFunctionName, historyTableName, pgName } from '../../catalog/history.js';

/** Columns a history table adds to its table's. */
export const HISTORY_COLUMNS = ['_valid_from', '_valid_to', '_change'] as const;

/** Columns that change on every write without the record changing: never a reason for a version. */
const BOOKKEEPING = new Set(['_synced_at', '_run_id', '_deleted_at']);

/** One table that keeps history, as the writer needs it. */
export interface HistoryTable {
  table: string;
  history: string;
  /** The table's primary key (the history's is this plus `_valid_from`). */
  key: string[];
  /** Every column of the table, in table order. */
  columns: string[];
  /** The columns compared to tell a new version: all but `_synced_at`, `_run_id`, `_deleted_at`. */
  compared: string[];
  /** The column holding the record's change time (`last_modified_time`, `updated_time`), or null. */
  changeColumn: string | null;
  def: TableDef;
}

/** A stream that keeps history: its table and its child tables (versions follow the record's). */
export interface StreamHistory {
  stream: StreamSpec;
  top: HistoryTable;
  /** Child tables at every depth; each holds the top table's key columns. */
  children: HistoryTable[];
}

/** The streams of one connection that keep history, by `family.stream`. */
export type HistoryPlan = ReadonlyMap<string, StreamHistory>;

function historyTable(def: TableDef, changeColumn: string | null): HistoryTable {
  const columns = def.columns.map((c) => c.name);
  return {
    table: def.name,
    history: historyTableName(def.name),
    key: [...def.primaryKey],
    columns,
    compared: columns.filter((c) => !BOOKKEEPING.has(c)),
    changeColumn,
    def,
  };
}

/** The setting that applies to a connection: its own, else the top-level one. */
export function historySettingOf(top: HistorySetting, own: HistorySetting | undefined): HistorySetting {
  return own ?? top;
}

/**
 * The streams a setting names, with their child streams (a stream's lines and the records read
 * per record follow it). Organization lists keep no history: they are read at discovery, outside
 * any organization's pass.
 */
export function historyPlan(catalog: readonly StreamSpec[], setting: HistorySetting): HistoryPlan {
  const plan = new Map<string, StreamHistory>();
  if (setting === 'off') return plan;
  const named = (s: StreamSpec): boolean => setting === 'all' || setting.includes(qualifiedName(s)) || setting.includes(s.name);
  const chosen = new Set<StreamSpec>();
  const add = (s: StreamSpec): void => {
    if (chosen.has(s) || s.organizationList) return;
    chosen.add(s);
    for (const c of childStreamsOf(s, catalog)) add(c);
  };
  for (const s of catalog) if (named(s)) add(s);
  const defs = tableDefinitions(catalog);
  for (const stream of catalog) {
    if (!chosen.has(stream)) continue;
    const name = qualifiedName(stream);
    const mine = defs.filter((d) => d.stream === name);
    const topDef = mine.find((d) => d.parentTable === undefined)!;
    const change = changeField(stream, topDef);
    plan.set(name, {
      stream,
      top: historyTable(topDef, change),
      children: mine.filter((d) => d.parentTable !== undefined).map((d) => historyTable(d, null)),
    });
  }
  return plan;
}

/** Every history table of a plan. */
export function historyTables(plan: HistoryPlan): HistoryTable[] {
  return [...plan.values()].flatMap((s) => [s.top, ...s.children]);
}

/**
 * The statements that make a history table and its index when missing. Every column but the key
 * may be null: a version keeps what the row held, whatever the table's constraints become.
 */
export function createHistoryStatements(t: HistoryTable, dialect: Dialect): string[] {
  const key = new Set(t.key);
  const cols = t.def.columns.map((c) => `${ident(c.name)} ${sqlType(c.type, dialect)}${key.has(c.name) ? ' NOT NULL' : ''}`);
  const stamp = sqlType('timestamp', dialect);
  cols.push(`"_valid_from" ${stamp} NOT NULL`, `"_valid_to" ${stamp}`, `"_change" text NOT NULL`);
  const pk = [...t.key, '_valid_from'].map(ident).join(', ');
  const open = [...t.key, '_valid_to'].map(ident);
  return [
    `CREATE TABLE IF NOT EXISTS ${ident(t.history)} (${cols.join(', ')}, PRIMARY KEY (${pk}))`,
    `CREATE INDEX IF NOT EXISTS ${ident(pgName(`${t.history}_open`))} ON ${ident(t.history)} (${open.join(', ')})`,
  ];
}

/** `ALTER TABLE ... ADD COLUMN` for the columns the table gained since its history table was made. */
export function addedColumnStatements(t: HistoryTable, dialect: Dialect, existing: ReadonlySet<string>): string[] {
  return t.def.columns
    .filter((c) => !existing.has(c.name))
    .map((c) => `ALTER TABLE ${ident(t.history)} ADD COLUMN ${ident(c.name)} ${sqlType(c.type, dialect)}`);
}

/**
 * The body of `svcsync_as_of_<table>(at)`: the versions current at `at`, deletions left out, in the
 * table's column order. Every relation is named with its schema: Postgres resolves a SQL
 * function's body in the caller's session (when it inlines it, too), whose search_path need hold
 * neither svcsync's schema nor the views' (a BI login, the read-only role).
 */
export function asOfFunctionBody(t: HistoryTable, tableColumns: readonly string[], schema: string): string {
  const cols = tableColumns.map((c) => `h.${ident(c)}`).join(', ');
  return (
    ` SELECT ${cols} FROM ${ident(schema)}.${ident(t.history)} AS h ` +
    `WHERE h."_valid_from" <= at AND (h."_valid_to" IS NULL OR h."_valid_to" > at) AND h."_change" <> 'deleted' `
  );
}

/**
 * Postgres: `svcsync_as_of_<table>(t)` in the tables' schema, the table's rows as they stood at
 * instant t (versions current then, deletions left out), typed as the table's rows. Replaced at a
 * run start when its body differs from this one (a column added, an older svcsync's), so it
 * follows the columns; `tableColumns` are the table's in the order Postgres holds them.
 */
export function asOfFunctionStatement(t: HistoryTable, tableColumns: readonly string[], schema: string): string {
  const name = `${ident(schema)}.${ident(asOfFunctionName(t.table))}`;
  return (
    `CREATE OR REPLACE FUNCTION ${name}(at timestamptz) RETURNS SETOF ${ident(schema)}.${ident(t.table)} ` +
    `LANGUAGE sql STABLE AS $svcsync$${asOfFunctionBody(t, tableColumns, schema)}$svcsync$`
  );
}

/** What the as-of function is, as a BI tool shows it (`\df+`, a function's description). */
export function asOfFunctionComment(t: HistoryTable, schema: string): string {
  const text =
    `The rows of ${t.table} as they stood at the instant given: the versions of ${t.history} current then ` +
    `(_valid_from <= at AND (_valid_to IS NULL OR _valid_to > at)), deletions left out, typed as ${t.table}'s rows.`;
  return `COMMENT ON FUNCTION ${ident(schema)}.${ident(asOfFunctionName(t.table))}(timestamptz) IS ${literal(text)}`;
}
