import pLimit from 'p-limit';
import { connectionLimits } from '../api/client.js';
import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName } from '../catalog/types.js';
import { describeError, FatalError } from '../core/errors.js';
import { itemFailureVerdict, SetAside } from './item-failure.js';
import { normalizeRecord, type NormalizedRecord } from '../normalize/normalize.js';
import { commitChildren, commitDetail } from '../state/unit-of-work.js';
import { deferPending, takePending, type PendingKind, type PendingReason } from '../state/pending.js';
import type { StreamKey } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { fillPath, pages } from './pager.js';
import { runAll } from './settle.js';
import { holding } from './record-budget.js';
import { raiseIfStopped } from './stop.js';
import { countDeleted, newTally, type StreamTally } from './stream-tally.js';
import { detailIsEnabled, normalizePage } from './stream-pass.js';
import { recordRepairs, repairMessage } from './text-repairs.js';
import { provenEmbedded, type ProvenChildren } from './embedded-children.js';
import { readAllChildren } from './all-children.js';

/** Items taken from the queue per transaction. */
const BATCH = 50;
const MAX_CHILD_PAGES = 1_000;

/** The API says the record (or parent) no longer exists: an envelope code of `sync.gone_codes` (A4). */
function isGone(ctx: SyncContext, error: unknown): boolean {
  return error instanceof FatalError && error.code !== undefined && ctx.config.sync.gone_codes.includes(error.code);
}

/**
 * The record of a single-record answer: an object under one of the keys, or an array holding
 * exactly one object (spec 4.2 and 4.3 show single currencies and contact persons that way).
 */
export function singleRecord(
  body: Record<string, unknown>,
  keys: readonly string[],
  request: string,
  stream: string,
): Record<string, unknown> {
  for (const k of keys) {
    const v = body[k];
    if (isObject(v)) return v;
    if (Array.isArray(v) && v.length === 1 && isObject(v[0])) return v[0];
  }
  const present = keys.filter((k) => k in body);
  const what = (v: unknown): string => {
    if (Array.isArray(v)) return `an array of ${v.length}`;
    return v === null ? 'null' : typeof v;
  };
  throw new FatalError(
    present.length > 0
      ? `${request}: ${present.map((k) => `"${k}" is ${what(body[k])}`).join(', ')}, not one record.`
      : `${request}: the response has none of the keys ${keys.map((k) => `"${k}"`).join(', ')}.`,
    {
      hint:
        present.length > 0
          ? `The API answered without the record; if it does so for a record it deleted, report the request above.`
          : `Add the key this API uses to the detail recordKeys of ${stream} in src/catalog.`,
      request,
    },
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
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
 * Child lists the record embeds and proves complete (`provenEmbedded`), of the child streams
 * `embedInto` accepts, are written from it and taken off their queue: no request of their own.
 */
export async function completeDetails(
  ctx: SyncContext,
  organizationId: string,
  stream: StreamSpec,
  tally: StreamTally = newTally(),
  embedInto: (child: StreamSpec) => boolean = () => false,
  /** Child records written from the records, per child stream (qualified name), for the child's own count. */
  embedded: Map<string, StreamTally> = new Map(),
): Promise<void> {
  if (!stream.detail || !detailIsEnabled(ctx, stream)) return;
  const detail = stream.detail;
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(stream) };
  const limit = pLimit(fanOut(ctx));
  const passStart = ctx.stamp.next();
  const aside = new SetAside();
  for (;;) {
    raiseIfStopped(ctx);
    const batch = await takePending(ctx.warehouse.db, key, 'detail', BATCH, passStart);
    if (batch.length === 0) break;
    await runAll(
      limit,
      batch.map((item) =>
        guarded(ctx, key, 'detail', item.item_id, aside, async (): Promise<void> => {
          raiseIfStopped(ctx);
          const path = fillPath(detail.path, { [stream.primaryKey]: item.item_id });
          let record: NormalizedRecord | null = null;
          let proven: ProvenChildren[] = [];
          await holding(ctx.records, 1, ctx.signal, async () => {
            // A stop asked for while waiting for room: nothing is sent.
            raiseIfStopped(ctx);
            const syncedAt = ctx.stamp.next();
            try {
              const repaired: string[] = [];
              const body = await ctx.client.get({
                family: stream.family,
                organizationId,
                path,
                signal: ctx.signal,
                meter: tally.meter,
                repaired,
              });
              const raw = singleRecord(body, detail.recordKeys, `GET ${stream.family}${path}`, qualifiedName(stream));
              record = normalizeRecord(stream, raw, { organizationId, source: 'detail', syncedAt, runId: ctx.runId });
              tally.warnings.addAll(record.warnings);
              if (repaired.length)
                tally.warnings.addAll(recordRepairs(record.table, record.id, repaired, repairMessage(ctx.warehouse.dialect)));
              tally.drift.addAll(record.unknown);
              proven = provenEmbedded(stream, raw, embedInto);
            } catch (error) {
              if (!isGone(ctx, error)) throw error;
            }
            const { deleted } = await commitDetail(ctx, { key, stream, id: item.item_id, syncedAt, record });
            countDeleted(tally, deleted);
            for (const p of proven) {
              const name = qualifiedName(p.child);
              const childTally = embedded.get(name) ?? newTally();
              embedded.set(name, childTally);
              await commitEmbedded(ctx, key, stream, item.item_id, item.reason as PendingReason, p, childTally);
            }
            // The record and its change were counted with its list page: this is one more read of it.
            tally.reads++;
          });
        }),
      ),
    );
  }
  const failed = aside.error('single-record reads', qualifiedName(stream));
  if (failed) throw failed;
}

function withSyncedAt(records: NormalizedRecord[], syncedAt: string): NormalizedRecord[] {
  for (const r of records) r.row['_synced_at'] = syncedAt;
  return records;
}

/**
 * One parent's children from its own single record: committed as a read of their list would
 * commit them, and counted (records, rows changed, warnings, drift) in the child stream's tally.
 */
async function commitEmbedded(
  ctx: SyncContext,
  parentKey: StreamKey,
  parent: StreamSpec,
  parentId: string,
  reason: PendingReason,
  { child, entries }: ProvenChildren,
  tally: StreamTally,
): Promise<void> {
  const link = child.parent!;
  const syncedAt = ctx.stamp.next();
  const records = normalizePage(ctx, child, parentKey.organizationId, entries, syncedAt, { key: link.key, value: parentId }, tally);
  const key: StreamKey = { ...parentKey, stream: qualifiedName(child) };
  const { changed, deleted } = await commitChildren(ctx, { key, child, parent, parentId, syncedAt, records, parentGone: false, reason });
  tally.records += records.length;
  tally.reads += records.length;
  tally.written += changed;
  countDeleted(tally, deleted);
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
  const passStart = ctx.stamp.next();
  const aside = new SetAside();
  // Many parents queued: one walk of the list of all their children instead of a list each.
  const all = await readAllChildren(ctx, key, child, tally);
  for (;;) {
    raiseIfStopped(ctx);
    const batch = await takePending(ctx.warehouse.db, key, 'children', BATCH, passStart);
    if (batch.length === 0) break;
    await runAll(
      limit,
      batch.map((item) =>
        guarded(ctx, key, 'children', item.item_id, aside, async () => {
          raiseIfStopped(ctx);
          const parentId = item.item_id;
          const startedAt = ctx.stamp.next();
          const path = fillPath(child.path, { [link.key]: parentId });
          const records: NormalizedRecord[] = [];
          let gone = false;
          let pagesRead = 0;
          if (all) {
            const { changed, deleted } = await commitChildren(ctx, {
              key,
              child,
              parent,
              parentId,
              syncedAt: startedAt,
              records: withSyncedAt(all.get(parentId) ?? [], startedAt),
              parentGone: false,
              reason: item.reason as PendingReason,
            });
            tally.records += all.get(parentId)?.length ?? 0;
            tally.written += changed;
            countDeleted(tally, deleted);
            return;
          }
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
                pagingRefused: ctx.pagingRefused,
              })) {
                pagesRead++;
                records.push(
                  ...normalizePage(
                    ctx,
                    child,
                    organizationId,
                    page.records,
                    startedAt,
                    { key: link.key, value: parentId },
                    tally,
                    page.repaired,
                  ),
                );
                permit?.resizeTo(records.length);
              }
            } catch (error) {
              if (!isGone(ctx, error)) throw error;
              gone = true;
            }
            const syncedAt = ctx.stamp.next();
            for (const r of records) r.row['_synced_at'] = syncedAt;
            const { changed, deleted } = await commitChildren(ctx, {
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
            tally.reads += records.length;
            tally.written += changed;
            countDeleted(tally, deleted);
          });
        }),
      ),
    );
  }
  const failed = aside.error(`parents' ${child.name} lists`, qualifiedName(child));
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
