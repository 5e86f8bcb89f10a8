import { CompiledQuery } from 'kysely';
import type { AnyDb } from '../loaders/db.js';
import type { SqlDialect } from '../loaders/sql-dialect.js';

/** One page of a whole read as `_svcsync_pages` keeps it (src/extractors/page-memo.ts). */
export interface MemoPage {
  connection: string;
  organizationId: string;
  /** Qualified stream name, `family.name`. */
  stream: string;
  /** The request's query without its page number. */
  query: string;
  page: number;
  /** SHA-1 (hex) of the answer's bytes. */
  bodyHash: string;
  /** The page's record ids, each once. */
  ids: readonly string[];
  hasMore: boolean;
  maxChanged: string | null;
  /** The `_synced_at` of the commit that read the page. */
  syncedAt: string;
}

/** Where a page of a query is kept: the key of `_svcsync_pages`. */
export type MemoPageKey = Pick<MemoPage, 'connection' | 'organizationId' | 'stream' | 'query' | 'page'>;

/**
 * What the pages of whole reads answered (`_svcsync_pages`), kept so that the next read of the
 * same page can take an identical answer as read (src/extractors/page-memo.ts). Whether the rows
 * still stand as that page left them is the rows' question (`TableWriter.rowsUntouchedSince`).
 */
export class PageMemoStore {
  /** `sql` is the warehouse's dialect object (`warehouse.sql`). */
  constructor(readonly sql: SqlDialect) {}

  /**
   * Keeps what pages of a read answered, in one statement: the hash of each answer, its ids,
   * whether the walk went on, its newest change time, and the page's `_synced_at`.
   * The pages are of one pass, so no key repeats.
   */
  pageMemoQuery(pages: readonly MemoPage[]): CompiledQuery {
    const sql = this.sql;
    const tuples = pages.map((_, i) => `(${sql.params(10, i * 10 + 1).join(', ')})`);
    const params = pages.flatMap((p) => [
      p.connection,
      p.organizationId,
      p.stream,
      p.query,
      p.page,
      p.bodyHash,
      JSON.stringify(p.ids),
      p.hasMore ? 1 : 0,
      p.maxChanged,
      p.syncedAt,
    ]);
    return CompiledQuery.raw(
      `INSERT INTO "_svcsync_pages" ("connection", "organization_id", "stream", "query", "page", "body_hash", "ids", ` +
        `"has_more", "max_changed", "synced_at") VALUES ${tuples.join(', ')} ` +
        `ON CONFLICT ("connection", "organization_id", "stream", "query", "page") DO UPDATE SET ` +
        `"body_hash" = excluded."body_hash", "ids" = excluded."ids", "has_more" = excluded."has_more", ` +
        `"max_changed" = excluded."max_changed", "synced_at" = excluded."synced_at"`,
      params,
    );
  }

  /**
   * Forgets, at the end of a read, the stream's kept pages after its last page (the list got
   * shorter) and those kept under another query (an earlier svcsync version or page size).
   */
  forgetPagesAfterQuery(at: MemoPageKey): CompiledQuery {
    const ph = this.sql.param;
    return CompiledQuery.raw(
      `DELETE FROM "_svcsync_pages" WHERE "connection" = ${ph(1)} AND "organization_id" = ${ph(2)} AND "stream" = ${ph(3)} ` +
        `AND ("query" <> ${ph(4)} OR "page" > ${ph(5)})`,
      [at.connection, at.organizationId, at.stream, at.query, at.page],
    );
  }

  /** What `pageMemoQuery` kept of a page, or null. */
  async recallPage(db: AnyDb, at: MemoPageKey): Promise<MemoPage | null> {
    const ph = this.sql.param;
    const result = await db.executeQuery<{
      body_hash: string;
      ids: string;
      has_more: number | string;
      max_changed: string | null;
      synced_at: unknown;
    }>(
      CompiledQuery.raw(
        `SELECT "body_hash", "ids", "has_more", "max_changed", "synced_at" FROM "_svcsync_pages" ` +
          `WHERE "connection" = ${ph(1)} AND "organization_id" = ${ph(2)} AND "stream" = ${ph(3)} ` +
          `AND "query" = ${ph(4)} AND "page" = ${ph(5)}`,
        [at.connection, at.organizationId, at.stream, at.query, at.page],
      ),
    );
    const r = result.rows[0];
    if (!r) return null;
    const ids: unknown = JSON.parse(r.ids);
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) return null;
    return {
      ...at,
      bodyHash: r.body_hash,
      ids,
      hasMore: Number(r.has_more) === 1,
      maxChanged: r.max_changed,
      syncedAt: String(r.synced_at),
    };
  }
}
