import { CompiledQuery } from 'kysely';
import { FatalError } from '../core/errors.js';
import type { KeyedTable } from '../catalog/tables.js';
import type { SqlValue } from '../normalize/normalize.js';
import type { AnyKysely } from './db.js';

/** The warehouse kinds svcsync writes to. */
export type Dialect = 'sqlite' | 'postgres';

/**
 * Everything svcsync's hand-written SQL does differently per warehouse, in one object per
 * dialect (as kysely's `DialectAdapter`s do for kysely). `openWarehouse` picks the object once
 * (`warehouse.sql`); the writers call it and never branch on the dialect's name.
 *
 * Identifier quoting is the same in both (`"name"`, see `ident`), and so is the count of
 * changed rows (`numAffectedRows` from both drivers), so neither is here.
 */
export interface SqlDialect {
  readonly name: Dialect;
  /** Most bound parameters in one statement (kept under the server's limit). */
  readonly maxParams: number;
  /**
   * Whether one multi-row upsert may carry two rows with the same key. Postgres refuses
   * ("ON CONFLICT DO UPDATE command cannot affect row a second time"), so the caller keeps the
   * last copy; SQLite applies the rows in order, so the later copy wins by itself.
   */
  readonly upsertAcceptsRepeatedKeys: boolean;
  /** The placeholder of bound parameter number `n` (1-based): `$n` or `?`. */
  readonly param: (n: number) => string;
  /** The placeholders of `count` parameters numbered from `start`. */
  readonly params: (count: number, start: number) => string[];
  /** A value as the driver binds it: SQLite has no boolean type (1 / 0); Postgres takes booleans. */
  readonly bind: (value: SqlValue) => SqlValue;
  /**
   * The text of a multi-row upsert: `rowCount` tuples of `columns`, and on a conflict on
   * `keyColumns` every other column takes the new value (`DO NOTHING` when all are keys).
   * The caller caches it: it depends only on its arguments.
   */
  readonly upsert: (table: string, columns: readonly string[], keyColumns: readonly string[], rowCount: number) => string;
  /**
   * The schema kysely's migrator keeps its bookkeeping tables in. Postgres: the current one
   * (kysely looks in every schema, so two warehouses in one database, told apart by
   * search_path, would see each other's). SQLite has no schemas: undefined.
   */
  readonly migrationSchema: (db: AnyKysely) => Promise<string | undefined>;
  /**
   * A condition that `idRef` (a column of the statement's table) is not among the ids kept in
   * `_svcsync_listed` (alias `l`, JSON arrays of ids) on the rows `filter` selects. SQLite
   * expands them with `json_each` once for the statement. Postgres takes `candidates` (a SELECT
   * of the ids the statement could touch) EXCEPT them: a set operation, linear whatever the
   * planner guesses of a table it has not analyzed (a correlated anti-join over the expanded
   * arrays was planned as a nested loop and took minutes on 40,000 rows).
   */
  readonly notListed: (idRef: string, candidates: string, filter: string) => string;
  /**
   * Brings the planner's statistics of `tables`' keys up to date after a pass wrote `written`
   * rows to the first of them (the others are its child tables, written with it), when
   * `statisticsStale` says they lag; whether it did. Postgres plans a lookup of a page's ids on
   * a table it has not analyzed as a scan of the organization's every row (22 ms a page at
   * 20,000 rows, against 0.8 ms by the key once analyzed), and autovacuum analyzes only on its
   * next round, a minute or more later. Only the key columns: svcsync looks rows up by them,
   * and the wide columns cost most of an ANALYZE (autovacuum still analyzes every column).
   * SQLite looks keys up by the index without statistics: nothing to do.
   */
  readonly refreshStatistics: (db: AnyKysely, tables: readonly KeyedTable[], written: number) => Promise<boolean>;
}

/** Fewer rows than this make no plan worth a statistics run: a scan of them costs under a millisecond. */
export const STATISTICS_MIN_ROWS = 1000;
/** As autovacuum's default `autovacuum_analyze_scale_factor`: statistics lag once a tenth of the rows changed. */
export const STATISTICS_STALE_FRACTION = 0.1;

/**
 * Whether a table's statistics lag after a pass wrote `written` rows to it: enough rows to
 * matter, and never analyzed (`estimatedRows` below 0 from Postgres 14 on, 0 before it) or
 * grown by more than the stale fraction since it was.
 */
export function statisticsStale(written: number, estimatedRows: number): boolean {
  if (written < STATISTICS_MIN_ROWS) return false;
  return estimatedRows <= 0 || written > STATISTICS_STALE_FRACTION * estimatedRows;
}

/** Bound parameters per statement: under SQLite's 32,766 and Postgres's 65,535. */
const MAX_PARAMS = 30_000;

/**
 * Identifiers come only from the catalog; this check makes sure nothing else can slip into
 * SQL text, since values are always bound parameters and names cannot be.
 */
export function ident(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new FatalError(`Refusing an SQL identifier that is not a catalog name: ${JSON.stringify(name)}`);
  return `"${name}"`;
}

function placeholderList(count: number, start: number, param: (n: number) => string): string[] {
  const out = new Array<string>(count);
  for (let i = 0; i < count; i++) out[i] = param(start + i);
  return out;
}

/** `INSERT ... ON CONFLICT` is spelled the same in both; only the placeholders differ. */
function upsertText(sql: SqlDialect, table: string, columns: readonly string[], keyColumns: readonly string[], rowCount: number): string {
  const cols = columns.map(ident).join(', ');
  const tuples = new Array<string>(rowCount);
  for (let r = 0; r < rowCount; r++) tuples[r] = `(${sql.params(columns.length, r * columns.length + 1).join(', ')})`;
  const keySet = new Set(keyColumns);
  const updates = columns.filter((c) => !keySet.has(c)).map((c) => `${ident(c)} = excluded.${ident(c)}`);
  const conflict = updates.length ? `DO UPDATE SET ${updates.join(', ')}` : 'DO NOTHING';
  return `INSERT INTO ${ident(table)} (${cols}) VALUES ${tuples.join(', ')} ON CONFLICT (${keyColumns.map(ident).join(', ')}) ${conflict}`;
}

const dollar = (n: number): string => `$${n}`;
const question = (): string => '?';

export const POSTGRES: SqlDialect = {
  name: 'postgres',
  maxParams: MAX_PARAMS,
  upsertAcceptsRepeatedKeys: false,
  param: dollar,
  params: (count, start) => placeholderList(count, start, dollar),
  bind: (value) => value,
  upsert: (table, columns, keyColumns, rowCount) => upsertText(POSTGRES, table, columns, keyColumns, rowCount),
  notListed: (idRef, candidates, filter) =>
    `${idRef} IN (${candidates} EXCEPT SELECT jsonb_array_elements_text(l."ids"::jsonb) FROM "_svcsync_listed" AS l WHERE ${filter})`,
  migrationSchema: async (db) => {
    const r = await db.executeQuery<{ s: string }>(CompiledQuery.raw('SELECT current_schema() AS s'));
    return r.rows[0]?.s;
  },
  refreshStatistics: async (db, tables, written) => {
    const [table, ...children] = tables;
    if (table === undefined || written < STATISTICS_MIN_ROWS) return false;
    const r = await db.executeQuery<{ n: number | string | null }>(
      CompiledQuery.raw('SELECT reltuples AS n FROM pg_class WHERE oid = to_regclass($1)', [ident(table.name)]),
    );
    if (!statisticsStale(written, Number(r.rows[0]?.n ?? -1))) return false;
    // SKIP_LOCKED: a table another process is analyzing (autovacuum, another organization's pass) gets its statistics from it.
    const targets = [table, ...children].map((t) => `${ident(t.name)} (${t.primaryKey.map(ident).join(', ')})`).join(', ');
    await db.executeQuery(CompiledQuery.raw(`ANALYZE (SKIP_LOCKED) ${targets}`));
    return true;
  },
};

export const SQLITE: SqlDialect = {
  name: 'sqlite',
  maxParams: MAX_PARAMS,
  upsertAcceptsRepeatedKeys: true,
  param: question,
  params: (count, start) => placeholderList(count, start, question),
  bind: (value) => (typeof value === 'boolean' ? Number(value) : value),
  upsert: (table, columns, keyColumns, rowCount) => upsertText(SQLITE, table, columns, keyColumns, rowCount),
  notListed: (idRef, _candidates, filter) =>
    `${idRef} NOT IN (SELECT j.value FROM "_svcsync_listed" AS l, json_each(l."ids") AS j WHERE ${filter})`,
  migrationSchema: () => Promise.resolve(undefined),
  refreshStatistics: () => Promise.resolve(false),
};

/** The dialect object of each name (`openWarehouse` picks one of these). */
export const SQL_DIALECTS: Readonly<Record<Dialect, SqlDialect>> = { sqlite: SQLITE, postgres: POSTGRES };
