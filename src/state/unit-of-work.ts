import { childStreamsOf } from '../catalog/index.js';
import { qualifiedName, tableName, type StreamSpec } from '../catalog/types.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import { historyQueries, recordDeletions, type HistoryLoader } from './history.js';
import { completePending, enqueuePending, enqueuePendingQueries, recencyOf, type PendingReason, type Recency } from './pending.js';
import { passColumns, saveStreamState, saveStreamStateQuery, type PassState, type StreamKey } from './stream-state.js';
import { stateDb } from './tables.js';
import type { AnyDb } from '../loaders/db.js';
import type { Fence } from '../loaders/lease/fence.js';
import type { ListedPass, MemoPage, TableWriter } from '../loaders/table-writer.js';
import type { Warehouse } from '../loaders/warehouse.js';

/** What the unit of work writes through: the warehouse and the writer chosen for its dialect. */
export interface Loader extends HistoryLoader {
  warehouse: Warehouse;
  writer: TableWriter;
  /**
   * The organization's lease check (src/loaders/lease/), run first in every transaction
   * of synced data here; absent where no lease applies (verify, tests).
   */
  fence?: Fence;
}

/** One list page as the pass decided it (src/extractors/page-plan.ts). */
export interface PageCommit {
  key: StreamKey;
  stream: StreamSpec;
  syncedAt: string;
  rows: readonly NormalizedRecord[];
  /**
   * Ids of unchanged rows a full read listed, with the pass's start and the page's number: kept
   * (not written) until the pass ends, when they tell the rows still listed from those gone.
   */
  listed?: { passStartedAt: string; page: number; ids: readonly string[] };
  /**
   * What this and earlier pages of the pass answered, kept for the next read (src/extractors/page-memo.ts):
   * gathered over a few pages, so a Postgres page does not spend a round trip of its own on them.
   */
  memos?: readonly MemoPage[] | undefined;
  /** The last page of a read that keeps its pages: those kept past it, or under another query, are forgotten. */
  lastMemoPage?: Pick<MemoPage, 'connection' | 'organizationId' | 'stream' | 'query' | 'page'> | undefined;
  /** Ids with no stored row (no older child rows to mark as gone). */
  fresh: ReadonlySet<string>;
  /** Parents whose child streams are queued, and why. */
  parents: readonly string[];
  reason: PendingReason;
  /** Ids queued for their single-record read. */
  details: readonly string[];
  /**
   * How recent the queued ids' records are (`recencyOf`): the newest are taken first. Asked only
   * when the page queues work, which most pages of most streams do not.
   */
  recency?: () => Recency;
  /** More pages follow: where the pass stands now. */
  position?: PassState;
  /** The last page: the cursor to keep, and since when rows not rewritten count as gone (full reads). */
  end?: { cursor: string | null; vanishedBefore: string | null; childrenRereadAt?: string | null };
}

/**
 * A page's rows, the work they queue and the pass's position commit in one transaction, so a
 * page that arrives twice only rewrites the same rows, and a page that fails moves nothing.
 * Returns the rows marked deleted (the last page of a full read).
 */
export async function commitPage(loader: Loader, page: PageCommit): Promise<{ deleted: number }> {
  const { warehouse, writer } = loader;
  const db = warehouse.db;
  const queries = writer.recordQueries(page.rows, page.syncedAt, (n) => page.fresh.has(n.id));
  if (page.listed?.ids.length) {
    queries.push(writer.listedQuery(listedPass(page.key, page.listed.passStartedAt), page.listed.page, page.listed.ids));
  }
  if (page.memos?.length) queries.push(writer.pageMemoQuery(page.memos));
  if (page.lastMemoPage) queries.push(writer.forgetPagesAfterQuery(page.lastMemoPage));
  queries.push(...historyQueries(loader, page.stream, page.key.organizationId, page.rows, page.syncedAt));
  const childStreams = childStreamsOf(page.stream);
  const recency = (childStreams.length && page.parents.length) || page.details.length ? page.recency?.() : undefined;
  for (const child of childStreams) {
    queries.push(
      ...enqueuePendingQueries(
        db,
        { ...page.key, stream: qualifiedName(child) },
        'children',
        page.parents,
        page.reason,
        page.syncedAt,
        recency,
      ),
    );
  }
  if (page.details.length) {
    queries.push(...enqueuePendingQueries(db, page.key, 'detail', page.details, 'changed', page.syncedAt, recency));
  }
  const end = page.end;
  if (!end) {
    if (page.position) queries.push(saveStreamStateQuery(db, page.key, passColumns(page.position), page.syncedAt));
    await warehouse.batch(queries, undefined, loader.fence);
    return { deleted: 0 };
  }
  let deleted = 0;
  await warehouse.batch(
    queries,
    async (trx) => {
      if (end.vanishedBefore !== null) {
        // A full read's vanishing instant is its start, which also keys the ids its pages listed.
        const pass = listedPass(page.key, end.vanishedBefore);
        deleted = await markVanishedWithChildren(
          loader,
          trx,
          page.stream,
          page.key.organizationId,
          end.vanishedBefore,
          page.syncedAt,
          pass,
        );
        await writer.forgetListed(trx, pass);
      }
      const reread = end.childrenRereadAt ? { children_reread_at: end.childrenRereadAt } : {};
      await saveStreamState(trx, page.key, { cursor: end.cursor, ...passColumns(null), ...reread }, page.syncedAt);
    },
    loader.fence,
  );
  return { deleted };
}

/** The pass of a full read that started at `startedAt`, as `_svcsync_listed` keys it. */
function listedPass(key: StreamKey, startedAt: string): ListedPass {
  return { connection: key.connection, organizationId: key.organizationId, stream: key.stream, startedAt };
}

/** One fetched detail record (or the news that it is gone), and its removal from the queue. */
export interface DetailCommit {
  key: StreamKey;
  stream: StreamSpec;
  id: string;
  syncedAt: string;
  /** Null when the API says the record no longer exists. */
  record: NormalizedRecord | null;
}

export async function commitDetail(loader: Loader, item: DetailCommit): Promise<void> {
  const { key, stream, syncedAt } = item;
  await loader.warehouse.transaction(async (trx) => {
    if (item.record) {
      await loader.writer.writeRecords(trx, [item.record], syncedAt);
      for (const q of historyQueries(loader, stream, key.organizationId, [item.record], syncedAt)) await trx.executeQuery(q);
    } else {
      await loader.writer.markDeleted(trx, tableName(stream), stream.primaryKey, key.organizationId, item.id, syncedAt);
      await cascade(loader, trx, stream, key.organizationId, syncedAt);
      await recordDeletions(loader, trx, stream, key.organizationId, syncedAt);
    }
    await completePending(trx, key, 'detail', [item.id]);
  }, loader.fence);
}

/** One parent's whole child list (or the news that the parent is gone), and its removal from the queue. */
export interface ChildrenCommit {
  key: StreamKey;
  child: StreamSpec;
  parent: StreamSpec;
  parentId: string;
  syncedAt: string;
  records: readonly NormalizedRecord[];
  parentGone: boolean;
  /** Why grandchildren are queued. */
  reason: PendingReason;
}

/**
 * A parent's children are a full refresh: what the parent no longer lists is marked deleted,
 * and its own dependants with it. Grandchild streams are queued for the children written.
 * Returns how many children were new or changed (every child is rewritten, most unchanged).
 */
export async function commitChildren(loader: Loader, item: ChildrenCommit): Promise<{ changed: number }> {
  const { key, child, parent, parentId, syncedAt } = item;
  const organizationId = key.organizationId;
  let changed = 0;
  await loader.warehouse.transaction(async (trx) => {
    // A child listed twice is written twice, the later copy last.
    const latest = new Map(item.records.map((r) => [r.id, r]));
    if (latest.size > 0) {
      const stored = await loader.writer.storedHashes(trx, tableName(child), child.primaryKey, organizationId, [...latest.keys()]);
      for (const [id, r] of latest) {
        const s = stored.get(id);
        if (!s || s.deleted || s.hash !== r.hash) changed++;
      }
    }
    await loader.writer.writeRecords(trx, item.records, syncedAt);
    for (const q of historyQueries(loader, child, organizationId, item.records, syncedAt)) await trx.executeQuery(q);
    // Everything this parent still has was just written; older rows of it are gone.
    const removed = await loader.writer.markVanished(trx, tableName(child), organizationId, syncedAt, syncedAt, {
      column: child.parent!.key,
      value: parentId,
    });
    if (item.parentGone) {
      await loader.writer.markDeleted(trx, tableName(parent), parent.primaryKey, organizationId, parentId, syncedAt);
      await cascade(loader, trx, parent, organizationId, syncedAt);
      await recordDeletions(loader, trx, parent, organizationId, syncedAt);
    } else if (removed > 0) {
      await cascade(loader, trx, child, organizationId, syncedAt);
      await recordDeletions(loader, trx, child, organizationId, syncedAt);
    }
    for (const g of childStreamsOf(child)) {
      await enqueuePending(
        trx,
        { ...key, stream: qualifiedName(g) },
        'children',
        item.records.map((r) => r.id),
        item.reason,
        syncedAt,
        recencyOf(child, item.records),
      );
    }
    await completePending(trx, key, 'children', [parentId]);
  }, loader.fence);
  return { changed };
}

/** One family's organization list: the `{family}_organizations` rows and the daemon's registry of them. */
export interface OrganizationsCommit {
  connection: string;
  family: string;
  syncedAt: string;
  records: readonly NormalizedRecord[];
  raw: ReadonlyArray<Record<string, unknown>>;
}

export async function commitOrganizations(loader: Loader, list: OrganizationsCommit): Promise<void> {
  const { connection, family, syncedAt } = list;
  await loader.warehouse.transaction(async (trx) => {
    // One at a time: two families may list the same organization in one response's shape.
    for (const n of list.records) await loader.writer.writeRecords(trx, [n], syncedAt);
    for (const raw of list.raw) {
      const name = typeof raw['name'] === 'string' ? raw['name'] : null;
      const active = raw['is_org_active'] === false ? 0 : 1;
      await stateDb(trx)
        .insertInto('_svcsync_organizations')
        .values({
          connection,
          family,
          organization_id: String(raw['organization_id']),
          name,
          is_active: active,
          time_zone: typeof raw['time_zone'] === 'string' ? raw['time_zone'] : null,
          discovered_at: syncedAt,
        })
        .onConflict((oc) =>
          oc.columns(['connection', 'family', 'organization_id']).doUpdateSet({ name, is_active: active, discovered_at: syncedAt }),
        )
        .execute();
    }
  });
}

/**
 * After a full read: rows of this organization not written since the pass began are gone.
 * Their child-table rows and the rows of child streams under them go with them.
 */
export async function markVanishedWithChildren(
  loader: Loader,
  db: AnyDb,
  stream: StreamSpec,
  organizationId: string,
  passStartedAt: string,
  now: string,
  listed?: ListedPass,
): Promise<number> {
  const spare = listed ? { pass: listed, idColumn: stream.primaryKey } : undefined;
  const deleted = await loader.writer.markVanished(db, tableName(stream), organizationId, passStartedAt, now, undefined, spare);
  if (deleted > 0) {
    await cascade(loader, db, stream, organizationId, now);
    await recordDeletions(loader, db, stream, organizationId, now);
  }
  return deleted;
}

/** Marks the dependants of rows of `stream` that were marked deleted at `deletedAt`. */
export async function cascade(loader: Loader, db: AnyDb, stream: StreamSpec, organizationId: string, deletedAt: string): Promise<void> {
  const table = tableName(stream);
  for (const childTable of childTableNames(table, stream.children)) {
    await loader.writer.cascadeDeleted(db, childTable, table, stream.primaryKey, stream.primaryKey, organizationId, deletedAt);
  }
  for (const child of childStreamsOf(stream)) {
    const n = await loader.writer.cascadeDeleted(
      db,
      tableName(child),
      table,
      child.parent!.key,
      stream.primaryKey,
      organizationId,
      deletedAt,
    );
    if (n > 0) await cascade(loader, db, child, organizationId, deletedAt);
  }
}

function childTableNames(table: string, children: StreamSpec['children']): string[] {
  const out: string[] = [];
  for (const c of children) {
    const name = `${table}__${c.field}`;
    out.push(name, ...childTableNames(name, c.children ?? []));
  }
  return out;
}
