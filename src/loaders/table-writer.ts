import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import { FatalError } from '../core/errors.js';
import type { ChildRows, NormalizedRecord, Row, SqlValue } from '../normalize/normalize.js';
import type { Dialect } from './warehouse.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any> | Transaction<any>;

/** Bound parameters per statement: under SQLite's 32,766 and Postgres's 65,535. */
const MAX_PARAMS = 30_000;
/**
 * Identifiers come only from the catalog; this check makes sure nothing else can slip into
 * SQL text, since values are always bound parameters and names cannot be.
 */
function ident(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new FatalError(`Refusing an SQL identifier that is not a catalog name: ${JSON.stringify(name)}`);
  return `"${name}"`;
}

/**
 * Writes normalized rows. Statement text is built once per (table, columns, row count) and
 * reused; every value is a bound parameter.
 */
export class TableWriter {
  private readonly sqlCache = new Map<string, string>();

  constructor(readonly dialect: Dialect) {}

  private placeholders(count: number, start: number): string[] {
    const out: string[] = new Array(count);
    for (let i = 0; i < count; i++) out[i] = this.dialect === 'postgres' ? `$${start + i}` : '?';
    return out;
  }

  /** SQLite has no boolean type; Postgres takes them as they are. */
  private value(v: SqlValue): SqlValue {
    if (typeof v === 'boolean' && this.dialect === 'sqlite') return v ? 1 : 0;
    return v;
  }

  private upsertSql(table: string, columns: readonly string[], keyColumns: readonly string[], rowCount: number): string {
    const cacheKey = `${table}|${columns.join(',')}|${keyColumns.join(',')}|${rowCount}`;
    const cached = this.sqlCache.get(cacheKey);
    if (cached) return cached;
    const cols = columns.map(ident).join(', ');
    const tuples: string[] = [];
    for (let r = 0; r < rowCount; r++) tuples.push(`(${this.placeholders(columns.length, r * columns.length + 1).join(', ')})`);
    const keySet = new Set(keyColumns);
    const updates = columns.filter((c) => !keySet.has(c)).map((c) => `${ident(c)} = excluded.${ident(c)}`);
    const conflict = updates.length ? `DO UPDATE SET ${updates.join(', ')}` : 'DO NOTHING';
    const text = `INSERT INTO ${ident(table)} (${cols}) VALUES ${tuples.join(', ')} ON CONFLICT (${keyColumns.map(ident).join(', ')}) ${conflict}`;
    this.sqlCache.set(cacheKey, text);
    return text;
  }

  /** Upserts of rows that all have the same columns, in as few statements as the limits allow. */
  private upsertQueries(out: CompiledQuery[], table: string, columns: readonly string[], keyColumns: readonly string[], rows: readonly Row[]): void {
    if (rows.length === 0) return;
    // Postgres refuses to update one row twice in a statement, and a page can repeat a
    // record. SQLite applies a multi-row upsert row by row, so the later copy wins there too.
    const unique = this.dialect === 'postgres' ? dedupeByKey(rows, keyColumns) : rows;
    const perStatement = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
    for (let i = 0; i < unique.length; i += perStatement) {
      const end = Math.min(unique.length, i + perStatement);
      const params: SqlValue[] = new Array((end - i) * columns.length);
      let p = 0;
      for (let r = i; r < end; r++) {
        const row = unique[r]!;
        for (const c of columns) params[p++] = this.value(row[c] ?? null);
      }
      out.push(CompiledQuery.raw(this.upsertSql(table, columns, keyColumns, end - i), params));
    }
  }

  /**
   * Upserts top-level records (one source, so one column list) and replaces their children.
   * `isNew` tells which records had no row before this write (the caller looked them up):
   * a new record has no older children to mark, so the stale-children check skips it.
   */
  async writeRecords(db: Db, records: readonly NormalizedRecord[], syncedAt: string, isNew?: (record: NormalizedRecord) => boolean): Promise<void> {
    for (const q of this.recordQueries(records, syncedAt, isNew)) await db.executeQuery(q);
  }

  /** The statements of `writeRecords`, to run in a batch of the caller's (Warehouse.batch). */
  recordQueries(records: readonly NormalizedRecord[], syncedAt: string, isNew?: (record: NormalizedRecord) => boolean): CompiledQuery[] {
    const out: CompiledQuery[] = [];
    if (records.length === 0) return out;
    const first = records[0]!;
    const keyColumns = Object.keys(first.key);
    this.upsertQueries(out, first.table, first.columns, keyColumns, records.map((r) => r.row));
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
      if (check) this.staleQueries(out, table, check.map((g) => g.parentKey), syncedAt);
    }
  }

  private staleQueries(out: CompiledQuery[], table: string, parentKeys: readonly Row[], syncedAt: string): void {
    if (parentKeys.length === 0) return;
    const keyColumns = Object.keys(parentKeys[0]!);
    const unique = dedupeByKey(parentKeys, keyColumns);
    // All parents in one call share the organization; the other key columns vary.
    const varying = keyColumns.filter((c) => c !== 'organization_id');
    const perStatement = Math.max(1, Math.floor((MAX_PARAMS - 3) / Math.max(1, varying.length)));
    for (let i = 0; i < unique.length; i += perStatement) {
      const chunk = unique.slice(i, i + perStatement);
      const params: SqlValue[] = [syncedAt, syncedAt, chunk[0]!['organization_id'] ?? null];
      const ph = (): string => (this.dialect === 'postgres' ? `$${params.length}` : '?');
      let where: string;
      if (varying.length === 1) {
        const col = varying[0]!;
        const list = chunk.map((k) => {
          params.push(this.value(k[col] ?? null));
          return ph();
        });
        where = `${ident(col)} IN (${list.join(', ')})`;
      } else {
        where = chunk
          .map((k) => `(${varying.map((c) => {
            params.push(this.value(k[c] ?? null));
            return `${ident(c)} = ${ph()}`;
          }).join(' AND ')})`)
          .join(' OR ');
      }
      const [p1, p2, p3] = this.dialect === 'postgres' ? ['$1', '$2', '$3'] : ['?', '?', '?'];
      const text = `UPDATE ${ident(table)} SET "_deleted_at" = ${p1} WHERE "_deleted_at" IS NULL AND "_synced_at" < ${p2} AND "organization_id" = ${p3} AND (${where})`;
      out.push(CompiledQuery.raw(text, params));
    }
  }

  /** Whether the table holds any row of the organization. */
  async hasRows(db: Db, table: string, organizationId: string): Promise<boolean> {
    const ph = this.dialect === 'postgres' ? '$1' : '?';
    const result = await db.executeQuery(CompiledQuery.raw(`SELECT 1 AS one FROM ${ident(table)} WHERE "organization_id" = ${ph} LIMIT 1`, [organizationId]));
    return result.rows.length > 0;
  }

  /** The stored `_hash` (and whether the row is marked deleted) of the given ids. */
  async storedHashes(db: Db, table: string, idColumn: string, organizationId: string, ids: readonly string[]): Promise<Map<string, { hash: string | null; deleted: boolean }>> {
    const out = new Map<string, { hash: string | null; deleted: boolean }>();
    const per = MAX_PARAMS - 1;
    for (let i = 0; i < ids.length; i += per) {
      const chunk = ids.slice(i, i + per);
      const params: SqlValue[] = [organizationId, ...chunk];
      const list = this.placeholders(chunk.length, 2).join(', ');
      const text = `SELECT ${ident(idColumn)} AS id, "_hash" AS hash, "_deleted_at" AS deleted_at FROM ${ident(table)} WHERE "organization_id" = ${this.dialect === 'postgres' ? '$1' : '?'} AND ${ident(idColumn)} IN (${list})`;
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
   * `scope` narrows it to one parent's children (a child stream read for one parent).
   * Returns how many rows it marked.
   */
  async markVanished(db: Db, table: string, organizationId: string, before: string, now: string, scope?: { column: string; value: string }): Promise<number> {
    const params: SqlValue[] = [now, organizationId, before];
    const ph = (n: number): string => (this.dialect === 'postgres' ? `$${n}` : '?');
    let text = `UPDATE ${ident(table)} SET "_deleted_at" = ${ph(1)} WHERE "organization_id" = ${ph(2)} AND "_deleted_at" IS NULL AND "_synced_at" < ${ph(3)}`;
    if (scope) {
      params.push(scope.value);
      text += ` AND ${ident(scope.column)} = ${ph(4)}`;
    }
    const result = await db.executeQuery(CompiledQuery.raw(text, params));
    return Number(result.numAffectedRows ?? 0n);
  }

  /**
   * Marks the rows of `childTable` whose parent (`parentTable`, joined on `column`) was marked
   * deleted at `deletedAt`: a deleted sales order's line items, a deleted contact's persons.
   */
  async cascadeDeleted(db: Db, childTable: string, parentTable: string, column: string, parentColumn: string, organizationId: string, deletedAt: string): Promise<number> {
    const ph = (n: number): string => (this.dialect === 'postgres' ? `$${n}` : '?');
    const text =
      `UPDATE ${ident(childTable)} SET "_deleted_at" = ${ph(1)} WHERE "organization_id" = ${ph(2)} AND "_deleted_at" IS NULL AND ${ident(column)} IN ` +
      `(SELECT ${ident(parentColumn)} FROM ${ident(parentTable)} WHERE "organization_id" = ${ph(3)} AND "_deleted_at" = ${ph(4)})`;
    const result = await db.executeQuery(CompiledQuery.raw(text, [deletedAt, organizationId, organizationId, deletedAt]));
    return Number(result.numAffectedRows ?? 0n);
  }

  /** Marks one record deleted (its single-record read answered "does not exist"). */
  async markDeleted(db: Db, table: string, idColumn: string, organizationId: string, id: string, now: string): Promise<void> {
    const ph = (n: number): string => (this.dialect === 'postgres' ? `$${n}` : '?');
    const text = `UPDATE ${ident(table)} SET "_deleted_at" = ${ph(1)} WHERE "organization_id" = ${ph(2)} AND ${ident(idColumn)} = ${ph(3)} AND "_deleted_at" IS NULL`;
    await db.executeQuery(CompiledQuery.raw(text, [now, organizationId, id]));
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
