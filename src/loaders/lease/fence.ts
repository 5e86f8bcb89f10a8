import { CompiledQuery, type QueryResult } from 'kysely';
import { FatalError } from '../../core/errors.js';
import type { AnyDb } from '../db.js';
import type { SqlDialect } from '../sql-dialect.js';

/** Proves, inside a transaction, that the organization's lease is still held. */
export interface Fence {
  /**
   * The statement run first in each transaction that writes the organization's data, or null
   * where no lease applies (verify, tests). Postgres: a `SELECT ... FOR SHARE` of the lease
   * row, so an acquirer's bump waits for the page to commit; SQLite: an `UPDATE` that takes
   * the write lock at once.
   */
  readonly query: CompiledQuery | null;
  /** Whether the statement's result shows the lease held. */
  holds(result: QueryResult<unknown>): boolean;
  /** The error to throw when it does not (or when the lease is known lost already). */
  lost(): LeaseLost | null;
  refusal(): LeaseLost;
}

export const noFence: Fence = {
  query: null,
  holds: () => true,
  lost: () => null,
  refusal: () => new LeaseLost('no lease', 'taken_over'),
};

/** Runs the fence's check in a transaction; throws LeaseLost (and so rolls it back) when the lease is gone. */
export async function checkFence(trx: AnyDb, fence: Fence): Promise<void> {
  const lost = fence.lost();
  if (lost) throw lost;
  if (!fence.query) return;
  const result = await trx.executeQuery(fence.query);
  if (!fence.holds(result)) throw fence.refusal();
}

/**
 * Why a lease was lost: another process took it over (its generation moved), this process's
 * own lock connection ended (a restart, an administrator, a network fault), or the warehouse
 * stopped confirming it (this process was paused or cut off).
 */
export type LeaseLossReason = 'taken_over' | 'connection_ended' | 'unconfirmed';

const LOSS_HINTS: Record<LeaseLossReason, string> = {
  taken_over:
    'Another svcsync process (daemon, worker or sync) now owns this organization and carries on from the last committed page; ' +
    'nothing is lost.',
  connection_ended:
    "This process's own connection to the warehouse ended, so it stopped writing for this organization; nothing committed is " +
    'lost. Check the warehouse server, then run again: the run continues from the last committed page.',
  unconfirmed:
    'The warehouse did not confirm the lease in time (this process was paused, or cut off from the warehouse); nothing committed ' +
    'is lost. Run again: the run continues from the last committed page.',
};

/**
 * This process no longer owns the organization. The transaction that found out wrote nothing;
 * the organization's work in this process ends (the stream layer lets it through, like a stop).
 */
export class LeaseLost extends FatalError {
  constructor(
    message: string,
    readonly reason: LeaseLossReason = 'taken_over',
  ) {
    super(message, { hint: LOSS_HINTS[reason] });
  }
}

/** The fence of a lease row: the statement that proves the row is still at the lease's generation. */
export function rowFence(
  sql: SqlDialect,
  text: (p: (n: number) => string) => string,
  params: unknown[],
  what: string,
  lost: () => LeaseLost | null,
): Fence {
  const query = CompiledQuery.raw(text(sql.param), params);
  return {
    query,
    holds: (r) => r.rows.length === 1 || Number(r.numAffectedRows ?? 0) === 1,
    lost,
    refusal: () => new LeaseLost(`${what} was taken over by another process; this page was not written`, 'taken_over'),
  };
}
