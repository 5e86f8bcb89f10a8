import type { CompiledQuery } from 'kysely';
import { childStreamsOf } from '../catalog/index.js';
import { qualifiedName, tableName, type StreamSpec } from '../catalog/types.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import { completePending, enqueuePending, enqueuePendingQueries, recencyOf, type PendingReason, type Recency } from './pending.js';
import { loadStreamState, passColumns, saveStreamStateQuery, type PassState, type StreamKey } from './stream-state.js';
import { stateDb } from './tables.js';
import { ListedIds, listedPass } from './listed-ids.js';
import { PageMemoStore, type MemoPage, type MemoPageKey } from './page-memo-store.js';
import { newUnitId } from '../loaders/applied-units.js';
import type { AnyTransaction } from '../loaders/db.js';
import type { Fence } from '../loaders/lease/fence.js';
import { addDeleted, mergeDeleted, type DeletedRows } from '../loaders/deleted-rows.js';
import { historyQueries } from '../loaders/history-sink.js';
import { dependantsDeleted, markDeletedWithChildren, markVanishedWithChildren, type RowDeleter } from '../loaders/row-deletions.js';
import type { Warehouse } from '../loaders/warehouse.js';

/** What the unit of work writes through: the warehouse and the writer chosen for its dialect. */
export interface Loader extends RowDeleter {
  warehouse: Warehouse;
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
  lastMemoPage?: MemoPageKey | undefined;
  /** Ids with no stored row (no older child rows to mark as gone). */
  fresh: ReadonlySet<string>;
  /** Parents whose child streams are queued, and why. */
  parents: readonly string[];
  reason: PendingReason;
  /**
   * Unchanged parents whose child streams are queued as checks (reason `check`), and their single
   * records too when `checkDetails` (a record that carries its child lists).
   */
  checked?: readonly string[];
  checkDetails?: boolean;
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
  end?: PassEnd;
}

/** What the last page of a pass commits besides its rows. */
export interface PassEnd {
  cursor: string | null;
  /** The pass's start, before which rows neither written nor listed are gone (full reads); null otherwise. */
  vanishedBefore: string | null;
  childrenRereadAt?: string | null;
  /** This last page is also the pass's first: the pass never saved a position. */
  firstPage: boolean;
}

/**
 * A page's rows, the work they queue and the pass's position commit in one transaction, so a
 * page that arrives twice only rewrites the same rows, and a page that fails moves nothing.
 * The transaction is one unit (src/loaders/applied-units.ts): retried after a lost COMMIT reply,
 * it changes nothing the second time. Returns the rows it marked deleted, by table: children a
 * changed record no longer carries, and on the last page of a full read the rows no longer listed.
 */
export async function commitPage(loader: Loader, page: PageCommit): Promise<{ deleted: DeletedRows }> {
  const { warehouse, writer } = loader;
  const end = page.end;
  const bookkeeping = passQueries(loader, page);
  const closing = end ? (trx: AnyTransaction) => endPass(loader, trx, page, end) : undefined;
  // The page's rows first, then the versions history keeps of them, then the pass's bookkeeping.
  const queries = writer.recordQueries(page.rows, page.syncedAt, (n) => page.fresh.has(n.id));
  queries.push(...historyQueries(loader, page.stream, page.key.organizationId, page.rows, page.syncedAt), ...bookkeeping);
  const outcome = await warehouse.batch(queries, closing, loader.fence, newUnitId());
  const deleted: DeletedRows = {};
  outcome.affected.forEach((n, i) => {
    const table = queries[i] && writer.deletesIn(queries[i]);
    if (table) addDeleted(deleted, table, n);
  });
  return { deleted: mergeDeleted(deleted, outcome.result ?? {}) };
}

/** A page's statements of the pass's own: listed ids, kept pages, queued work, and its position unless it is the last. */
function passQueries(loader: Loader, page: PageCommit): CompiledQuery[] {
  const { warehouse } = loader;
  const db = warehouse.db;
  const queries: CompiledQuery[] = [];
  if (page.listed?.ids.length) {
    const listed = new ListedIds(warehouse.sql);
    queries.push(listed.listedQuery(listedPass(page.key, page.listed.passStartedAt), page.listed.page, page.listed.ids));
  }
  const pages = new PageMemoStore(warehouse.sql);
  if (page.memos?.length) queries.push(pages.pageMemoQuery(page.memos));
  if (page.lastMemoPage) queries.push(pages.forgetPagesAfterQuery(page.lastMemoPage));
  const childStreams = childStreamsOf(page.stream);
  const queues = (childStreams.length && (page.parents.length || page.checked?.length)) || page.details.length;
  const recency = queues ? page.recency?.() : undefined;
  const checked = page.checked ?? [];
  for (const child of childStreams) {
    const key = { ...page.key, stream: qualifiedName(child) };
    queries.push(...enqueuePendingQueries(db, key, 'children', page.parents, page.reason, page.syncedAt, recency));
    if (checked.length) queries.push(...enqueuePendingQueries(db, key, 'children', checked, 'check', page.syncedAt, recency));
  }
  if (page.details.length) {
    queries.push(...enqueuePendingQueries(db, page.key, 'detail', page.details, 'changed', page.syncedAt, recency));
  }
  if (page.checkDetails && checked.length) {
    queries.push(...enqueuePendingQueries(db, page.key, 'detail', checked, 'check', page.syncedAt, recency));
  }
  if (!page.end && page.position) queries.push(saveStreamStateQuery(db, page.key, passColumns(page.position), page.syncedAt));
  return queries;
}

/**
 * The last page's work after its rows: a full read marks the rows it neither wrote nor listed
 * deleted and forgets what it listed, and the cursor moves. The marking is done only while the
 * pass is still open: the state row still names it, or it never saved a position (its one page
 * is this one, whose listed ids are in this transaction). A pass already closed has forgotten
 * its listed ids, and marking then would take every unchanged row for gone.
 */
async function endPass(loader: Loader, trx: AnyTransaction, page: PageCommit, end: PassEnd): Promise<DeletedRows> {
  const { key, stream, syncedAt } = page;
  const before = end.vanishedBefore;
  const marks = before !== null && (await passIsOpen(trx, key, before, end.firstPage));
  // A full read's vanishing instant is its start, which also keys the ids its pages listed.
  const pass = marks ? listedPass(key, before) : undefined;
  const reread = end.childrenRereadAt ? { children_reread_at: end.childrenRereadAt } : {};
  const closing = [
    ...(pass ? [new ListedIds(loader.warehouse.sql).forgetListedQuery(pass)] : []),
    saveStreamStateQuery(trx, key, { cursor: end.cursor, ...passColumns(null), ...reread }, syncedAt),
  ];
  const deleted = pass ? await markVanishedWithChildren(loader, trx, stream, key.organizationId, pass.startedAt, syncedAt, pass) : {};
  // Only once the vanished rows are marked: the marking spares the ids still listed.
  for (const q of closing) await trx.executeQuery(q);
  return deleted;
}

/** Whether the pass that started at `startedAt` is still the stream's open pass (see `endPass`). */
async function passIsOpen(trx: AnyTransaction, key: StreamKey, startedAt: string, firstPage: boolean): Promise<boolean> {
  const open = (await loadStreamState(trx, key)).pass?.startedAt ?? null;
  return open === startedAt || (open === null && firstPage);
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

/** Returns the rows marked deleted: the record's lines it no longer carries, or the record and everything under it when gone. */
export async function commitDetail(loader: Loader, item: DetailCommit): Promise<{ deleted: DeletedRows }> {
  const { key, stream, syncedAt } = item;
  const deleted = await loader.warehouse.transaction(
    async (trx) => {
      let marked: DeletedRows = {};
      if (item.record) {
        marked = await loader.writer.writeRecords(trx, [item.record], syncedAt);
        for (const q of historyQueries(loader, stream, key.organizationId, [item.record], syncedAt)) await trx.executeQuery(q);
      } else {
        marked = await markDeletedWithChildren(loader, trx, stream, key.organizationId, item.id, syncedAt);
      }
      await completePending(trx, key, 'detail', [item.id]);
      return marked;
    },
    loader.fence,
    newUnitId(),
  );
  return { deleted };
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
 * Returns how many children were new or changed (every child is rewritten, most unchanged),
 * how many the parent no longer lists (`removed`), and the rows marked deleted by table.
 */
export async function commitChildren(loader: Loader, item: ChildrenCommit): Promise<ChildrenOutcome> {
  return loader.warehouse.transaction((trx) => writeChildren(loader, trx, item), loader.fence, newUnitId());
}

/** What `commitChildren` did. */
export interface ChildrenOutcome {
  changed: number;
  /** Children the parent listed before and no longer lists. */
  removed: number;
  deleted: DeletedRows;
}

async function writeChildren(loader: Loader, trx: AnyTransaction, item: ChildrenCommit): Promise<ChildrenOutcome> {
  const { key, child, parent, parentId, syncedAt } = item;
  const organizationId = key.organizationId;
  const changed = await countChanged(loader, trx, child, organizationId, item.records);
  const deleted = await loader.writer.writeRecords(trx, item.records, syncedAt);
  for (const q of historyQueries(loader, child, organizationId, item.records, syncedAt)) await trx.executeQuery(q);
  // Everything this parent still has was just written; older rows of it are gone.
  const removed = await loader.writer.markVanished(trx, tableName(child), organizationId, syncedAt, syncedAt, {
    column: child.parent!.key,
    value: parentId,
  });
  addDeleted(deleted, tableName(child), removed);
  if (item.parentGone) {
    mergeDeleted(deleted, await markDeletedWithChildren(loader, trx, parent, organizationId, parentId, syncedAt));
  } else if (removed > 0) {
    mergeDeleted(deleted, await dependantsDeleted(loader, trx, child, organizationId, syncedAt));
  }
  for (const g of childStreamsOf(child)) {
    const ids = item.records.map((r) => r.id);
    await enqueuePending(trx, { ...key, stream: qualifiedName(g) }, 'children', ids, item.reason, syncedAt, recencyOf(child, item.records));
  }
  await completePending(trx, key, 'children', [parentId]);
  return { changed, removed, deleted };
}

/** How many of a parent's children are new or changed against the stored rows (a child listed twice counts once). */
async function countChanged(
  loader: Loader,
  trx: AnyTransaction,
  child: StreamSpec,
  organizationId: string,
  records: readonly NormalizedRecord[],
): Promise<number> {
  // A child listed twice is written twice, the later copy last.
  const latest = new Map(records.map((r) => [r.id, r]));
  if (latest.size === 0) return 0;
  const stored = await loader.writer.storedHashes(trx, tableName(child), child.primaryKey, organizationId, [...latest.keys()]);
  let changed = 0;
  for (const [id, r] of latest) {
    const s = stored.get(id);
    if (!s || s.deleted || s.hash !== r.hash) changed++;
  }
  return changed;
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
