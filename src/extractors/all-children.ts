import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName, tableName } from '../catalog/types.js';
import { CompiledQuery } from 'kysely';
import { describeError } from '../core/errors.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import { countPending } from '../state/pending.js';
import type { StreamKey } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { pages, type RawRecord } from './pager.js';
import { normalizePage } from './stream-pass.js';
import type { StreamTally } from './stream-tally.js';

/**
 * At most this many pages of an all-children list are read and held: past it the list is
 * dropped and the parents' own lists are read (bounded memory, bounded waste).
 */
const MAX_ALL_PAGES = 100;

/** The organization's live rows of a stream: what its all-children list holds, about. */
async function liveRows(ctx: SyncContext, stream: StreamSpec, organizationId: string): Promise<number> {
  const p = ctx.warehouse.sql.param(1);
  const r = await ctx.warehouse.db.executeQuery<{ n: number | string }>(
    CompiledQuery.raw(`SELECT COUNT(*) AS n FROM "${tableName(stream)}" WHERE "organization_id" = ${p} AND "_deleted_at" IS NULL`, [
      organizationId,
    ]),
  );
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * Every queued parent's children from the child stream's all-children list (`allList`), or
 * null when its own lists are to be read: the stream has no such list, fewer parents are queued
 * than the list would take pages, the list cannot be read, it is longer than MAX_ALL_PAGES, or
 * an entry does not name its parent (A49). A parent absent from the map has no children.
 */
export async function readAllChildren(
  ctx: SyncContext,
  key: StreamKey,
  child: StreamSpec,
  tally: StreamTally,
): Promise<Map<string, NormalizedRecord[]> | null> {
  const all = child.allList;
  const link = child.parent;
  if (!all || !link) return null;
  const queued = await countPending(ctx.warehouse.db, {
    connection: key.connection,
    organizationId: key.organizationId,
    stream: key.stream,
    kind: 'children',
  });
  const estimatedPages = Math.ceil((await liveRows(ctx, child, key.organizationId)) / ctx.config.sync.per_page) + 1;
  if (queued < Math.max(2, estimatedPages)) return null;
  const log = ctx.logger.child({ organization_id: key.organizationId, stream: key.stream });
  const spec: StreamSpec = { ...child, path: all.path, recordsKey: all.recordsKey, paginated: true };
  const raw: RawRecord[] = [];
  const startedAt = ctx.stamp.next();
  let pagesRead = 0;
  try {
    for await (const page of pages({
      client: ctx.client,
      stream: spec,
      organizationId: key.organizationId,
      path: all.path,
      query: { ...(child.query ?? {}) },
      perPage: ctx.config.sync.per_page,
      startPage: 1,
      signal: ctx.signal,
      stop: ctx.stop,
      maxPages: MAX_ALL_PAGES + 1,
      meter: tally.meter,
      pagingRefused: ctx.pagingRefused,
    })) {
      pagesRead++;
      raw.push(...page.records);
      if (pagesRead > MAX_ALL_PAGES) {
        log.info(
          { pages: pagesRead },
          `${qualifiedName(child)}: the list of all of them is longer than ${MAX_ALL_PAGES} pages; reading each parent's`,
        );
        return null;
      }
    }
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    log.warn({ err: error }, `${all.path} could not be read (${describeError(error)}); reading each parent's ${child.name} instead`);
    return null;
  } finally {
    tally.pages += pagesRead;
  }
  const parentOf = (r: RawRecord): string | null => {
    const v = r[link.key];
    return typeof v === 'string' || typeof v === 'number' ? String(v) : null;
  };
  if (!raw.every((r) => parentOf(r) !== null)) {
    log.warn(`${all.path} lists entries without ${link.key}; reading each parent's ${child.name} instead`);
    return null;
  }
  tally.reads += raw.length;
  const byParent = new Map<string, NormalizedRecord[]>();
  for (const r of raw) {
    const parentId = parentOf(r)!;
    const rows = normalizePage(ctx, child, key.organizationId, [r], startedAt, { key: link.key, value: parentId }, tally);
    const list = byParent.get(parentId);
    if (list) list.push(...rows);
    else byParent.set(parentId, rows);
  }
  return byParent;
}
