import { CompiledQuery } from 'kysely';
import { ident, type SqlDialect } from '../loaders/sql-dialect.js';
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
/**
 * Why an item is queued: its record changed, a backfill or a reconcile re-reads it, or (`check`)
 * its record did not change and its children are read to check that unchanged records have
 * unchanged children (src/extractors/shortcuts.ts, A25).
 */
export type PendingReason = 'changed' | 'backfill' | 'reconcile' | 'check';

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
        // An item queued as a check whose record has changed since is no longer a check.
        .onConflict((oc) =>
          oc
            .columns(['connection', 'organization_id', 'stream', 'kind', 'item_id'])
            .doUpdateSet({ reason })
            .where('_svcsync_pending.reason', '=', 'check'),
        )
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
  filter: {
    connection?: string;
    organizationId?: string;
    stream?: string;
    kind?: PendingKind;
    exceptReason?: PendingReason;
    enqueuedBefore?: string;
  } = {},
): Promise<number> {
  let q = stateDb(db)
    .selectFrom('_svcsync_pending')
    .select((eb) => eb.fn.countAll<number>().as('n'));
  if (filter.connection) q = q.where('connection', '=', filter.connection);
  if (filter.organizationId) q = q.where('organization_id', '=', filter.organizationId);
  if (filter.stream) q = q.where('stream', '=', filter.stream);
  if (filter.kind) q = q.where('kind', '=', filter.kind);
  if (filter.exceptReason) q = q.where('reason', '<>', filter.exceptReason);
  if (filter.enqueuedBefore) q = q.where('enqueued_at', '<', filter.enqueuedBefore);
  const row = await q.executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Queues `kind` work (a child list, or a single-record read) for every live record of
 * `parentTable` of the organization: what a shortcut that turned out wrong may have skipped
 * (src/extractors/shortcuts.ts). Items already queued keep their place. Returns the rows added.
 */
export async function enqueueEveryParent(
  db: AnyDb,
  sql: SqlDialect,
  key: StreamKey,
  kind: PendingKind,
  parent: { table: string; key: string },
  reason: PendingReason,
  now: string,
): Promise<number> {
  const p = sql.param;
  const text =
    `INSERT INTO "_svcsync_pending" ("connection", "organization_id", "stream", "kind", "item_id", "reason", "enqueued_at", "recency") ` +
    `SELECT ${p(1)}, "organization_id", ${p(2)}, ${p(3)}, ${ident(parent.key)}, ${p(4)}, ${p(5)}, NULL FROM ${ident(parent.table)} ` +
    `WHERE "organization_id" = ${p(6)} AND "_deleted_at" IS NULL ` +
    `ON CONFLICT ("connection", "organization_id", "stream", "kind", "item_id") DO NOTHING`;
  const result = await db.executeQuery(CompiledQuery.raw(text, [key.connection, key.stream, kind, reason, now, key.organizationId]));
  return Number(result.numAffectedRows ?? 0n);
}

/** The ids of the organization's live records of `parent.table` not queued for `kind` work of `key.stream`. */
export async function unqueuedParents(
  db: AnyDb,
  sql: SqlDialect,
  key: StreamKey,
  kind: PendingKind,
  parent: { table: string; key: string },
): Promise<string[]> {
  const p = sql.param;
  const id = ident(parent.key);
  const text =
    `SELECT t.${id} AS id FROM ${ident(parent.table)} AS t WHERE t."organization_id" = ${p(1)} AND t."_deleted_at" IS NULL ` +
    `AND NOT EXISTS (SELECT 1 FROM "_svcsync_pending" AS q WHERE q."connection" = ${p(2)} AND q."organization_id" = ${p(3)} ` +
    `AND q."stream" = ${p(4)} AND q."kind" = ${p(5)} AND q."item_id" = t.${id})`;
  const result = await db.executeQuery<{ id: unknown }>(
    CompiledQuery.raw(text, [key.organizationId, key.connection, key.organizationId, key.stream, kind]),
  );
  return result.rows.map((r) => String(r.id));
}

/** The ids queued for `kind` work of a stream of one organization, in no particular order. */
export async function queuedItems(db: AnyDb, key: StreamKey & { kind: PendingKind }): Promise<string[]> {
  const rows = await stateDb(db)
    .selectFrom('_svcsync_pending')
    .select('item_id')
    .where('connection', '=', key.connection)
    .where('organization_id', '=', key.organizationId)
    .where('stream', '=', key.stream)
    .where('kind', '=', key.kind)
    .execute();
  return rows.map((r) => r.item_id);
}
