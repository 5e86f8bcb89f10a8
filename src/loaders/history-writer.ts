import { CompiledQuery, createQueryId, PostgresQueryCompiler, sql, SqliteQueryCompiler, type QueryCompiler, type RawBuilder } from 'kysely';
import { FatalError } from '../core/errors.js';
import type { HistoryTable, StreamHistory } from './derived/history-tables.js';
import { ident, type SqlDialect } from './sql-dialect.js';

/**
 * Writes versions into the history tables (src/loaders/derived/history-tables.ts), set-based:
 * every statement compares the table's rows with the open versions in SQL, after the rows were
 * written and in the same transaction, so nothing is read into memory and a page that arrives
 * twice finds nothing to write. Timestamps are compared as instants: Postgres `timestamptz`, and
 * in SQLite svcsync's own ISO-8601 UTC text (fixed width, ending in Z), whose text order is the
 * instants' order; the one computed instant (a clamp of one millisecond) is written in that form.
 *
 * The statements are kysely `sql` templates: every value is a bound parameter, and every
 * table or column name comes from the catalog through `name` (checked, then quoted by kysely).
 */

/** Which records of one organization a set of statements covers. */
export type HistoryScope =
  | { kind: 'ids'; organizationId: string; ids: readonly string[] }
  /** Records marked deleted at this instant (`_deleted_at`). */
  | { kind: 'deletedAt'; organizationId: string; at: string }
  /** Every record of the organization (turning history on). */
  | { kind: 'all'; organizationId: string };

type Sql = RawBuilder<unknown>;

const IDS_PER_STATEMENT = 5_000;

/** What the history statements spell differently per warehouse. */
interface HistoryDialect {
  /** kysely's compiler of the dialect: one serves every writer, since a compilation runs start to end synchronously. */
  compiler: QueryCompiler;
  /** A bound instant, compared with the columns' instants. */
  instant(value: string): Sql;
  /** A bound text (a run id), typed where Postgres cannot infer it. */
  text(value: string | null): Sql;
  /** One millisecond after an instant, in the column's own form. */
  plusOne(expr: Sql): Sql;
  /** The null-safe comparisons: `a IS DISTINCT FROM b`, `a IS NOT DISTINCT FROM b`. */
  distinct: Sql;
  notDistinct: Sql;
}

const POSTGRES_HISTORY: HistoryDialect = {
  compiler: new PostgresQueryCompiler(),
  instant: (value) => sql`CAST(${value} AS timestamptz)`,
  text: (value) => sql`CAST(${value} AS text)`,
  plusOne: (expr) => sql`(${expr} + interval '1 millisecond')`,
  distinct: sql`IS DISTINCT FROM`,
  notDistinct: sql`IS NOT DISTINCT FROM`,
};

const SQLITE_HISTORY: HistoryDialect = {
  compiler: new SqliteQueryCompiler(),
  instant: (value) => sql`${value}`,
  text: (value) => sql`${value}`,
  plusOne: (expr) => sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${expr}, '+0.001 seconds')`,
  distinct: sql`IS NOT`,
  notDistinct: sql`IS`,
};

/** A table or column name of the catalog, quoted; `ident` refuses anything else. */
function name(catalogName: string): Sql {
  ident(catalogName);
  return sql.id(catalogName);
}

/** This file's own aliases: `t` a table's rows; `h`, `n`, `o`, `e` versions; `p` the record's version; `c` a child's. */
type Alias = 't' | 'h' | 'n' | 'o' | 'e' | 'p' | 'c';

/** A catalog column of an alias: `t."amount"`. */
function col(a: Alias, column: string): Sql {
  return sql`${sql.raw(a)}.${name(column)}`;
}

/** `a.k = b.k` for each key column, joined by AND. */
function keyJoin(a: Alias, b: Alias, key: readonly string[]): Sql {
  return sql.join(
    key.map((k) => sql`${col(a, k)} = ${col(b, k)}`),
    sql` AND `,
  );
}

/** Pieces of one statement, one after the other (a long statement is written in lines). */
function cat(...parts: Sql[]): Sql {
  return sql.join(parts, sql``);
}

/** The columns a history table adds, after its table's. */
const VERSION_COLUMNS = ['_valid_from', '_valid_to', '_change'];

export class HistoryWriter {
  private readonly d: HistoryDialect;
  constructor(readonly sql: SqlDialect) {
    this.d = sql.name === 'postgres' ? POSTGRES_HISTORY : SQLITE_HISTORY;
  }

  private compile(...parts: Sql[]): CompiledQuery {
    return this.d.compiler.compileQuery(cat(...parts).toOperationNode(), createQueryId());
  }

  private differs(a: Alias, b: Alias, columns: readonly string[]): Sql {
    const each = columns.map((c) => sql`${col(a, c)} ${this.d.distinct} ${col(b, c)}`);
    return sql`(${sql.join(each, sql` OR `)})`;
  }

  private same(a: Alias, b: Alias, columns: readonly string[]): Sql {
    return sql.join(
      columns.map((c) => sql`${col(a, c)} ${this.d.notDistinct} ${col(b, c)}`),
      sql` AND `,
    );
  }

  /** `a` belongs to the records in scope (an alias of any table holding the record's key). */
  private scoped(s: StreamHistory, a: Alias, scope: HistoryScope): Sql {
    const id = idColumn(s.top);
    const organization = sql`${sql.raw(a)}."organization_id" = ${scope.organizationId}`;
    if (scope.kind === 'ids') return sql`${organization} AND ${col(a, id)} IN (${sql.join(scope.ids)})`;
    if (scope.kind === 'all') return organization;
    return cat(
      sql`${organization} AND ${col(a, id)} IN (SELECT ${name(id)} FROM ${name(s.top.table)} `,
      sql`WHERE "organization_id" = ${scope.organizationId} AND "_deleted_at" = ${this.d.instant(scope.at)})`,
    );
  }

  /** A table's columns as its history takes them: the run writing now, else the row's own. */
  private select(t: HistoryTable, runId: string | null): Sql {
    return sql.join(t.columns.map((c) => (c === '_run_id' ? sql`COALESCE(${this.d.text(runId)}, t."_run_id")` : col('t', c))));
  }

  private insertInto(t: HistoryTable): Sql {
    return sql`INSERT INTO ${name(t.history)} (${sql.join([...t.columns, ...VERSION_COLUMNS].map(name))}) `;
  }

  /** Closes each open version that a later open version of the same key follows. */
  private closeSuperseded(s: StreamHistory, scope: HistoryScope): CompiledQuery {
    const h = name(s.top.history);
    const later = sql`FROM ${h} AS n WHERE ${keyJoin('n', 'h', s.top.key)} AND n."_valid_to" IS NULL AND n."_valid_from" > h."_valid_from"`;
    return this.compile(
      sql`UPDATE ${h} AS h SET "_valid_to" = (SELECT MIN(n."_valid_from") ${later}) `,
      sql`WHERE h."_valid_to" IS NULL AND ${this.scoped(s, 'h', scope)} AND EXISTS (SELECT 1 ${later})`,
    );
  }

  /**
   * Child tables follow their record's open version: versions older than it close where it
   * begins; versions that began with it and no longer match a row are taken back (the record was
   * completed in the same run, by its single-record read); current rows open where it begins.
   */
  private childQueries(s: StreamHistory, scope: HistoryScope, runId: string | null): CompiledQuery[] {
    return s.children.flatMap((c) => [this.closeChild(s, c, scope), this.takeBackChild(s, c, scope), this.openChild(s, c, scope, runId)]);
  }

  /** `p`, the record's version, is the record of `a`'s row. */
  private parentJoin(s: StreamHistory, a: Alias): Sql {
    return sql`p."organization_id" = ${sql.raw(a)}."organization_id" AND ${col('p', idColumn(s.top))} = ${col(a, idColumn(s.top))}`;
  }

  /** Child versions older than the record's open version close where it begins. */
  private closeChild(s: StreamHistory, c: HistoryTable, scope: HistoryScope): CompiledQuery {
    return this.compile(
      sql`UPDATE ${name(c.history)} AS c SET "_valid_to" = p."_valid_from" FROM ${name(s.top.history)} AS p `,
      sql`WHERE ${this.scoped(s, 'p', scope)} AND p."_valid_to" IS NULL AND ${this.parentJoin(s, 'c')} `,
      sql`AND c."_valid_to" IS NULL AND c."_valid_from" < p."_valid_from"`,
    );
  }

  /** Child versions that began with the record's open version and match no current row are taken back. */
  private takeBackChild(s: StreamHistory, c: HistoryTable, scope: HistoryScope): CompiledQuery {
    return this.compile(
      sql`DELETE FROM ${name(c.history)} AS c WHERE c."_valid_to" IS NULL AND ${this.scoped(s, 'c', scope)} `,
      sql`AND EXISTS (SELECT 1 FROM ${name(s.top.history)} AS p WHERE ${this.parentJoin(s, 'c')} `,
      sql`AND p."_valid_to" IS NULL AND p."_valid_from" = c."_valid_from") `,
      sql`AND NOT EXISTS (SELECT 1 FROM ${name(c.table)} AS t WHERE ${keyJoin('t', 'c', c.key)} `,
      sql`AND t."_deleted_at" IS NULL AND ${this.same('t', 'c', c.compared)})`,
    );
  }

  /** Current child rows without a version beginning with the record's open one get one. */
  private openChild(s: StreamHistory, c: HistoryTable, scope: HistoryScope, runId: string | null): CompiledQuery {
    const top = name(s.top.history);
    const history = name(c.history);
    return this.compile(
      this.insertInto(c),
      sql`SELECT ${this.select(c, runId)}, p."_valid_from", NULL, `,
      sql`CASE WHEN EXISTS (SELECT 1 FROM ${history} AS e WHERE ${keyJoin('e', 't', c.key)}) THEN 'updated' ELSE 'created' END `,
      sql`FROM ${name(c.table)} AS t JOIN ${top} AS p ON ${this.parentJoin(s, 't')} `,
      sql`AND p."_valid_to" IS NULL AND p."_change" <> 'deleted' `,
      sql`WHERE ${this.scoped(s, 't', scope)} AND t."_deleted_at" IS NULL `,
      sql`AND NOT EXISTS (SELECT 1 FROM ${history} AS c WHERE ${keyJoin('c', 't', c.key)} `,
      sql`AND c."_valid_to" IS NULL AND c."_valid_from" = p."_valid_from")`,
    );
  }

  /**
   * After records were upserted: a version for each record in scope whose row differs from its
   * open version (or that has none, or whose open version is its deletion), beginning at its change
   * time when the stream has one, else at `now`, and always after the version it closes. A version
   * this run wrote, or one with the record's change time, is completed in place instead (a record
   * read in two requests, its list entry and its single-record read, is one version, even when a
   * run ended between the two).
   */
  recordQueries(s: StreamHistory, scope: HistoryScope, now: string, runId: string | null): CompiledQuery[] {
    if (scope.kind !== 'ids') return this.recordChunk(s, scope, now, runId);
    const out: CompiledQuery[] = [];
    for (let i = 0; i < scope.ids.length; i += IDS_PER_STATEMENT)
      out.push(...this.recordChunk(s, { ...scope, ids: scope.ids.slice(i, i + IDS_PER_STATEMENT) }, now, runId));
    return out;
  }

  private recordChunk(s: StreamHistory, scope: HistoryScope, now: string, runId: string | null): CompiledQuery[] {
    if (scope.kind === 'ids' && scope.ids.length === 0) return [];
    const t = s.top;
    const complete = runId !== null || t.changeColumn !== null ? [this.completeVersion(s, scope, runId)] : [];
    return [...complete, this.newVersion(s, scope, now, runId), this.closeSuperseded(s, scope), ...this.childQueries(s, scope, runId)];
  }

  /**
   * The open version is the same version, completed in place: written by this run, or (a run that
   * ended before the record's single-record read) carrying the same change time.
   */
  private completeVersion(s: StreamHistory, scope: HistoryScope, runId: string | null): CompiledQuery {
    const t = s.top;
    const set = t.columns.filter((c) => !t.key.includes(c)).map((c) => sql`${name(c)} = ${col('t', c)}`);
    const sameVersion = [
      ...(runId !== null ? [sql`h."_run_id" = ${this.d.text(runId)}`] : []),
      ...(t.changeColumn !== null ? [sql`${col('t', t.changeColumn)} = h."_valid_from"`] : []),
    ];
    return this.compile(
      sql`UPDATE ${name(t.history)} AS h SET ${sql.join(set)} FROM ${name(t.table)} AS t `,
      sql`WHERE ${keyJoin('h', 't', t.key)} AND h."_valid_to" IS NULL AND h."_change" <> 'deleted' `,
      sql`AND (${sql.join(sameVersion, sql` OR `)}) `,
      sql`AND ${this.scoped(s, 't', scope)} AND t."_deleted_at" IS NULL AND ${this.differs('h', 't', t.compared)}`,
    );
  }

  /** A new version of each record whose row differs from its open version, or that has none. */
  private newVersion(s: StreamHistory, scope: HistoryScope, now: string, runId: string | null): CompiledQuery {
    const t = s.top;
    const base = (): Sql => (t.changeColumn ? sql`COALESCE(${col('t', t.changeColumn)}, ${this.d.instant(now)})` : this.d.instant(now));
    const lastKey = col('o', idColumn(t));
    const after = this.d.plusOne(sql`o."_valid_from"`);
    const from = sql`CASE WHEN ${lastKey} IS NULL OR ${base()} > o."_valid_from" THEN ${base()} ELSE ${after} END`;
    const change = sql`CASE WHEN ${lastKey} IS NULL THEN 'created' WHEN o."_change" = 'deleted' THEN 'restored' ELSE 'updated' END`;
    return this.compile(
      this.insertInto(t),
      sql`SELECT ${this.select(t, runId)}, ${from}, NULL, ${change} `,
      sql`FROM ${name(t.table)} AS t LEFT JOIN ${name(t.history)} AS o ON ${keyJoin('o', 't', t.key)} AND o."_valid_to" IS NULL `,
      sql`WHERE ${this.scoped(s, 't', scope)} AND t."_deleted_at" IS NULL `,
      sql`AND (${lastKey} IS NULL OR o."_change" = 'deleted' OR ${this.differs('o', 't', t.compared)})`,
    );
  }

  /**
   * After records were marked deleted (`deletedAt` scope, or `all` for every deleted row): a
   * `deleted` version for each whose open version is not one, beginning at `_deleted_at`; the
   * version before it and its child rows' versions close there.
   */
  deletionQueries(s: StreamHistory, scope: Exclude<HistoryScope, { kind: 'ids' }>, runId: string | null): CompiledQuery[] {
    const t = s.top;
    const after = this.d.plusOne(sql`o."_valid_from"`);
    const deletion = this.compile(
      this.insertInto(t),
      sql`SELECT ${this.select(t, runId)}, `,
      sql`CASE WHEN t."_deleted_at" > o."_valid_from" THEN t."_deleted_at" ELSE ${after} END, NULL, 'deleted' `,
      sql`FROM ${name(t.table)} AS t JOIN ${name(t.history)} AS o `,
      sql`ON ${keyJoin('o', 't', t.key)} AND o."_valid_to" IS NULL AND o."_change" <> 'deleted' `,
      sql`WHERE ${this.scoped(s, 't', scope)} AND t."_deleted_at" IS NOT NULL`,
    );
    return [deletion, this.closeSuperseded(s, scope), ...this.childQueries(s, scope, runId)];
  }
}

/** The record's own key column (the table's key is organization_id and it). */
function idColumn(t: HistoryTable): string {
  const id = t.key[1];
  if (t.key.length !== 2 || t.key[0] !== 'organization_id' || id === undefined)
    throw new FatalError(`${t.table}: history needs a key of organization_id and one id column, not (${t.key.join(', ')})`);
  return id;
}
