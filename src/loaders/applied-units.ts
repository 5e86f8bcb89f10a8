import { randomUUID } from 'node:crypto';
import { CompiledQuery, type QueryResult } from 'kysely';
import type { AnyDb } from './db.js';
import type { SqlDialect } from './sql-dialect.js';

/**
 * Units of work that run once, however often a fault makes svcsync send them.
 *
 * A transaction whose COMMIT reached the server but whose reply was lost (the connection dropped
 * in between) looks failed to the client, and `withFaultRetry` runs it again on a new
 * connection. Upserts survive that, but a pass's end (which forgets the ids its pages listed), a
 * usage reservation (`count + n`) or a count of rows marked deleted do not. So each such unit
 * carries an id, and its transaction first claims the id in `_svcsync_applied`; a claim that
 * finds the id already there means the first attempt committed: the transaction changes nothing
 * and reports what the first attempt stored with the claim.
 */

/** A fresh unit id: one per unit of work, kept across its retries. */
export function newUnitId(): string {
  return randomUUID();
}

/** What one `Warehouse.batch` did. */
export interface BatchOutcome<T = undefined> {
  /** Rows each query changed, in the order given (0 for a SELECT). */
  affected: number[];
  /** What `after` returned. */
  result: T | undefined;
  /** The unit had committed before (its reply was lost): nothing ran again; the rest is what the first attempt reported. */
  replayed: boolean;
}

/** What a unit's first attempt stored with its claim, as the batch reports it. */
export function replayOf<T>(stored: string | null): BatchOutcome<T> {
  const parsed = stored === null ? null : (JSON.parse(stored) as { affected?: number[]; result?: T | null });
  return { affected: parsed?.affected ?? [], result: parsed?.result ?? undefined, replayed: true };
}

/** What a claimed unit stored, or the claim's own verdict. */
export interface UnitClaim {
  /** True when the id was claimed by an earlier attempt that committed. */
  replayed: boolean;
  /** The earlier attempt's stored result (JSON text), when replayed. */
  stored: string | null;
}

/** `INSERT ... ON CONFLICT DO NOTHING`: changes one row the first time, none after. */
export function claimQuery(sql: SqlDialect, unit: string, at: string): CompiledQuery {
  return CompiledQuery.raw(
    `INSERT INTO "_svcsync_applied" ("unit", "applied_at") VALUES (${sql.param(1)}, ${sql.param(2)}) ON CONFLICT ("unit") DO NOTHING`,
    [unit, at],
  );
}

export function storedQuery(sql: SqlDialect, unit: string): CompiledQuery {
  return CompiledQuery.raw(`SELECT "result" FROM "_svcsync_applied" WHERE "unit" = ${sql.param(1)}`, [unit]);
}

export function resultQuery(sql: SqlDialect, unit: string, result: string): CompiledQuery {
  return CompiledQuery.raw(`UPDATE "_svcsync_applied" SET "result" = ${sql.param(1)} WHERE "unit" = ${sql.param(2)}`, [result, unit]);
}

/** Rows an INSERT, UPDATE or DELETE changed (both drivers report `numAffectedRows`). */
export function changedRows(result: QueryResult<unknown>): number {
  return Number(result.numAffectedRows ?? 0n);
}

/** Claims `unit` inside the caller's transaction. */
export async function claimUnit(trx: AnyDb, sql: SqlDialect, unit: string, at: string): Promise<UnitClaim> {
  if (changedRows(await trx.executeQuery(claimQuery(sql, unit, at))) > 0) return { replayed: false, stored: null };
  const row = await trx.executeQuery<{ result: string | null }>(storedQuery(sql, unit));
  return { replayed: true, stored: row.rows[0]?.result ?? null };
}

/**
 * How long a claim is kept: longer than any retry of its unit can last (`warehouse.retry_s`,
 * 60 s by default), with a wide margin for a clock that jumps.
 */
export const KEEP_CLAIMS_MS = 6 * 3_600_000;

/** Forgets the claims made before `before` (ISO-8601): no retry of theirs can still come. */
export async function pruneClaims(db: AnyDb, sql: SqlDialect, before: string): Promise<number> {
  return changedRows(
    await db.executeQuery(CompiledQuery.raw(`DELETE FROM "_svcsync_applied" WHERE "applied_at" < ${sql.param(1)}`, [before])),
  );
}
