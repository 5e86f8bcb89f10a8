import type { StreamSpec } from '../catalog/types.js';
import { isOrganizationList, qualifiedName, tableName } from '../catalog/types.js';
import { childStreamsOf } from '../catalog/index.js';
import { normalizeRecord, type NormalizedRecord } from '../normalize/normalize.js';
import { parseInstant } from '../normalize/values.js';
import { enqueuePendingQueries, type PendingReason } from '../state/pending.js';
import { loadStreamState, passColumns, saveStreamState, saveStreamStateQuery, type PassKind, type PassState, type StreamKey } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { pages, type RawRecord } from './pager.js';
import { SeenFilter } from './seen-filter.js';
import { newTally, type StreamTally, type WarningTally } from './stream-tally.js';

/** What the caller asked for; the pass kind follows from it and the stream. */
export type SyncMode = 'incremental' | 'backfill' | 'reconcile';

export interface PassOptions {
  mode: SyncMode;
  /** backfill --since: records changed before this are not re-read (sorted streams stop there). */
  since?: string | undefined;
}

export interface PassResult {
  kind: PassKind;
  pages: number;
  /** Records received. */
  records: number;
  /** Rows written (new or changed, or every row on full reads). */
  written: number;
  /** Rows marked deleted at the end of a full read. */
  deleted: number;
  requests: number;
  resumed: boolean;
  unsorted: boolean;
}

const MAX_PAGES = 100_000;

function passKindFor(stream: StreamSpec, mode: SyncMode): PassKind {
  if (!stream.cursor) return 'full';
  return mode;
}

/**
 * Whether finishing an interrupted pass already does what this run asks. A backfill or a
 * reconcile resumed is that work done. An incremental or full pass resumed covers changes
 * up to when it started, not up to now (records created since may sit on pages it had
 * already read), so a fresh pass follows it: one page for a sorted list.
 */
function satisfies(have: PassKind, want: PassKind): boolean {
  return have === want && (want === 'backfill' || want === 'reconcile');
}

function maxInstant(a: string | null, b: number | null): string | null {
  if (b === null) return a;
  if (a === null) return new Date(b).toISOString();
  return Date.parse(a) >= b ? a : new Date(b).toISOString();
}

/**
 * The cursor after a pass: the newest change committed, but never later than the pass's
 * start (records changed while the pass was paging may have slid past it) and never
 * earlier than the cursor it had.
 */
export function nextCursor(previous: string | null, maxChanged: string | null, passStartedAt: string): string | null {
  if (maxChanged === null) return previous;
  const candidate = Math.min(Date.parse(maxChanged), Date.parse(passStartedAt));
  if (previous !== null && Date.parse(previous) >= candidate) return previous;
  return new Date(candidate).toISOString();
}

/**
 * Runs (or resumes) one pass over a top-level stream of one organization. Each page's rows,
 * the work it creates for child streams and single-record completion, and the pass's
 * position are committed in one transaction; the cursor moves only when the pass ends.
 */
export async function runStreamPass(ctx: SyncContext, organizationId: string, stream: StreamSpec, options: PassOptions, tally: StreamTally = newTally()): Promise<PassResult[]> {
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(stream) };
  const want = passKindFor(stream, options.mode);
  const results: PassResult[] = [];
  let state = await loadStreamState(ctx.warehouse.db, key);
  if (state.pass) {
    const resumedKind = state.pass.kind;
    results.push(await walk(ctx, key, stream, state.pass, state.cursor, true, tally));
    if (satisfies(resumedKind, want)) return results;
    // The resumed pass moved the cursor.
    state = await loadStreamState(ctx.warehouse.db, key);
  }
  const fresh = state;
  const startedAt = ctx.stamp.next();
  let floor: string | null = null;
  if (want === 'incremental' && fresh.cursor) {
    floor = new Date(Date.parse(fresh.cursor) - ctx.config.sync.lookback_seconds * 1000).toISOString();
  } else if (want === 'backfill' && options.since) {
    floor = options.since;
  }
  const pass: PassState = { kind: want, startedAt, nextPage: 1, floor, maxChanged: null, unsorted: false, records: 0 };
  results.push(await walk(ctx, key, stream, pass, fresh.cursor, false, tally));
  return results;
}

async function walk(ctx: SyncContext, key: StreamKey, stream: StreamSpec, pass: PassState, cursor: string | null, resumed: boolean, tally: StreamTally): Promise<PassResult> {
  const log = ctx.logger.child({ organization_id: key.organizationId, stream: key.stream });
  const table = tableName(stream);
  const children = childStreamsOf(stream);
  const detailEnabled = detailIsEnabled(ctx, stream);
  // Sorting only pays when a floor lets the walk stop early.
  const sortParams = pass.floor !== null && stream.cursor?.sort ? stream.cursor.sort.params : null;
  const floorMs = pass.floor !== null ? Date.parse(pass.floor) : null;
  const result: PassResult = { kind: pass.kind, pages: 0, records: 0, written: 0, deleted: 0, requests: 0, resumed, unsorted: pass.unsorted };
  const fullRead = pass.kind !== 'incremental';
  // A parent without a change field cannot say its children changed (a new task does not
  // touch its project), so every full read re-reads the children of every parent.
  const everyParent = fullRead;
  let previousChanged: number | null = null;

  ctx.progress.streamStarted({ connection: key.connection, organizationId: key.organizationId, stream: key.stream, kind: pass.kind });
  log.info({ pass: pass.kind, page: pass.nextPage, resumed, floor: pass.floor }, resumed ? 'resuming pass' : 'starting pass');

  const iterator = pages({
    client: ctx.client,
    stream,
    organizationId: key.organizationId,
    path: stream.path,
    query: { ...(stream.query ?? {}), ...(sortParams ?? {}) },
    perPage: ctx.config.sync.per_page,
    startPage: pass.nextPage,
    signal: ctx.signal,
    maxPages: MAX_PAGES,
    meter: tally.meter,
    // A walk that cannot stop early reads every page anyway: fetch the next while writing this one.
    prefetch: !(sortParams && floorMs !== null),
  });
  // An organization with no rows yet (a first sync) has nothing stored to compare against
  // but what this pass writes; the filter says which ids that might be.
  const seen = (await ctx.writer.hasRows(ctx.warehouse.db, table, key.organizationId)) ? null : new SeenFilter();

  for await (const page of iterator) {
    result.pages++;
    result.requests++;
    result.records += page.records.length;
    const syncedAt = ctx.stamp.next();
    const normalized = normalizePage(ctx, stream, key.organizationId, page.records, syncedAt, undefined, tally.warnings);

    // Check the order the server was asked for; a list out of order is read whole.
    let reachedFloor = false;
    if (sortParams && !pass.unsorted) {
      for (const n of normalized) {
        if (n.changedAt === null || (previousChanged !== null && n.changedAt > previousChanged)) {
          pass.unsorted = true;
          result.unsorted = true;
          log.warn({ page: page.page }, 'the server did not return this list newest first; reading every page this run (costs requests, loses nothing)');
          break;
        }
        previousChanged = n.changedAt;
      }
    }
    if (sortParams && !pass.unsorted && floorMs !== null) {
      reachedFloor = normalized.some((n) => n.changedAt !== null && n.changedAt < floorMs);
    }
    for (const n of normalized) pass.maxChanged = maxInstant(pass.maxChanged, n.changedAt);

    const lookup = seen ? normalized.filter((n) => seen.mightHave(n.id)) : normalized;
    const stored = lookup.length === 0 ? new Map<string, { hash: string | null; deleted: boolean }>() : await ctx.writer.storedHashes(ctx.warehouse.db, table, stream.primaryKey, key.organizationId, lookup.map((n) => n.id));
    const changed = normalized.filter((n) => {
      const s = stored.get(n.id);
      return !s || s.deleted || s.hash !== n.hash;
    });
    const toWrite = fullRead ? normalized : changed;
    const parentIds = (everyParent ? normalized : changed).map((n) => n.id);
    const detailIds = changed.map((n) => n.id);
    const finished = !page.hasMore || reachedFloor;
    pass.nextPage = page.page + 1;
    pass.records += page.records.length;

    let deleted = 0;
    const db = ctx.warehouse.db;
    // A record with no stored row has no older child rows to mark as gone.
    const queries = ctx.writer.recordQueries(toWrite, syncedAt, (n) => !stored.has(n.id));
    const reason: PendingReason = pass.kind === 'backfill' ? 'backfill' : pass.kind === 'reconcile' ? 'reconcile' : 'changed';
    for (const child of children) queries.push(...enqueuePendingQueries(db, { ...key, stream: qualifiedName(child) }, 'children', parentIds, reason, syncedAt));
    if (detailEnabled && detailIds.length) queries.push(...enqueuePendingQueries(db, key, 'detail', detailIds, 'changed', syncedAt));
    if (!finished) {
      queries.push(saveStreamStateQuery(db, key, passColumns(pass), syncedAt));
      await ctx.warehouse.batch(queries);
    } else {
      await ctx.warehouse.batch(queries, async (trx) => {
        if (pass.kind === 'full' || pass.kind === 'reconcile') {
          deleted = await markVanishedWithChildren(ctx, trx, stream, key.organizationId, pass.startedAt, syncedAt);
        }
        const newCursor = stream.cursor ? nextCursor(cursor, pass.maxChanged, pass.startedAt) : null;
        await saveStreamState(trx, key, { cursor: newCursor, ...passColumns(null) }, syncedAt);
      });
    }
    result.written += toWrite.length;
    result.deleted += deleted;
    tally.pages++;
    tally.records += page.records.length;
    tally.written += toWrite.length;
    tally.deleted += deleted;
    // Once this page is in, a record repeated on a later page (the list shifted) must be compared.
    if (seen) for (const n of toWrite) seen.add(n.id);
    const limiter = ctx.limiters.peek(key.organizationId);
    ctx.progress.page({
      connection: key.connection,
      organizationId: key.organizationId,
      stream: key.stream,
      page: page.page,
      records: result.records,
      written: result.written,
      requestsLeftToday: limiter ? limiter.remainingToday() : null,
    });
    if (finished) break;
  }
  log.info({ pass: pass.kind, pages: result.pages, records: result.records, written: result.written, deleted: result.deleted }, 'pass finished');
  return result;
}

export function detailIsEnabled(ctx: SyncContext, stream: StreamSpec): boolean {
  if (!stream.detail) return false;
  if (stream.detail.setting) {
    const v = (ctx.config.sync as Record<string, unknown>)[stream.detail.setting];
    if (typeof v === 'boolean') return v;
  }
  return stream.detail.defaultEnabled;
}

/**
 * A page's raw records into rows. Data-shape warnings go to `warnings`, counted per field and
 * kind for one line each at the stream's end; without a tally each is logged as it comes.
 */
export function normalizePage(
  ctx: SyncContext,
  stream: StreamSpec,
  organizationId: string,
  records: RawRecord[],
  syncedAt: string,
  parent?: { key: string; value: string },
  warnings?: WarningTally,
): NormalizedRecord[] {
  const out: NormalizedRecord[] = [];
  for (const raw of records) {
    // Organization lists are not organization-scoped: each record is its own organization.
    const orgId = isOrganizationList(stream) ? String(raw['organization_id'] ?? organizationId) : organizationId;
    const n = normalizeRecord(stream, raw, { organizationId: orgId, source: 'list', syncedAt });
    if (parent && (n.row[parent.key] === null || n.row[parent.key] === undefined) && n.columns.includes(parent.key)) {
      // Child lists do not always repeat their parent's id; the path says it.
      n.row[parent.key] = parent.value;
    }
    if (warnings) warnings.addAll(n.warnings);
    else for (const w of n.warnings) ctx.logger.warn({ table: w.table, record: w.id, field: w.field, kind: w.kind }, w.message);
    out.push(n);
  }
  return out;
}

/**
 * After a full read: rows of this organization not written since the pass began are gone.
 * Their child-table rows and the rows of child streams under them go with them.
 */
export async function markVanishedWithChildren(
  ctx: SyncContext,
  db: Parameters<SyncContext['writer']['markVanished']>[0],
  stream: StreamSpec,
  organizationId: string,
  passStartedAt: string,
  now: string,
): Promise<number> {
  const table = tableName(stream);
  const deleted = await ctx.writer.markVanished(db, table, organizationId, passStartedAt, now);
  if (deleted > 0) await cascade(ctx, db, stream, organizationId, now);
  return deleted;
}

/** Marks the dependants of rows of `stream` that were marked deleted at `deletedAt`. */
export async function cascade(ctx: SyncContext, db: Parameters<SyncContext['writer']['markVanished']>[0], stream: StreamSpec, organizationId: string, deletedAt: string): Promise<void> {
  const table = tableName(stream);
  for (const childTable of childTableNames(table, stream.children)) {
    await ctx.writer.cascadeDeleted(db, childTable, table, stream.primaryKey, stream.primaryKey, organizationId, deletedAt);
  }
  for (const child of childStreamsOf(stream)) {
    const n = await ctx.writer.cascadeDeleted(db, tableName(child), table, child.parent!.key, stream.primaryKey, organizationId, deletedAt);
    if (n > 0) await cascade(ctx, db, child, organizationId, deletedAt);
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
