import { CompiledQuery } from 'kysely';
import { FatalError } from '../core/errors.js';
import type { SqlValue } from '../normalize/normalize.js';
import type { HistoryTable, StreamHistory } from './derived/history-tables.js';
import { ident, type SqlDialect } from './sql-dialect.js';

/**
 * Writes versions into the history tables (src/loaders/derived/history-tables.ts), set-based:
 * every statement compares the table's rows with the open versions in SQL, after the rows were
 * written and in the same transaction, so nothing is read into memory and a page that arrives
 * twice finds nothing to write. Timestamps are compared as instants: Postgres `timestamptz`, and
 * in SQLite svcsync's own ISO-8601 UTC text (fixed width, ending in Z), whose text order is the
 * instants' order; the one computed instant (a clamp of one millisecond) is written in that form.
 */

/** Which records of one organization a set of statements covers. */
export type HistoryScope =
  | { kind: 'ids'; organizationId: string; ids: readonly string[] }
  /** Records marked deleted at this instant (`_deleted_at`). */
  | { kind: 'deletedAt'; organizationId: string; at: string }
  /** Every record of the organization (turning history on). */
  | { kind: 'all'; organizationId: string };

/** Bound parameters in text order (SQLite's `?` cannot be reused). */
class Params {
  readonly values: SqlValue[] = [];
  constructor(private readonly sql: SqlDialect) {}
  p(value: SqlValue): string {
    this.values.push(value);
    return this.sql.param(this.values.length);
  }
}

const IDS_PER_STATEMENT = 5_000;

export class HistoryWriter {
  private readonly pg: boolean;
  constructor(readonly sql: SqlDialect) {
    this.pg = sql.name === 'postgres';
  }

  private instant(b: Params, value: string): string {
    return this.pg ? `CAST(${b.p(value)} AS timestamptz)` : b.p(value);
  }

  private text(b: Params, value: string | null): string {
    return this.pg ? `CAST(${b.p(value)} AS text)` : b.p(value);
  }

  /** One millisecond after an instant, in the column's own form. */
  private plusOne(expr: string): string {
    return this.pg ? `(${expr} + interval '1 millisecond')` : `strftime('%Y-%m-%dT%H:%M:%fZ', ${expr}, '+0.001 seconds')`;
  }

  private differs(a: string, b: string, columns: readonly string[]): string {
    const op = this.pg ? 'IS DISTINCT FROM' : 'IS NOT';
    return `(${columns.map((c) => `${a}.${ident(c)} ${op} ${b}.${ident(c)}`).join(' OR ')})`;
  }

  private same(a: string, b: string, columns: readonly string[]): string {
    const op = this.pg ? 'IS NOT DISTINCT FROM' : 'IS';
    return columns.map((c) => `${a}.${ident(c)} ${op} ${b}.${ident(c)}`).join(' AND ');
  }

  /** `alias` belongs to the records in scope (an alias of any table holding the record's key). */
  private scoped(b: Params, s: StreamHistory, alias: string, scope: HistoryScope): string {
    const id = idColumn(s.top);
    let text = `${alias}."organization_id" = ${b.p(scope.organizationId)}`;
    if (scope.kind === 'ids') text += ` AND ${alias}.${ident(id)} IN (${scope.ids.map((v) => b.p(v)).join(', ')})`;
    if (scope.kind === 'deletedAt')
      text +=
        ` AND ${alias}.${ident(id)} IN (SELECT ${ident(id)} FROM ${ident(s.top.table)} ` +
        `WHERE "organization_id" = ${b.p(scope.organizationId)} AND "_deleted_at" = ${this.instant(b, scope.at)})`;
    return text;
  }

  private select(b: Params, t: HistoryTable, runId: string | null): string {
    return t.columns.map((c) => (c === '_run_id' ? `COALESCE(${this.text(b, runId)}, t."_run_id")` : `t.${ident(c)}`)).join(', ');
  }

  private insertInto(t: HistoryTable): string {
    return `INSERT INTO ${ident(t.history)} (${[...t.columns, '_valid_from', '_valid_to', '_change'].map(ident).join(', ')}) `;
  }

  /** Closes each open version that a later open version of the same key follows. */
  private closeSuperseded(out: CompiledQuery[], s: StreamHistory, scope: HistoryScope): void {
    const t = s.top;
    const b = new Params(this.sql);
    const same = t.key.map((k) => `n.${ident(k)} = h.${ident(k)}`).join(' AND ');
    const later = `FROM ${ident(t.history)} AS n WHERE ${same} AND n."_valid_to" IS NULL AND n."_valid_from" > h."_valid_from"`;
    const text =
      `UPDATE ${ident(t.history)} AS h SET "_valid_to" = (SELECT MIN(n."_valid_from") ${later}) ` +
      `WHERE h."_valid_to" IS NULL AND ${this.scoped(b, s, 'h', scope)} AND EXISTS (SELECT 1 ${later})`;
    out.push(CompiledQuery.raw(text, b.values));
  }

  /**
   * Child tables follow their record's open version: versions older than it close where it
   * begins; versions that began with it and no longer match a row are taken back (the record was
   * completed in the same run, by its single-record read); current rows open where it begins.
   */
  private childQueries(out: CompiledQuery[], s: StreamHistory, scope: HistoryScope, runId: string | null): void {
    const top = s.top;
    const id = idColumn(top);
    const parentJoin = (alias: string): string =>
      `p."organization_id" = ${alias}."organization_id" AND p.${ident(id)} = ${alias}.${ident(id)}`;
    for (const c of s.children) {
      let b = new Params(this.sql);
      out.push(
        CompiledQuery.raw(
          `UPDATE ${ident(c.history)} AS c SET "_valid_to" = p."_valid_from" FROM ${ident(top.history)} AS p ` +
            `WHERE ${this.scoped(b, s, 'p', scope)} AND p."_valid_to" IS NULL AND ${parentJoin('c')} ` +
            `AND c."_valid_to" IS NULL AND c."_valid_from" < p."_valid_from"`,
          b.values,
        ),
      );
      b = new Params(this.sql);
      const childKey = (x: string, y: string): string => c.key.map((k) => `${x}.${ident(k)} = ${y}.${ident(k)}`).join(' AND ');
      out.push(
        CompiledQuery.raw(
          `DELETE FROM ${ident(c.history)} AS c WHERE c."_valid_to" IS NULL AND ${this.scoped(b, s, 'c', scope)} ` +
            `AND EXISTS (SELECT 1 FROM ${ident(top.history)} AS p WHERE ${parentJoin('c')} ` +
            `AND p."_valid_to" IS NULL AND p."_valid_from" = c."_valid_from") ` +
            `AND NOT EXISTS (SELECT 1 FROM ${ident(c.table)} AS t WHERE ${childKey('t', 'c')} ` +
            `AND t."_deleted_at" IS NULL AND ${this.same('t', 'c', c.compared)})`,
          b.values,
        ),
      );
      b = new Params(this.sql);
      const select = this.select(b, c, runId);
      out.push(
        CompiledQuery.raw(
          this.insertInto(c) +
            `SELECT ${select}, p."_valid_from", NULL, ` +
            `CASE WHEN EXISTS (SELECT 1 FROM ${ident(c.history)} AS e WHERE ${childKey('e', 't')}) THEN 'updated' ELSE 'created' END ` +
            `FROM ${ident(c.table)} AS t JOIN ${ident(top.history)} AS p ON ${parentJoin('t')} ` +
            `AND p."_valid_to" IS NULL AND p."_change" <> 'deleted' ` +
            `WHERE ${this.scoped(b, s, 't', scope)} AND t."_deleted_at" IS NULL ` +
            `AND NOT EXISTS (SELECT 1 FROM ${ident(c.history)} AS c WHERE ${childKey('c', 't')} ` +
            `AND c."_valid_to" IS NULL AND c."_valid_from" = p."_valid_from")`,
          b.values,
        ),
      );
    }
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
    const out: CompiledQuery[] = [];
    if (scope.kind === 'ids') {
      for (let i = 0; i < scope.ids.length; i += IDS_PER_STATEMENT)
        this.recordChunk(out, s, { ...scope, ids: scope.ids.slice(i, i + IDS_PER_STATEMENT) }, now, runId);
    } else this.recordChunk(out, s, scope, now, runId);
    return out;
  }

  private recordChunk(out: CompiledQuery[], s: StreamHistory, scope: HistoryScope, now: string, runId: string | null): void {
    if (scope.kind === 'ids' && scope.ids.length === 0) return;
    const t = s.top;
    const keyJoin = (a: string, b: string): string => t.key.map((k) => `${a}.${ident(k)} = ${b}.${ident(k)}`).join(' AND ');
    if (runId !== null || t.changeColumn !== null) {
      const b = new Params(this.sql);
      const set = t.columns.filter((c) => !t.key.includes(c)).map((c) => `${ident(c)} = t.${ident(c)}`);
      // The same version: written by this run, or (a run that ended before the record's
      // single-record read) carrying the same change time.
      const sameVersion = [
        ...(runId !== null ? [`h."_run_id" = ${this.text(b, runId)}`] : []),
        ...(t.changeColumn !== null ? [`t.${ident(t.changeColumn)} = h."_valid_from"`] : []),
      ];
      out.push(
        CompiledQuery.raw(
          `UPDATE ${ident(t.history)} AS h SET ${set.join(', ')} FROM ${ident(t.table)} AS t ` +
            `WHERE ${keyJoin('h', 't')} AND h."_valid_to" IS NULL AND h."_change" <> 'deleted' AND (${sameVersion.join(' OR ')}) ` +
            `AND ${this.scoped(b, s, 't', scope)} AND t."_deleted_at" IS NULL AND ${this.differs('h', 't', t.compared)}`,
          b.values,
        ),
      );
    }
    const b = new Params(this.sql);
    const select = this.select(b, t, runId);
    const base = (): string => (t.changeColumn ? `COALESCE(t.${ident(t.changeColumn)}, ${this.instant(b, now)})` : this.instant(b, now));
    const lastKey = ident(idColumn(t));
    const from = `CASE WHEN o.${lastKey} IS NULL OR ${base()} > o."_valid_from" THEN ${base()} ELSE ${this.plusOne('o."_valid_from"')} END`;
    const change = `CASE WHEN o.${lastKey} IS NULL THEN 'created' WHEN o."_change" = 'deleted' THEN 'restored' ELSE 'updated' END`;
    out.push(
      CompiledQuery.raw(
        this.insertInto(t) +
          `SELECT ${select}, ${from}, NULL, ${change} ` +
          `FROM ${ident(t.table)} AS t LEFT JOIN ${ident(t.history)} AS o ON ${keyJoin('o', 't')} AND o."_valid_to" IS NULL ` +
          `WHERE ${this.scoped(b, s, 't', scope)} AND t."_deleted_at" IS NULL ` +
          `AND (o.${lastKey} IS NULL OR o."_change" = 'deleted' OR ${this.differs('o', 't', t.compared)})`,
        b.values,
      ),
    );
    this.closeSuperseded(out, s, scope);
    this.childQueries(out, s, scope, runId);
  }

  /**
   * After records were marked deleted (`deletedAt` scope, or `all` for every deleted row): a
   * `deleted` version for each whose open version is not one, beginning at `_deleted_at`; the
   * version before it and its child rows' versions close there.
   */
  deletionQueries(s: StreamHistory, scope: Exclude<HistoryScope, { kind: 'ids' }>, runId: string | null): CompiledQuery[] {
    const out: CompiledQuery[] = [];
    const t = s.top;
    const b = new Params(this.sql);
    const select = this.select(b, t, runId);
    const keyJoin = t.key.map((k) => `o.${ident(k)} = t.${ident(k)}`).join(' AND ');
    out.push(
      CompiledQuery.raw(
        this.insertInto(t) +
          `SELECT ${select}, ` +
          `CASE WHEN t."_deleted_at" > o."_valid_from" THEN t."_deleted_at" ELSE ${this.plusOne('o."_valid_from"')} END, NULL, 'deleted' ` +
          `FROM ${ident(t.table)} AS t JOIN ${ident(t.history)} AS o ` +
          `ON ${keyJoin} AND o."_valid_to" IS NULL AND o."_change" <> 'deleted' ` +
          `WHERE ${this.scoped(b, s, 't', scope)} AND t."_deleted_at" IS NOT NULL`,
        b.values,
      ),
    );
    this.closeSuperseded(out, s, scope);
    this.childQueries(out, s, scope, runId);
    return out;
  }
}

/** The record's own key column (the table's key is organization_id and it). */
function idColumn(t: HistoryTable): string {
  const id = t.key[1];
  if (t.key.length !== 2 || t.key[0] !== 'organization_id' || id === undefined)
    throw new FatalError(`${t.table}: history needs a key of organization_id and one id column, not (${t.key.join(', ')})`);
  return id;
}
