import { CompiledQuery } from 'kysely';
import { FatalError } from '../core/errors.js';
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
};

/** The dialect object of each name (`openWarehouse` picks one of these). */
export const SQL_DIALECTS: Readonly<Record<Dialect, SqlDialect>> = { sqlite: SQLITE, postgres: POSTGRES };
