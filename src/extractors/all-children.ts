import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName, tableName } from '../catalog/types.js';
import { ident } from '../loaders/sql-dialect.js';
import { CompiledQuery } from 'kysely';
import { describeError } from '../core/errors.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import { countPending, queuedItems } from '../state/pending.js';
import type { StreamKey } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { pages, type RawRecord } from './pager.js';
import { normalizePage } from './page-records.js';
import { healShortcut } from './child-checks.js';
import { differenceOf, idsOf, readChildList } from './child-list.js';
import { sampleOf } from './shortcuts.js';
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
 * null when its own lists are to be read: the stream has no such list, the shortcut is off for
 * the organization (A49, src/extractors/shortcuts.ts), fewer parents are queued than the list
 * would take pages, the list cannot be read, it is longer than MAX_ALL_PAGES, an entry does not
 * name its parent, or a check of a few parents' own lists disagrees with it. A parent absent
 * from the map has no children.
 */
export async function readAllChildren(
  ctx: SyncContext,
  key: StreamKey,
  child: StreamSpec,
  parent: StreamSpec,
  tally: StreamTally,
  drainStartedAt: string,
): Promise<Map<string, NormalizedRecord[]> | null> {
  if (!child.allList || !child.parent || !(ctx.shortcuts?.uses('all_children_list', key.stream) ?? true)) return null;
  // Checks of A25 are a few lists at most: the list of all children is worth walking for the others.
  const queued = await countPending(ctx.warehouse.db, { ...key, kind: 'children', exceptReason: 'check' });
  const estimatedPages = Math.ceil((await liveRows(ctx, child, key.organizationId)) / ctx.config.sync.per_page) + 1;
  if (queued < Math.max(2, estimatedPages)) return null;
  const raw = await walkAllList(ctx, key, child, tally);
  if (raw === null) return null;
  const byParent = byParentOf(ctx, key, child, raw, tally);
  if (byParent === null) return null;
  return (await checkAllList(ctx, key, child, parent, byParent, tally, drainStartedAt)) ? byParent : null;
}

/** Every entry of the all-children list, or null (too long, or unreadable: said in the log). */
async function walkAllList(ctx: SyncContext, key: StreamKey, child: StreamSpec, tally: StreamTally): Promise<RawRecord[] | null> {
  const all = child.allList!;
  const log = ctx.logger.child({ organization_id: key.organizationId, stream: key.stream });
  const spec: StreamSpec = { ...child, path: all.path, recordsKey: all.recordsKey, paginated: true };
  const raw: RawRecord[] = [];
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
  return raw;
}

/** The entries normalized and grouped by the parent each names; null when one names none (A49's other reading). */
function byParentOf(
  ctx: SyncContext,
  key: StreamKey,
  child: StreamSpec,
  raw: readonly RawRecord[],
  tally: StreamTally,
): Map<string, NormalizedRecord[]> | null {
  const link = child.parent!;
  const parentOf = (r: RawRecord): string | null => {
    const v = r[link.key];
    return typeof v === 'string' || typeof v === 'number' ? String(v) : null;
  };
  if (!raw.every((r) => parentOf(r) !== null)) {
    ctx.logger.warn(
      { organization_id: key.organizationId, stream: key.stream },
      `${child.allList!.path} lists entries without ${link.key}; reading each parent's ${child.name} instead`,
    );
    return null;
  }
  tally.reads += raw.length;
  const startedAt = ctx.stamp.next();
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

/**
 * A49 checked: a few queued parents' own lists (every one on a new connection until a few agree,
 * then a rotating share) are read and compared, by id, with what the list of all children gives
 * them. A difference switches the list off for the organization: this drain reads each queued
 * parent's own list, and every other parent's list is queued with them, since earlier reads of
 * the list of all children may have missed entries too. False then.
 */
async function checkAllList(
  ctx: SyncContext,
  key: StreamKey,
  child: StreamSpec,
  parent: StreamSpec,
  byParent: ReadonlyMap<string, NormalizedRecord[]>,
  tally: StreamTally,
  drainStartedAt: string,
): Promise<boolean> {
  const book = ctx.shortcuts;
  if (!book) return true;
  const queued = await queuedItems(ctx.warehouse.db, { ...key, kind: 'children' });
  const claims = queued.filter(() => book.claimCheck('all_children_list', key.stream)).length;
  const day = Math.floor(ctx.clock.now() / 86_400_000);
  // Parents whose own total disagrees with what the list gives them are checked first: a list that
  // leaves entries out shows there, for free, where the server's totals are true.
  const suspects = await disagreeingTotals(ctx, key, child, parent, byParent, queued);
  const others = queued.filter((id) => !suspects.has(id));
  const sample = [...sampleOf([...suspects], claims, day), ...sampleOf(others, claims, day)].slice(0, claims);
  for (const parentId of sample) {
    const own = await readChildList(ctx, child, key.organizationId, parentId, tally, null, ctx.stamp.next());
    tally.pages += own.pages;
    const differs = own.gone ? null : differenceOf(idsOf(own.records), idsOf(byParent.get(parentId) ?? []), 'the list of all of them');
    if (differs === null) {
      await book.agreed('all_children_list', key.stream);
      continue;
    }
    const evidence = `${parent.name} ${parentId}: ${differs} (its own list has ${own.records.length})`;
    if (await book.disagreed('all_children_list', key.stream, evidence))
      await healShortcut(ctx, key.organizationId, 'all_children_list', key.stream, drainStartedAt);
    return false;
  }
  return true;
}

/** Amounts carry at most three decimals (spec 2.8's currencies): closer than this is equal. */
const SAME_AMOUNT = 0.0005;

/**
 * The queued parents whose stored total (`allList.parentTotal`, a credit's `total_refunded_amount`)
 * is not what the list of all children gives them. Empty where the catalog names no total.
 */
async function disagreeingTotals(
  ctx: SyncContext,
  key: StreamKey,
  child: StreamSpec,
  parent: StreamSpec,
  byParent: ReadonlyMap<string, NormalizedRecord[]>,
  queued: readonly string[],
): Promise<Set<string>> {
  const column = child.allList?.parentTotal;
  if (!column) return new Set();
  const p = ctx.warehouse.sql.param(1);
  const rows = await ctx.warehouse.db.executeQuery<{ id: unknown; total: unknown }>(
    CompiledQuery.raw(
      `SELECT ${ident(parent.primaryKey)} AS id, ${ident(column)} AS total FROM ${ident(tableName(parent))} ` +
        `WHERE "organization_id" = ${p} AND "_deleted_at" IS NULL`,
      [key.organizationId],
    ),
  );
  const totals = new Map(rows.rows.map((r) => [String(r.id), r.total === null ? null : Number(r.total)]));
  const out = new Set<string>();
  for (const id of queued) {
    const total = totals.get(id);
    if (total === undefined || total === null || !Number.isFinite(total)) continue;
    const sum = (byParent.get(id) ?? []).reduce((a, r) => a + (Number(r.row['amount']) || 0), 0);
    if (Math.abs(sum - total) >= SAME_AMOUNT) out.add(id);
  }
  return out;
}
