import pLimit from 'p-limit';
import { connectionLimits } from '../api/client.js';
import { describeError, FatalError } from '../core/errors.js';
import { deferPending, takePending, type PendingKind } from '../state/pending.js';
import type { PendingRow } from '../state/tables.js';
import type { StreamKey } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { itemFailureVerdict, SetAside } from './item-failure.js';
import { runAll } from './settle.js';
import { raiseIfStopped } from './stop.js';

/** Items taken from the queue per transaction. */
const BATCH = 50;

/** The API says the record (or parent) no longer exists: an envelope code of `sync.gone_codes` (A4). */
export function isGone(ctx: SyncContext, error: unknown): boolean {
  return error instanceof FatalError && error.code !== undefined && ctx.config.sync.gone_codes.includes(error.code);
}

/** How many fetches run at once for one organization; the limiter still has the last word. */
function fanOut(ctx: SyncContext): number {
  return Math.max(1, Math.min(connectionLimits(ctx.connection).concurrency, 10));
}

/** A drain of one queue, as each item's work sees it. */
export interface Drain {
  key: StreamKey;
  /** When the drain began: items queued up to this instant are taken, so work queued with it is taken too. */
  startedAt: string;
}

/**
 * Takes the queued `kind` items of `key`, newest record first, `BATCH` at a time, and runs
 * `work` for each, several at once. An item the API refuses for good is set aside behind the
 * others (A4), and the drain ends with one error naming how many; an item that ends the pass
 * goes to the back of the queue and the error propagates. `prepare` runs once before the first
 * batch (the list of all children, for one).
 */
export async function drainQueue(
  ctx: SyncContext,
  key: StreamKey,
  kind: PendingKind,
  what: string,
  work: (item: PendingRow, drain: Drain) => Promise<void>,
  prepare?: (drain: Drain) => Promise<void>,
): Promise<void> {
  const limit = pLimit(fanOut(ctx));
  const drain: Drain = { key, startedAt: ctx.stamp.next() };
  const aside = new SetAside();
  await prepare?.(drain);
  for (;;) {
    raiseIfStopped(ctx);
    const batch = await takePending(ctx.warehouse.db, key, kind, BATCH, drain.startedAt);
    if (batch.length === 0) break;
    await runAll(
      limit,
      batch.map((item) => guarded(ctx, key, kind, item.item_id, aside, () => work(item, drain))),
    );
  }
  const failed = aside.error(what, key.stream);
  if (failed) throw failed;
}

/**
 * One queued item's work, with its failure judged by `itemFailureVerdict`: an item set aside
 * or ending the pass goes to the back of the queue; a set-aside one lets the others go on.
 */
function guarded(
  ctx: SyncContext,
  key: StreamKey,
  kind: PendingKind,
  itemId: string,
  aside: SetAside,
  work: () => Promise<void>,
): () => Promise<void> {
  return async () => {
    try {
      raiseIfStopped(ctx);
      await work();
    } catch (error) {
      const verdict = itemFailureVerdict(error, ctx.signal);
      if (verdict === 'propagate') throw error;
      await deferPending(ctx.warehouse.db, key, kind, itemId, ctx.stamp.next());
      if (verdict === 'defer-and-end') throw error;
      ctx.logger.warn(
        { organization_id: key.organizationId, stream: key.stream, item_id: itemId, err: error },
        `${key.stream} ${itemId} set aside: ${describeError(error)}`,
      );
      aside.add(itemId, error);
    }
  };
}
