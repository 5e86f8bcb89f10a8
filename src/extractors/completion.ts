import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName } from '../catalog/types.js';
import { FatalError } from '../core/errors.js';
import { normalizeRecord, type NormalizedRecord } from '../normalize/normalize.js';
import { commitChildren, commitDetail } from '../state/unit-of-work.js';
import type { PendingReason } from '../state/pending.js';
import type { PendingRow } from '../state/tables.js';
import type { StreamKey } from '../state/stream-state.js';
import { readAllChildren } from './all-children.js';
import { judgeChildChanges } from './child-checks.js';
import { readChildList } from './child-list.js';
import type { SyncContext } from './context.js';
import { commitProvenChildren, healEmbedded, provenEmbedded, type ProvenChildren } from './embedded-children.js';
import { fillPath } from './pager.js';
import { drainQueue, isGone, type Drain } from './queue-drain.js';
import { holding } from './record-budget.js';
import { raiseIfStopped } from './stop.js';
import { countDeleted, newTally, type StreamTally } from './stream-tally.js';
import { detailIsEnabled } from './page-records.js';
import { recordRepairs, repairMessage } from './text-repairs.js';

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

/**
 * Fetches the single record of every queued id (list records that lack line items), writes
 * the detail columns and child tables, and takes the id off the queue in the same
 * transaction: each item commits as soon as it is fetched, so a failure or a spent quota
 * leaves only the unfetched items queued. A record the API no longer has is marked deleted.
 * Child lists the record embeds and proves complete (`provenEmbedded`), of the child streams
 * `embedInto` accepts, are written from it and taken off their queue: no request of their own
 * (A48, checked as src/extractors/shortcuts.ts says).
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
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(stream) };
  try {
    await drainQueue(ctx, key, 'detail', 'single-record reads', (item) =>
      holding(ctx.records, 1, ctx.signal, async () => {
        // A stop asked for while waiting for room: nothing is sent.
        raiseIfStopped(ctx);
        await completeDetail(ctx, { key, stream, item, tally, embedInto, embedded });
      }),
    );
  } finally {
    // Whatever ended the drain, what a record wrongly proved is queued for its lists.
    await healEmbedded(ctx, organizationId, stream);
  }
}

interface DetailItem {
  key: StreamKey;
  stream: StreamSpec;
  item: PendingRow;
  tally: StreamTally;
  embedInto: (child: StreamSpec) => boolean;
  embedded: Map<string, StreamTally>;
}

/** One queued single-record read: fetched, committed with its removal from the queue, then the children it carries. */
async function completeDetail(ctx: SyncContext, d: DetailItem): Promise<void> {
  const { key, stream, item, tally } = d;
  const syncedAt = ctx.stamp.next();
  const fetched = await fetchDetail(ctx, d, syncedAt);
  const { deleted } = await commitDetail(ctx, { key, stream, id: item.item_id, syncedAt, record: fetched?.record ?? null });
  countDeleted(tally, deleted);
  if (fetched) {
    await commitProvenChildren(ctx, {
      key,
      parent: stream,
      parentId: item.item_id,
      reason: item.reason as PendingReason,
      proven: fetched.proven,
      tallies: d.embedded,
      requests: tally.meter,
    });
  }
  // The record and its change were counted with its list page: this is one more read of it.
  tally.reads++;
}

/** The single record, normalized, and the child lists it proves whole; null when the API says it is gone. */
async function fetchDetail(
  ctx: SyncContext,
  { key, stream, item, tally, embedInto }: DetailItem,
  syncedAt: string,
): Promise<{ record: NormalizedRecord; proven: ProvenChildren[] } | null> {
  const detail = stream.detail!;
  const path = fillPath(detail.path, { [stream.primaryKey]: item.item_id });
  try {
    const repaired: string[] = [];
    const organizationId = key.organizationId;
    const body = await ctx.client.get({ family: stream.family, organizationId, path, signal: ctx.signal, meter: tally.meter, repaired });
    const raw = singleRecord(body, detail.recordKeys, `GET ${stream.family}${path}`, qualifiedName(stream));
    const record = normalizeRecord(stream, raw, { organizationId, source: 'detail', syncedAt, runId: ctx.runId });
    tally.warnings.addAll(record.warnings);
    if (repaired.length) tally.warnings.addAll(recordRepairs(record.table, record.id, repaired, repairMessage(ctx.warehouse.dialect)));
    tally.drift.addAll(record.unknown);
    const embeds = ctx.shortcuts?.uses('embedded_children', key.stream) ?? true;
    return { record, proven: embeds ? provenEmbedded(stream, raw, embedInto) : [] };
  } catch (error) {
    if (!isGone(ctx, error)) throw error;
    return null;
  }
}

/**
 * Reads a child stream (refunds of a vendor credit, persons of a contact, tasks of a project)
 * for every parent queued for it. Each parent's children are a full refresh: rows the parent
 * no longer lists are marked deleted. Rows and the queue entry commit together. Many parents
 * queued: one walk of the list of all their children instead of a list each (A49).
 */
export async function completeChildren(
  ctx: SyncContext,
  organizationId: string,
  child: StreamSpec,
  parent: StreamSpec,
  tally: StreamTally = newTally(),
): Promise<void> {
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(child) };
  let all: Map<string, NormalizedRecord[]> | null = null;
  await drainQueue(
    ctx,
    key,
    'children',
    `parents' ${child.name} lists`,
    (item, drain) => completeChildList(ctx, { drain, child, parent, item, tally, all }),
    async (drain) => {
      all = await readAllChildren(ctx, key, child, parent, tally, drain.startedAt);
    },
  );
}

interface ChildItem {
  drain: Drain;
  child: StreamSpec;
  parent: StreamSpec;
  item: PendingRow;
  tally: StreamTally;
  /** Every queued parent's children from the list of all of them, when it was read. */
  all: Map<string, NormalizedRecord[]> | null;
}

/** One parent's child list: from the list of all children, or read from its own endpoint; then committed. */
async function completeChildList(ctx: SyncContext, c: ChildItem): Promise<void> {
  const parentId = c.item.item_id;
  if (c.all) {
    const syncedAt = ctx.stamp.next();
    const records = c.all.get(parentId) ?? [];
    for (const r of records) r.row['_synced_at'] = syncedAt;
    c.tally.records += records.length;
    await commitList(ctx, c, records, false, syncedAt);
    return;
  }
  // The parent's whole list is committed at once, so its pages are held together: the first
  // page's room is waited for, then the share holds what has arrived (past the cap only for a
  // list longer than a page, which is rare).
  await holding(ctx.records, ctx.config.sync.per_page, ctx.signal, async (permit) => {
    raiseIfStopped(ctx);
    const read = await readChildList(ctx, c.child, c.drain.key.organizationId, parentId, c.tally, permit, ctx.stamp.next());
    const syncedAt = ctx.stamp.next();
    for (const r of read.records) r.row['_synced_at'] = syncedAt;
    c.tally.pages += read.pages;
    c.tally.records += read.records.length;
    c.tally.reads += read.records.length;
    await commitList(ctx, c, read.records, read.gone, syncedAt);
  });
}

async function commitList(ctx: SyncContext, c: ChildItem, records: NormalizedRecord[], gone: boolean, syncedAt: string): Promise<void> {
  const { drain, child, parent, item, tally } = c;
  const reason = item.reason as PendingReason;
  const commit = { key: drain.key, child, parent, parentId: item.item_id, syncedAt, records, parentGone: gone, reason };
  const outcome = await commitChildren(ctx, commit);
  tally.written += outcome.changed;
  countDeleted(tally, outcome.deleted);
  if (!gone) await judgeChildChanges(ctx, drain.key, parent, item.item_id, reason, outcome, drain.startedAt);
}
