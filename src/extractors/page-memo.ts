import { hash as digest } from 'node:crypto';
import { childStreamsOf } from '../catalog/index.js';
import { isOrganizationList, tableName, type StreamSpec } from '../catalog/types.js';
import { svcsyncVersion } from '../core/version.js';
import type { ListIdentity } from '../normalize/normalize.js';
import { isoUtc } from '../normalize/values.js';
import { PageMemoStore, type MemoPage, type MemoPageKey } from '../state/page-memo-store.js';
import type { StreamKey } from '../state/stream-state.js';
import type { SyncContext } from './context.js';

/**
 * A page answered with the very bytes it answered when it was last read, whose rows nothing has
 * written since, holds nothing to write: its records are the rows as they stand. A read that goes
 * through every page of a list-only stream (a first sync, a full-refresh stream, a reconcile, a
 * backfill, an incremental read of a list that cannot be sorted) keeps, per page, the SHA-1 of the
 * answer and the ids it held (`_svcsync_pages`). The next such read of the same query hashes
 * each answer before parsing it; when the hash is the same
 * and every id still has its row, unmarked and not written since that page's commit, the page
 * is taken as read: it is neither parsed nor compared, and its ids count as listed. Any other
 * answer is parsed and compared record by record, as always.
 *
 * Why the rows check: a record can be written by another read after its page was kept (a later
 * page of the same read that listed it again after the list shifted, an incremental read, a
 * single read), or marked deleted. Its page's answer then says nothing about its row.
 *
 * Only list-only streams (no child streams, no single reads, not an organization list): an
 * unchanged parent still queues its children on the slow cycles, which needs its record.
 */
export interface PageMemo {
  /**
   * What page `n` answered when it was last read, or null. Asked before the page is requested;
   * answers null at once (no promise) when nothing can be recalled, so the request is not delayed.
   */
  recall(n: number): Promise<MemoPage | null> | null;
  /**
   * Whether the rows of a recalled page stand as that page left them. Asked once the pages
   * before it are committed (a row they wrote makes the answer no longer enough).
   */
  untouched(page: MemoPage): Promise<boolean>;
}

/** The SHA-1 `_svcsync_pages` keeps of an answer: of its bytes as received (hashing the decoded text would encode it again). */
export function answerHash(bytes: Uint8Array | string): string {
  return digest('sha1', bytes, 'hex');
}

/**
 * Whether a pass keeps and uses what its pages answered (see `PageMemo`): one that reads every
 * page (no floor, or a list that cannot be sorted newest first), of a list-only stream.
 */
export function memoizes(ctx: Pick<SyncContext, 'catalog'>, stream: StreamSpec, readsEveryPage: boolean, detail: boolean): boolean {
  return readsEveryPage && !detail && !isOrganizationList(stream) && childStreamsOf(stream, ctx.catalog).length === 0;
}

/**
 * The query a page is kept under: every parameter but the page number, in a fixed order, with
 * svcsync's version and the stream's definition. Another version or catalog may turn the same
 * record into another row (its redaction, say): its first read then compares every record again.
 */
export function memoQuery(stream: StreamSpec, query: Readonly<Record<string, string>>, perPage: number): string {
  const entries = Object.entries({ ...query, per_page: String(perPage) }).sort(([a], [b]) => (a < b ? -1 : Number(a > b)));
  return JSON.stringify({ version: svcsyncVersion(), stream: answerHash(JSON.stringify(stream)), query: entries });
}

/** Where a page of a query is kept. */
export function memoAt(key: StreamKey, query: string, page: number): MemoPageKey {
  return { connection: key.connection, organizationId: key.organizationId, stream: key.stream, query, page };
}

/** The memo of one pass over one stream of one organization. */
export function passMemo(
  ctx: Pick<SyncContext, 'warehouse' | 'writer'>,
  key: StreamKey,
  stream: StreamSpec,
  query: string,
  empty: boolean,
): PageMemo {
  const pages = new PageMemoStore(ctx.warehouse.sql);
  return {
    recall: (n) => (empty ? null : pages.recallPage(ctx.warehouse.db, memoAt(key, query, n))),
    untouched: (page) =>
      ctx.writer.rowsUntouchedSince(ctx.warehouse.db, tableName(stream), stream.primaryKey, key.organizationId, page.ids, page.syncedAt),
  };
}

/**
 * What to keep of a page parsed and compared: null when its ids repeat (a row then holds one of
 * the copies only, so the answer would not describe the rows).
 */
export function pageToKeep(
  key: StreamKey,
  query: string,
  page: { page: number; bodyHash?: string | undefined; hasMore: boolean },
  listed: readonly Pick<ListIdentity, 'id' | 'changedAt'>[],
  syncedAt: string,
): MemoPage | null {
  if (page.bodyHash === undefined) return null;
  const ids = listed.map((l) => l.id);
  if (new Set(ids).size !== ids.length) return null;
  let newest: number | null = null;
  for (const l of listed) if (l.changedAt !== null && (newest === null || l.changedAt > newest)) newest = l.changedAt;
  return {
    connection: key.connection,
    organizationId: key.organizationId,
    stream: key.stream,
    query,
    page: page.page,
    bodyHash: page.bodyHash,
    ids,
    hasMore: page.hasMore,
    maxChanged: newest === null ? null : isoUtc(newest),
    syncedAt,
  };
}
