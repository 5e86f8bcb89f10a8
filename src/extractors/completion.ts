import pLimit from 'p-limit';
import { connectionLimits } from '../api/client.js';
import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName } from '../catalog/types.js';
import { FatalError } from '../core/errors.js';
import { normalizeRecord, type NormalizedRecord } from '../normalize/normalize.js';
import { commitChildren, commitDetail } from '../loaders/unit-of-work.js';
import { takePending, type PendingReason } from '../state/pending.js';
import type { StreamKey } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { fillPath, pages } from './pager.js';
import { runAll } from './settle.js';
import { holding } from './record-budget.js';
import { raiseIfStopped } from './stop.js';
import { newTally, type StreamTally } from './stream-tally.js';
import { detailIsEnabled, normalizePage } from './stream-pass.js';

/** Items taken from the queue per transaction. */
const BATCH = 50;
const MAX_CHILD_PAGES = 1_000;

function isGone(error: unknown): boolean {
  return error instanceof FatalError && error.code === 1002;
}

/** How many fetches run at once for one organization; the limiter still has the last word. */
function fanOut(ctx: SyncContext): number {
  return Math.max(1, Math.min(connectionLimits(ctx.connection).concurrency, 10));
}

/**
 * Fetches the single record of every queued id (list records that lack line items), writes
 * the detail columns and child tables, and takes the id off the queue in the same
 * transaction: each item commits as soon as it is fetched, so a failure or a spent quota
 * leaves only the unfetched items queued. A record the API no longer has is marked deleted.
 */
export async function completeDetails(
  ctx: SyncContext,
  organizationId: string,
  stream: StreamSpec,
  tally: StreamTally = newTally(),
): Promise<void> {
  if (!stream.detail || !detailIsEnabled(ctx, stream)) return;
  const detail = stream.detail;
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(stream) };
  const limit = pLimit(fanOut(ctx));
  for (;;) {
    raiseIfStopped(ctx);
    const batch = await takePending(ctx.warehouse.db, key, 'detail', BATCH);
    if (batch.length === 0) return;
    await runAll(
      limit,
      batch.map((item) => async (): Promise<void> => {
        raiseIfStopped(ctx);
        const path = fillPath(detail.path, { [stream.primaryKey]: item.item_id });
        let record: NormalizedRecord | null = null;
        await holding(ctx.records, 1, ctx.signal, async () => {
          // A stop asked for while waiting for room: nothing is sent.
          raiseIfStopped(ctx);
          const syncedAt = ctx.stamp.next();
          try {
            const body = await ctx.client.get({ family: stream.family, organizationId, path, signal: ctx.signal, meter: tally.meter });
            const raw = detail.recordKeys.map((k) => body[k]).find((v) => v && typeof v === 'object' && !Array.isArray(v)) as
              Record<string, unknown> | undefined;
            if (!raw) {
              throw new FatalError(
                `GET ${stream.family}${path}: the response has none of the keys ${detail.recordKeys.map((k) => `"${k}"`).join(', ')}.`,
                {
                  hint: `Add the key this API uses to the detail recordKeys of ${qualifiedName(stream)} in src/catalog.`,
                },
              );
            }
            record = normalizeRecord(stream, raw, { organizationId, source: 'detail', syncedAt, runId: ctx.runId });
            tally.warnings.addAll(record.warnings);
            tally.drift.addAll(record.unknown);
          } catch (error) {
            if (!isGone(error)) throw error;
          }
          await commitDetail(ctx, { key, stream, id: item.item_id, syncedAt, record });
          tally.records++;
          tally.written++;
          if (!record) tally.deleted++;
        });
      }),
    );
  }
}

/**
 * Reads a child stream (refunds of a vendor credit, persons of a contact, tasks of a project)
 * for every parent queued for it. Each parent's children are a full refresh: rows the parent
 * no longer lists are marked deleted. Rows and the queue entry commit together.
 */
export async function completeChildren(
  ctx: SyncContext,
  organizationId: string,
  child: StreamSpec,
  parent: StreamSpec,
  tally: StreamTally = newTally(),
): Promise<void> {
  const link = child.parent!;
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(child) };
  const limit = pLimit(fanOut(ctx));
  for (;;) {
    raiseIfStopped(ctx);
    const batch = await takePending(ctx.warehouse.db, key, 'children', BATCH);
    if (batch.length === 0) return;
    await runAll(
      limit,
      batch.map((item) => async () => {
        raiseIfStopped(ctx);
        const parentId = item.item_id;
        const startedAt = ctx.stamp.next();
        const path = fillPath(child.path, { [link.key]: parentId });
        const records: NormalizedRecord[] = [];
        let gone = false;
        let pagesRead = 0;
        // The parent's whole list is committed at once, so its pages are held together: the
        // first page's room is waited for, then the share holds what has arrived (past the cap
        // only for a list longer than a page, which is rare).
        await holding(ctx.records, ctx.config.sync.per_page, ctx.signal, async (permit) => {
          raiseIfStopped(ctx);
          try {
            for await (const page of pages({
              client: ctx.client,
              stream: child,
              organizationId,
              path,
              query: { ...(child.query ?? {}) },
              perPage: ctx.config.sync.per_page,
              startPage: 1,
              signal: ctx.signal,
              stop: ctx.stop,
              maxPages: MAX_CHILD_PAGES,
              meter: tally.meter,
            })) {
              pagesRead++;
              records.push(
                ...normalizePage(ctx, child, organizationId, page.records, startedAt, { key: link.key, value: parentId }, tally),
              );
              permit?.resizeTo(records.length);
            }
          } catch (error) {
            if (!isGone(error)) throw error;
            gone = true;
          }
          const syncedAt = ctx.stamp.next();
          for (const r of records) r.row['_synced_at'] = syncedAt;
          await commitChildren(ctx, {
            key,
            child,
            parent,
            parentId,
            syncedAt,
            records,
            parentGone: gone,
            reason: item.reason as PendingReason,
          });
          tally.pages += pagesRead;
          tally.records += records.length;
          tally.written += records.length;
          if (gone) tally.deleted++;
        });
      }),
    );
  }
}
