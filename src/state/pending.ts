import type { CompiledQuery } from 'kysely';
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

export async function enqueuePending(
  db: AnyDb,
  key: StreamKey,
  kind: PendingKind,
  itemIds: readonly string[],
  reason: PendingReason,
  now: string,
): Promise<void> {
  for (const q of enqueuePendingQueries(db, key, kind, itemIds, reason, now)) await db.executeQuery(q);
}

/** The statements of `enqueuePending`, compiled for `db`'s dialect, to run in a batch. */
export function enqueuePendingQueries(
  db: AnyDb,
  key: StreamKey,
  kind: PendingKind,
  itemIds: readonly string[],
  reason: PendingReason,
  now: string,
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
 * The oldest queued items, enqueued no later than `enqueuedBy` (a pass's start, from the run's
 * `Stamp`): an item set aside during the pass goes behind it (`deferPending`) and is not taken
 * again until the next pass.
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
    .orderBy('enqueued_at')
    .orderBy('item_id')
    .limit(limit)
    .execute();
}

/** Moves an item to the back of its queue: the next pass takes the items behind it first. */
export async function deferPending(db: AnyDb, key: StreamKey, kind: PendingKind, itemId: string, now: string): Promise<void> {
  await stateDb(db)
    .updateTable('_svcsync_pending')
    .set({ enqueued_at: now })
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
