import type { CompiledQuery } from 'kysely';
import type { StreamSpec } from '../catalog/types.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import { isoUtc, parseInstant } from '../normalize/values.js';
import type { AnyDb } from '../loaders/db.js';
import { stateDb, type PendingRow } from './tables.js';
import type { StreamKey } from './stream-state.js';

/**
 * Work owed for records already committed: a child stream to read for a parent, or a
 * single-record fetch to complete a list record. Enqueued in the same transaction as the
 * parent's page, removed in the same transaction as the work's rows, so a crash between
 * the two leaves the work queued rather than lost.
 */
export type PendingKind = 'children' | 'detail';
export type PendingReason = 'changed' | 'backfill' | 'reconcile';

/** Rows per statement, well under SQLite's and Postgres's bound-parameter limits. */
const CHUNK = 500;

/**
 * How recent each queued item's record is (its change time or date, ISO-8601 UTC, from
 * `recencyText`), by id; an id it lacks has none and is taken after those that have one.
 */
export type Recency = ReadonlyMap<string, string>;

const NONE: Recency = new Map();

/**
 * An instant (epoch ms) as the text `_svcsync_pending.recency` holds: ISO-8601 UTC, fixed
 * width, so text order is time order. Null when there is none or it falls outside years 0-9999.
 */
export function recencyText(ms: number | null): string | null {
  if (ms === null || !Number.isFinite(ms) || ms < EARLIEST || ms > LATEST) return null;
  return isoUtc(ms);
}
/**
 * The recency of each record that queues work: its change time (the stream's cursor field),
 * else its `date` when the stream has one. A stream with neither keeps the order of its pages.
 */
export function recencyOf(
  stream: Pick<StreamSpec, 'columns'>,
  records: ReadonlyArray<Pick<NormalizedRecord, 'id' | 'changedAt'> & { row: Readonly<Record<string, unknown>> }>,
): Recency {
  const dated = stream.columns.some((c) => c.name === 'date' && c.type === 'date');
  const out = new Map<string, string>();
  for (const n of records) {
    const date = dated ? n.row['date'] : null;
    const text = recencyText(n.changedAt ?? (typeof date === 'string' ? parseInstant(`${date}T00:00:00Z`) : null));
    if (text !== null) out.set(n.id, text);
  }
  return out;
}

/** 0000-01-01T00:00:00.000Z: Date.UTC reads years 0-99 as 1900-1999. */
const EARLIEST = -62_167_219_200_000;
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export async function enqueuePending(
  db: AnyDb,
  key: StreamKey,
  kind: PendingKind,
  itemIds: readonly string[],
  reason: PendingReason,
  now: string,
  recency: Recency = NONE,
): Promise<void> {
  for (const q of enqueuePendingQueries(db, key, kind, itemIds, reason, now, recency)) await db.executeQuery(q);
}

/** The statements of `enqueuePending`, compiled for `db`'s dialect, to run in a batch. */
export function enqueuePendingQueries(
  db: AnyDb,
  key: StreamKey,
  kind: PendingKind,
  itemIds: readonly string[],
  reason: PendingReason,
  now: string,
  recency: Recency = NONE,
): CompiledQuery[] {
  const out: CompiledQuery[] = [];
  const compiler = stateDb(db);
  for (let i = 0; i < itemIds.length; i += CHUNK) {
    const values = itemIds.slice(i, i + CHUNK).map((item_id) => ({
      connection: key.connection,
      organization_id: key.organizationId,
      stream: key.stream,
      kind,
      item_id,
      reason,
      enqueued_at: now,
      recency: recency.get(item_id) ?? null,
    }));
    out.push(
      compiler
        .insertInto('_svcsync_pending')
        .values(values)
        .onConflict((oc) => oc.columns(['connection', 'organization_id', 'stream', 'kind', 'item_id']).doNothing())
        .compile(),
    );
  }
  return out;
}

/**
 * The next queued items, newest record first (a quota-bound sync spends its requests on the
 * records most likely to be looked at); items with no recency (a stream with no change field
 * or date, an item set aside, an item queued before the column existed) follow in the order
 * they were queued. Only items enqueued no later than `enqueuedBy` (a pass's start, from the
 * run's `Stamp`) are taken: an item set aside during the pass is not taken again until the next.
 */
export async function takePending(db: AnyDb, key: StreamKey, kind: PendingKind, limit: number, enqueuedBy: string): Promise<PendingRow[]> {
  return stateDb(db)
    .selectFrom('_svcsync_pending')
    .selectAll()
    .where('connection', '=', key.connection)
    .where('organization_id', '=', key.organizationId)
    .where('stream', '=', key.stream)
    .where('kind', '=', kind)
    .where('enqueued_at', '<=', enqueuedBy)
    .orderBy('recency', (ob) => ob.desc().nullsLast())
    .orderBy('enqueued_at')
    .orderBy('item_id')
    .limit(limit)
    .execute();
}

/**
 * Moves an item to the back of its queue: the next pass takes the items behind it first. It
 * loses its recency, so dated items queued later go before it too.
 */
export async function deferPending(db: AnyDb, key: StreamKey, kind: PendingKind, itemId: string, now: string): Promise<void> {
  await stateDb(db)
    .updateTable('_svcsync_pending')
    .set({ enqueued_at: now, recency: null })
    .where('connection', '=', key.connection)
    .where('organization_id', '=', key.organizationId)
    .where('stream', '=', key.stream)
    .where('kind', '=', kind)
    .where('item_id', '=', itemId)
    .execute();
}

export async function completePending(db: AnyDb, key: StreamKey, kind: PendingKind, itemIds: readonly string[]): Promise<void> {
  for (let i = 0; i < itemIds.length; i += CHUNK) {
    await stateDb(db)
      .deleteFrom('_svcsync_pending')
      .where('connection', '=', key.connection)
      .where('organization_id', '=', key.organizationId)
      .where('stream', '=', key.stream)
      .where('kind', '=', kind)
      .where('item_id', 'in', itemIds.slice(i, i + CHUNK))
      .execute();
  }
}

export async function countPending(
  db: AnyDb,
  filter: { connection?: string; organizationId?: string; stream?: string; kind?: PendingKind } = {},
): Promise<number> {
  let q = stateDb(db)
    .selectFrom('_svcsync_pending')
    .select((eb) => eb.fn.countAll<number>().as('n'));
  if (filter.connection) q = q.where('connection', '=', filter.connection);
  if (filter.organizationId) q = q.where('organization_id', '=', filter.organizationId);
  if (filter.stream) q = q.where('stream', '=', filter.stream);
  if (filter.kind) q = q.where('kind', '=', filter.kind);
  const row = await q.executeTakeFirst();
  return Number(row?.n ?? 0);
}
