import { CompiledQuery } from 'kysely';
import { changedRows } from './applied-units.js';
import type { ChildRows, NormalizedRecord, Row, SqlValue } from '../normalize/normalize.js';
import type { AnyDb } from './db.js';
import { addDeleted, type DeletedRows } from './deleted-rows.js';
import { ident, type SqlDialect } from './sql-dialect.js';

/**
 * A pass of a full read, as `_svcsync_listed` keys what it listed (src/state/listed-ids.ts):
 * `markVanished` spares the rows it names.
 */
export interface ListedPass {
  connection: string;
  organizationId: string;
  /** Qualified stream name, `family.name`. */
  stream: string;
  /** The pass's start: its rows, and no earlier pass's, say what it listed. */
  startedAt: string;
}

/**
 * Writes normalized rows, reads what the passes ask of them, and marks them deleted. Statement
 * text is built once per (table, columns, row count) and reused; every value is a bound parameter.
 * What differs between SQLite and Postgres (placeholders, booleans, upserts, parameter limits)
 * comes from the `SqlDialect` it is given (`warehouse.sql`); nothing here looks at the dialect's name.
 * The bookkeeping of passes and pages is src/state's (`listed-ids.ts`, `page-memo-store.ts`).
 */
export class TableWriter {
  private readonly sqlCache = new Map<string, string>();
  /** The statements that mark rows deleted, by the table they mark: their counts are rows deleted. */
  private readonly deletions = new WeakMap<CompiledQuery, string>();

  /** `sql` is the warehouse's dialect object (`warehouse.sql`), chosen once in openWarehouse. */
  constructor(readonly sql: SqlDialect) {}

  private upsertSql(table: string, columns: readonly string[], keyColumns: readonly string[], rowCount: number): string {
    const cacheKey = `${table}|${columns.join(',')}|${keyColumns.join(',')}|${rowCount}`;
    const cached = this.sqlCache.get(cacheKey);
    if (cached) return cached;
    const text = this.sql.upsert(table, columns, keyColumns, rowCount);
    this.sqlCache.set(cacheKey, text);
    return text;
  }

  /** Upserts of rows that all have the same columns, in as few statements as the limits allow. */
  private upsertQueries(
    out: CompiledQuery[],
    table: string,
    columns: readonly string[],
    keyColumns: readonly string[],
    rows: readonly Row[],
  ): void {
    if (rows.length === 0) return;
    // A page can repeat a record; where one upsert may not carry a key twice (Postgres), keep
    // the later copy. SQLite applies a multi-row upsert row by row, so the later copy wins there too.
    const unique = this.sql.upsertAcceptsRepeatedKeys ? rows : dedupeByKey(rows, keyColumns);
    const { bind } = this.sql;
    const perStatement = Math.max(1, Math.floor(this.sql.maxParams / columns.length));
    for (let i = 0; i < unique.length; i += perStatement) {
      const end = Math.min(unique.length, i + perStatement);
      const params = new Array<SqlValue>((end - i) * columns.length);
      let p = 0;
      // Indexed, not for...of: over the frozen column arrays the iterator allocated a result per
      // value (a seventh of a first sync's garbage).
      const width = columns.length;
      for (let r = i; r < end; r++) {
        const row = unique[r]!;
        for (let c = 0; c < width; c++) params[p++] = bind(row[columns[c]!] ?? null);
      }
      out.push(CompiledQuery.raw(this.upsertSql(table, columns, keyColumns, end - i), params));
    }
  }

  /**
   * Upserts top-level records (one source, so one column list) and replaces their children.
   * `isNew` tells which records had no row before this write (the caller looked them up):
   * a new record has no older children to mark, so the stale-children check skips it.
   * Returns the child rows marked deleted (children the records no longer carry), by table.
   */
  async writeRecords(
    db: AnyDb,
    records: readonly NormalizedRecord[],
    syncedAt: string,
    isNew?: (record: NormalizedRecord) => boolean,
  ): Promise<DeletedRows> {
    const deleted: DeletedRows = {};
    for (const q of this.recordQueries(records, syncedAt, isNew)) {
      const table = this.deletions.get(q);
      const n = changedRows(await db.executeQuery(q));
      if (table !== undefined) addDeleted(deleted, table, n);
    }
    return deleted;
  }

  /** The statements of `writeRecords`, to run in a batch of the caller's (Warehouse.batch). */
  recordQueries(records: readonly NormalizedRecord[], syncedAt: string, isNew?: (record: NormalizedRecord) => boolean): CompiledQuery[] {
    const out: CompiledQuery[] = [];
    if (records.length === 0) return out;
    const first = records[0]!;
    const keyColumns = Object.keys(first.key);
    this.upsertQueries(
      out,
      first.table,
      first.columns,
      keyColumns,
      records.map((r) => r.row),
    );
    const children: ChildRows[] = [];
    const known: ChildRows[] = [];
    for (const r of records) {
      const fresh = isNew ? isNew(r) : false;
      for (const c of r.children) {
        children.push(c);
        if (!fresh) known.push(c);
      }
    }
    this.childQueries(out, children, syncedAt, known);
    return out;
  }

  /**
   * Upserts child rows, then marks as deleted the children of the same parents that were not
   * written now. Every row written here carries `_synced_at = syncedAt`, which increases with
   * every page, so an older `_synced_at` under one of these parents means the element is gone.
   * Only the parents in `known` (default: all) are checked for such rows.
   */
  private childQueries(out: CompiledQuery[], children: readonly ChildRows[], syncedAt: string, known: readonly ChildRows[]): void {
    const rowsByTable = groupByTable(children);
    const knownByTable = known === children ? rowsByTable : groupByTable(known);
    for (const [table, groups] of rowsByTable) {
      const first = groups[0]!;
      this.upsertQueries(out, table, first.columns, first.keyColumns, groups.length === 1 ? first.rows : groups.flatMap((g) => g.rows));
      const check = knownByTable.get(table);
      if (check)
        this.staleQueries(
          out,
          table,
          check.map((g) => g.parentKey),
          syncedAt,
        );
    }
  }

  private staleQueries(out: CompiledQuery[], table: string, parentKeys: readonly Row[], syncedAt: string): void {
    if (parentKeys.length === 0) return;
    const keyColumns = Object.keys(parentKeys[0]!);
    const unique = dedupeByKey(parentKeys, keyColumns);
    // All parents in one call share the organization; the other key columns vary.
    const varying = keyColumns.filter((c) => c !== 'organization_id');
    const { sql } = this;
    const perStatement = Math.max(1, Math.floor((sql.maxParams - 3) / Math.max(1, varying.length)));
    for (let i = 0; i < unique.length; i += perStatement) {
      const chunk = unique.slice(i, i + perStatement);
      const params: SqlValue[] = [syncedAt, syncedAt, chunk[0]!['organization_id'] ?? null];
      const ph = (): string => sql.param(params.length);
      let where: string;
      if (varying.length === 1) {
        const col = varying[0]!;
        const list = chunk.map((k) => {
          params.push(sql.bind(k[col] ?? null));
          return ph();
        });
        where = `${ident(col)} IN (${list.join(', ')})`;
      } else {
        where = chunk
          .map(
            (k) =>
              `(${varying
                .map((c) => {
                  params.push(sql.bind(k[c] ?? null));
                  return `${ident(c)} = ${ph()}`;
                })
                .join(' AND ')})`,
          )
          .join(' OR ');
      }
      const text =
        `UPDATE ${ident(table)} SET "_deleted_at" = ${sql.param(1)} ` +
        `WHERE "_deleted_at" IS NULL AND "_synced_at" < ${sql.param(2)} AND "organization_id" = ${sql.param(3)} AND (${where})`;
      const query = CompiledQuery.raw(text, params);
      this.deletions.set(query, table);
      out.push(query);
    }
  }

  /** The table a statement of `recordQueries` marks rows deleted in (children no longer listed), or undefined. */
  deletesIn(query: CompiledQuery): string | undefined {
    return this.deletions.get(query);
  }

  /**
   * Whether every id still has a row, not marked deleted, not written since `syncedAt` and with
   * its `_hash` (a migration clears it to have a record read again): the rows are as the page
   * that listed them left them. (`_synced_at` compared as elsewhere here.)
   */
  async rowsUntouchedSince(
    db: AnyDb,
    table: string,
    idColumn: string,
    organizationId: string,
    ids: readonly string[],
    syncedAt: string,
  ): Promise<boolean> {
    const per = this.sql.maxParams - 2;
    for (let i = 0; i < ids.length; i += per) {
      const chunk = ids.slice(i, i + per);
      const list = this.sql.params(chunk.length, 3).join(', ');
      const text =
        `SELECT count(*) AS n FROM ${ident(table)} WHERE "organization_id" = ${this.sql.param(1)} ` +
        `AND "_deleted_at" IS NULL AND "_hash" IS NOT NULL AND "_synced_at" <= ${this.sql.param(2)} AND ${ident(idColumn)} IN (${list})`;
      const result = await db.executeQuery<{ n: number | string }>(CompiledQuery.raw(text, [organizationId, syncedAt, ...chunk]));
      if (Number(result.rows[0]?.n ?? 0) !== chunk.length) return false;
    }
    return true;
  }

  /** Whether the table holds any row of the organization. */
  async hasRows(db: AnyDb, table: string, organizationId: string): Promise<boolean> {
    const result = await db.executeQuery(
      CompiledQuery.raw(`SELECT 1 AS one FROM ${ident(table)} WHERE "organization_id" = ${this.sql.param(1)} LIMIT 1`, [organizationId]),
    );
    return result.rows.length > 0;
  }

  /** The stored `_hash` (and whether the row is marked deleted) of the given ids. */
  async storedHashes(
    db: AnyDb,
    table: string,
    idColumn: string,
    organizationId: string,
    ids: readonly string[],
  ): Promise<Map<string, { hash: string | null; deleted: boolean }>> {
    const out = new Map<string, { hash: string | null; deleted: boolean }>();
    const per = this.sql.maxParams - 1;
    for (let i = 0; i < ids.length; i += per) {
      const chunk = ids.slice(i, i + per);
      const params: SqlValue[] = [organizationId, ...chunk];
      const list = this.sql.params(chunk.length, 2).join(', ');
      const text =
        `SELECT ${ident(idColumn)} AS id, "_hash" AS hash, "_deleted_at" AS deleted_at FROM ${ident(table)} ` +
        `WHERE "organization_id" = ${this.sql.param(1)} AND ${ident(idColumn)} IN (${list})`;
      const result = await db.executeQuery<{ id: string; hash: string | null; deleted_at: unknown }>(CompiledQuery.raw(text, params));
      for (const r of result.rows) out.set(String(r.id), { hash: r.hash, deleted: r.deleted_at !== null && r.deleted_at !== undefined });
    }
    return out;
  }

  /**
   * `_synced_at` comparisons: Postgres compares timestamptz instants; in SQLite every
   * `_synced_at` is svcsync's own `toISOString()` output (fixed width, UTC, Z), so text order
   * is instant order. API timestamps are never compared this way.
   *
   * Marks rows not written since `before` as deleted: what a full read stopped returning.
   * `scope` narrows it to one parent's children (a child stream read for one parent);
   * `listed` spares the rows the pass listed unchanged (src/state/listed-ids.ts).
   * Returns how many rows it marked.
   */
  async markVanished(
    db: AnyDb,
    table: string,
    organizationId: string,
    before: string,
    now: string,
    scope?: { column: string; value: string },
    listed?: { pass: ListedPass; idColumn: string },
  ): Promise<number> {
    const ph = this.sql.param;
    if (scope && listed) throw new Error('markVanished: a scope and listed ids do not go together');
    const params: SqlValue[] = [now, organizationId, before];
    let text =
      `UPDATE ${ident(table)} SET "_deleted_at" = ${ph(1)} ` +
      `WHERE "organization_id" = ${ph(2)} AND "_deleted_at" IS NULL AND "_synced_at" < ${ph(3)}`;
    if (scope) {
      params.push(scope.value);
      text += ` AND ${ident(scope.column)} = ${ph(4)}`;
    }
    if (listed) {
      const { pass } = listed;
      const id = ident(listed.idColumn);
      // Only Postgres reads `candidates`, and its placeholders can repeat ($2, $3).
      const candidates =
        `SELECT s.${id} FROM ${ident(table)} AS s ` +
        `WHERE s."organization_id" = ${ph(2)} AND s."_deleted_at" IS NULL AND s."_synced_at" < ${ph(3)}`;
      params.push(pass.connection, pass.organizationId, pass.stream, pass.startedAt);
      const owner = `l."connection" = ${ph(4)} AND l."organization_id" = ${ph(5)}`;
      const filter = `${owner} AND l."stream" = ${ph(6)} AND l."pass_started_at" = ${ph(7)}`;
      text += ` AND ${this.sql.notListed(`${ident(table)}.${id}`, candidates, filter)}`;
    }
    const result = await db.executeQuery(CompiledQuery.raw(text, params));
    return changedRows(result);
  }

  /**
   * Marks the rows of `childTable` whose parent (`parentTable`, joined on `column`) was marked
   * deleted at `deletedAt`: a deleted sales order's line items, a deleted contact's persons.
   */
  async cascadeDeleted(
    db: AnyDb,
    childTable: string,
    parentTable: string,
    column: string,
    parentColumn: string,
    organizationId: string,
    deletedAt: string,
  ): Promise<number> {
    const ph = this.sql.param;
    const text =
      `UPDATE ${ident(childTable)} SET "_deleted_at" = ${ph(1)} ` +
      `WHERE "organization_id" = ${ph(2)} AND "_deleted_at" IS NULL AND ${ident(column)} IN ` +
      `(SELECT ${ident(parentColumn)} FROM ${ident(parentTable)} WHERE "organization_id" = ${ph(3)} AND "_deleted_at" = ${ph(4)})`;
    const result = await db.executeQuery(CompiledQuery.raw(text, [deletedAt, organizationId, organizationId, deletedAt]));
    return changedRows(result);
  }

  /** Marks one record deleted (its single-record read answered "does not exist"); returns the rows marked (0 or 1). */
  async markDeleted(db: AnyDb, table: string, idColumn: string, organizationId: string, id: string, now: string): Promise<number> {
    const ph = this.sql.param;
    const text =
      `UPDATE ${ident(table)} SET "_deleted_at" = ${ph(1)} ` +
      `WHERE "organization_id" = ${ph(2)} AND ${ident(idColumn)} = ${ph(3)} AND "_deleted_at" IS NULL`;
    return changedRows(await db.executeQuery(CompiledQuery.raw(text, [now, organizationId, id])));
  }
}

function groupByTable(children: readonly ChildRows[]): Map<string, ChildRows[]> {
  const byTable = new Map<string, ChildRows[]>();
  for (const c of children) {
    const list = byTable.get(c.table);
    if (list) list.push(c);
    else byTable.set(c.table, [c]);
  }
  return byTable;
}

/** Keeps the last row for each key (a later copy of a record supersedes an earlier one). */
function dedupeByKey<T extends Row>(rows: readonly T[], keyColumns: readonly string[]): readonly T[] {
  if (rows.length < 2) return rows;
  const byKey = new Map<string, T>();
  for (const row of rows) byKey.set(keyColumns.map((c) => String(row[c])).join('\u0000'), row);
  return byKey.size === rows.length ? rows : [...byKey.values()];
}
