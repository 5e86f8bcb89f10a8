import type { StreamSpec } from '../catalog/types.js';
import { isOrganizationList, qualifiedName, tableName } from '../catalog/types.js';
import { carriesChildren, childStreamsOf, streamTables } from '../catalog/index.js';
import { listIdentity, normalizeRecord, type ListIdentity, type NormalizedRecord } from '../normalize/normalize.js';
import { commitPage, type PassEnd } from '../state/unit-of-work.js';
import { recencyOf } from '../state/pending.js';
import { loadStreamState, type PassKind, type PassState, type StreamKey } from '../state/stream-state.js';
import type { MemoPage } from '../state/page-memo-store.js';
import type { SyncContext } from './context.js';
import { pages, type RawRecord } from './pager.js';
import { IncrementalWindow } from './incremental-window.js';
import { isNewOrChanged, marksVanished, pendingReason, planPage, type StoredRow } from './page-plan.js';
import { memoAt, memoizes, memoQuery, pageToKeep, passMemo } from './page-memo.js';
import { SeenFilter } from './seen-filter.js';
import { childrenRereadDue, childrenSlice } from './children-cycle.js';
import { childrenCycleDays, wholeReadCycleDays } from '../config/cycles.js';
import { countDeleted, type StreamTally } from './stream-tally.js';
import type { DeletedRows } from '../state/deleted-rows.js';
import { listRepairs, repairMessage } from './text-repairs.js';

/** What the caller asked for; the pass kind follows from it and the stream. */
export type SyncMode = 'incremental' | 'backfill' | 'reconcile';

export interface PassOptions {
  mode: SyncMode;
  /** backfill --since: records changed before this are not re-read (sorted streams stop there). */
  since?: string | undefined;
  /** A reconcile re-reads every parent's child lists whether or not its slower cycle is due (`sync --reconcile --deep`). */
  deep?: boolean | undefined;
  /**
   * A scheduled run: a tree read whole (projects and their tasks) re-reads its slow cycle's share
   * of the parents' child lists (`sync.whole_read_every_days`), besides the changed parents'. A
   * hand-run sync reads every parent's, as asked.
   */
  wholeReadCycle?: boolean | undefined;
}

const MAX_PAGES = 100_000;

/** Kept pages (src/extractors/page-memo.ts) are written this many at a time, with a page's commit. */
const MEMO_BATCH = 20;

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
export async function runStreamPass(
  ctx: SyncContext,
  organizationId: string,
  stream: StreamSpec,
  options: PassOptions,
  tally: StreamTally,
): Promise<void> {
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(stream) };
  const want = passKindFor(stream, options.mode);
  let state = await loadStreamState(ctx.warehouse.db, key);
  if (state.pass) {
    const resumedKind = state.pass.kind;
    const resumedChildren = state.pass.children;
    await walk(
      ctx,
      {
        key,
        stream,
        pass: state.pass,
        cursor: state.cursor,
        resumed: true,
        rereadAt: state.row?.children_reread_at ?? null,
        wholeReadCycle: options.wholeReadCycle === true,
      },
      tally,
    );
    // A reconcile resumed without every parent's children does not do what --deep asks.
    if (satisfies(resumedKind, want) && (resumedChildren || options.deep !== true)) return;
    // The resumed pass moved the cursor.
    state = await loadStreamState(ctx.warehouse.db, key);
  }
  const startedAt = ctx.stamp.next();
  let floor: string | null = null;
  if (want === 'incremental' && state.cursor) {
    floor = new Date(Date.parse(state.cursor) - ctx.config.sync.lookback_seconds * 1000).toISOString();
  } else if (want === 'backfill' && options.since) {
    floor = options.since;
  }
  const children =
    want === 'incremental'
      ? state.cursor === null && !(await ctx.writer.hasRows(ctx.warehouse.db, tableName(stream), organizationId))
      : queuesEveryParent(ctx, stream, want, state.row?.children_reread_at ?? null, options);
  const pass: PassState = { kind: want, startedAt, nextPage: 1, floor, maxChanged: null, unsorted: false, records: 0, children };
  await walk(
    ctx,
    {
      key,
      stream,
      pass,
      cursor: state.cursor,
      resumed: false,
      rereadAt: state.row?.children_reread_at ?? null,
      wholeReadCycle: options.wholeReadCycle === true,
    },
    tally,
  );
}

/** The days of a slow cycle for a pass: a reconcile's children, a scheduled tree read whole; null for the others. */
function cycleDays(ctx: SyncContext, kind: PassKind, wholeReadCycle: boolean): number | null {
  if (kind === 'reconcile') return childrenCycleDays(ctx.config, ctx.connection.plan);
  if (kind === 'full' && wholeReadCycle) return wholeReadCycleDays(ctx.config, ctx.connection.plan);
  return null;
}

/**
 * Whether a full read queues the child lists of every parent it lists: a reconcile or a tree
 * read whole when its slow cycle has not rolled for a whole turn (or never did, or --deep), a
 * backfill always. Otherwise `childrenSlice` picks the parents whose day of the cycle is due.
 * (An incremental pass queues its changed parents', which on a first sync of the stream, with
 * no rows yet, are all of them.)
 */
function queuesEveryParent(ctx: SyncContext, stream: StreamSpec, kind: PassKind, lastReread: string | null, options: PassOptions): boolean {
  const days = cycleDays(ctx, kind, options.wholeReadCycle === true);
  if (days === null) return true;
  // Where child changes were seen not to touch their parent (A25 refuted), only reading every parent's lists finds them.
  const unsignalled = childStreamsOf(stream).some((c) => ctx.shortcuts?.isRefuted('child_changes_touch_parent', qualifiedName(c)));
  if (kind === 'reconcile' && unsignalled) return true;
  return childrenRereadDue(lastReread, ctx.clock.now(), days, options.deep === true);
}

/**
 * One pass, page by page: fetch (pager), normalize, observe the window, compare with what is
 * stored, plan, commit. Every decision is made by a pure unit; this loop only applies them.
 */
async function walk(
  ctx: SyncContext,
  { key, stream, pass, cursor, resumed, rereadAt, wholeReadCycle }: Walk,
  tally: StreamTally,
): Promise<void> {
  const log = ctx.logger.child({ organization_id: key.organizationId, stream: key.stream });
  const window = IncrementalWindow.forPass(stream, pass);
  const before = { ...tally };
  ctx.progress.streamStarted({ connection: key.connection, organizationId: key.organizationId, stream: key.stream, kind: pass.kind });
  log.info(
    { pass: pass.kind, page: pass.nextPage, resumed, floor: pass.floor, every_parents_children: pass.children },
    resumed ? 'resuming pass' : 'starting pass',
  );
  const stored = await StoredRows.open(ctx, stream, key.organizationId);
  const days = cycleDays(ctx, pass.kind, wholeReadCycle);
  // The parents whose day of the slow cycle this pass covers, besides the changed ones.
  const everyParent = pass.children || days === null ? pass.children : (childrenSlice(rereadAt, pass.startedAt, days) ?? false);
  // The same for every page of the pass.
  const detail = detailIsEnabled(ctx, stream);
  // The record carries its child lists only while that reading holds for the organization (A48).
  const detailCarriesChildren = carriesChildren(stream, ctx.catalog) && (ctx.shortcuts?.uses('embedded_children', key.stream) ?? true);
  const request = pageRequest(ctx, key, stream, pass, window, tally);
  const memoKey = memoizes(ctx, stream, !window.mayStopEarly(), detail) ? memoQuery(stream, request.query, request.perPage) : null;
  // With no rows when the pass began, no page can stand as kept: nothing is recalled.
  if (memoKey !== null) request.memo = passMemo(ctx, key, stream, memoKey, stored.wasEmpty);
  // Pages to keep, written with every MEMO_BATCH-th page and the last: losing them to a stop only costs a comparison.
  const memos: MemoPage[] = [];
  const keepPage = (kept: MemoPage | null, last: boolean): MemoPage[] | undefined => {
    if (kept) memos.push(kept);
    return last || memos.length >= MEMO_BATCH ? memos.splice(0) : undefined;
  };
  for await (const page of pages(request)) {
    const syncedAt = ctx.stamp.next();
    if (page.unchanged) {
      // Answered as when last read, its rows untouched since: its ids are listed, nothing is written.
      const { ids, maxChanged } = page.unchanged;
      window.observe(maxChanged === null ? [] : [Date.parse(maxChanged)]);
      Object.assign(pass, {
        nextPage: page.page + 1,
        records: pass.records + ids.length,
        unsorted: window.unsorted,
        maxChanged: window.maxChanged,
      });
      const end = page.hasMore ? undefined : passEnd(stream, pass, cursor, page.page);
      const { deleted } = await commitPage(ctx, {
        key,
        stream,
        syncedAt,
        rows: [],
        fresh: new Set(),
        parents: [],
        reason: pendingReason(pass.kind),
        details: [],
        ...(marksVanished(pass.kind) && ids.length ? { listed: { passStartedAt: pass.startedAt, page: page.page, ids } } : {}),
        memos: keepPage(null, end !== undefined),
        ...(end ? { end, lastMemoPage: memoAt(key, memoKey!, page.page) } : { position: pass }),
      });
      countPage(tally, { pages: 1, records: ids.length, reads: ids.length, written: 0 }, deleted);
      reportPage(ctx, key, page.page, tally);
      if (end) break;
      continue;
    }
    const listed = identifyPage(ctx, stream, key.organizationId, page.records, tally, page.repaired);
    const view = window.observe(
      listed.map((l) => l.changedAt),
      page.sortedBy,
    );
    // The order the server reports, when it reports one: a spelling of its own would make every run read every page.
    if (view.becameUnsorted) log.warn({ page: page.page, asked: window.sortParams, reported: page.sortedBy }, UNSORTED);
    const storedRows = await stored.of(listed);
    // Only new and changed records are normalized: an unchanged one has nothing to write.
    const changed = normalizeListed(
      ctx,
      stream,
      listed.filter((l) => isNewOrChanged(l, storedRows)),
      syncedAt,
      tally,
    );
    const plan = planPage({
      records: listed,
      changed,
      stored: storedRows,
      kind: pass.kind,
      detail,
      hasMore: page.hasMore,
      reachedFloor: view.reachedFloor,
      everyParent,
      detailCarriesChildren,
      changeField: stream.cursor !== undefined,
    });
    Object.assign(pass, {
      nextPage: page.page + 1,
      records: pass.records + page.records.length,
      unsorted: window.unsorted,
      maxChanged: window.maxChanged,
    });
    const end = plan.finished ? passEnd(stream, pass, cursor, page.page) : undefined;
    const { listedUnchanged, ...decided } = plan;
    const checkDetails = detailCarriesChildren && detail;
    const { deleted } = await commitPage(ctx, {
      key,
      stream,
      syncedAt,
      ...decided,
      ...(listedUnchanged.length ? { listed: { passStartedAt: pass.startedAt, page: page.page, ids: listedUnchanged } } : {}),
      memos: keepPage(memoKey === null ? null : pageToKeep(key, memoKey, page, listed, syncedAt), end !== undefined),
      lastMemoPage: memoKey !== null && end ? memoAt(key, memoKey, page.page) : undefined,
      checkDetails,
      recency: () => recencyOf(stream, recencyRecords(listed, changed)),
      ...(end ? { end } : { position: pass }),
    });
    stored.written(plan.rows);
    countPage(tally, { pages: 1, records: page.records.length, reads: page.records.length, written: plan.changed }, deleted);
    reportPage(ctx, key, page.page, tally);
    if (plan.finished) break;
  }
  const counts = since(before, tally);
  log.info({ pass: pass.kind, ...counts }, 'pass finished');
  // After the last commit: the rows are in whatever this costs, and the next pass's lookups are planned on them.
  if (await ctx.warehouse.sql.refreshStatistics(ctx.warehouse.db, streamTables(stream), counts.written))
    log.info({ written: counts.written }, 'refreshed the warehouse planner statistics of the stream tables');
}

/** One pass to walk: which stream of which organization, where it stands, the cursor it started from. */
interface Walk {
  key: StreamKey;
  stream: StreamSpec;
  pass: PassState;
  cursor: string | null;
  resumed: boolean;
  /** When the stream's slow cycle last re-read child lists (`children_reread_at`): the days it covers follow from it. */
  rereadAt: string | null;
  wholeReadCycle: boolean;
}

const UNSORTED = 'the server did not return this list newest first; reading every page this run (costs requests, loses nothing)';

/** What a stream's tally counted since `before`. */
function since(before: PageCounts, now: PageCounts): PageCounts {
  return {
    pages: now.pages - before.pages,
    records: now.records - before.records,
    reads: now.reads - before.reads,
    written: now.written - before.written,
    deleted: now.deleted - before.deleted,
  };
}

/**
 * What the last page commits besides its rows: the cursor, on full reads (which write every
 * new or changed row they list and keep the ids of the others) the instant before which a row
 * neither written nor listed is gone, and, when the pass queued
 * every parent's child lists or its slow cycle's share of them over the whole list, its start as
 * the instant up to which they were re-read.
 */
function passEnd(stream: StreamSpec, pass: PassState, cursor: string | null, page: number): PassEnd {
  // A reconcile or a tree read whole moves its slow cycle on to its start: the days up to it are re-read.
  const whole = pass.floor === null && (pass.children || pass.kind === 'reconcile' || pass.kind === 'full');
  return {
    cursor: stream.cursor ? nextCursor(cursor, pass.maxChanged, pass.startedAt) : null,
    vanishedBefore: marksVanished(pass.kind) ? pass.startedAt : null,
    childrenRereadAt: whole ? pass.startedAt : null,
    // Page 1 ending the pass: no earlier page saved a position (a resumed pass starts past page 1).
    firstPage: page === 1,
  };
}

type PageCounts = Pick<StreamTally, 'pages' | 'records' | 'reads' | 'written' | 'deleted'>;

function countPage(tally: StreamTally, page: Omit<PageCounts, 'deleted'>, deleted: DeletedRows): void {
  tally.pages += page.pages;
  tally.records += page.records;
  tally.reads += page.reads;
  tally.written += page.written;
  countDeleted(tally, deleted);
}

function reportPage(ctx: SyncContext, key: StreamKey, page: number, tally: StreamTally): void {
  const requestsLeftToday = ctx.limiters.peek(key.organizationId)?.remainingToday() ?? null;
  ctx.progress.page({ ...key, page, records: tally.records, written: tally.written, requestsLeftToday });
}

function pageRequest(
  ctx: SyncContext,
  key: StreamKey,
  stream: StreamSpec,
  pass: PassState,
  window: IncrementalWindow,
  tally: StreamTally,
): Parameters<typeof pages>[0] {
  return {
    client: ctx.client,
    stream,
    organizationId: key.organizationId,
    path: stream.path,
    query: { ...(stream.query ?? {}), ...(window.sortParams ?? {}) },
    perPage: ctx.config.sync.per_page,
    startPage: pass.nextPage,
    signal: ctx.signal,
    stop: ctx.stop,
    maxPages: MAX_PAGES,
    meter: tally.meter,
    budget: ctx.records,
    // A walk that cannot stop early reads every page anyway: fetch the next while writing this one.
    prefetch: !window.mayStopEarly(),
  };
}

/**
 * The stored hashes of a page's ids. An organization with no rows yet (a first sync) has
 * nothing stored but what this pass writes; a filter says which ids that might be, so most
 * pages need no lookup.
 */
class StoredRows {
  private constructor(
    private readonly ctx: SyncContext,
    private readonly stream: StreamSpec,
    private readonly organizationId: string,
    private readonly seen: SeenFilter | null,
  ) {}

  /** The table held no row of the organization when the pass began. */
  get wasEmpty(): boolean {
    return this.seen !== null;
  }

  static async open(ctx: SyncContext, stream: StreamSpec, organizationId: string): Promise<StoredRows> {
    const empty = !(await ctx.writer.hasRows(ctx.warehouse.db, tableName(stream), organizationId));
    return new StoredRows(ctx, stream, organizationId, empty ? new SeenFilter() : null);
  }

  async of(records: ReadonlyArray<{ id: string }>): Promise<Map<string, StoredRow>> {
    const seen = this.seen;
    const lookup = seen ? records.filter((n) => seen.mightHave(n.id)) : records;
    if (lookup.length === 0) return new Map();
    return this.ctx.writer.storedHashes(
      this.ctx.warehouse.db,
      tableName(this.stream),
      this.stream.primaryKey,
      this.organizationId,
      lookup.map((n) => n.id),
    );
  }

  /** Once a page is in, a record repeated on a later page (the list shifted) must be compared. */
  written(rows: readonly NormalizedRecord[]): void {
    if (this.seen) for (const n of rows) this.seen.add(n.id);
  }
}

export function detailIsEnabled(ctx: Pick<SyncContext, 'config'>, stream: StreamSpec): boolean {
  if (!stream.detail) return false;
  if (stream.detail.setting) {
    const v = (ctx.config.sync as Record<string, unknown>)[stream.detail.setting];
    if (typeof v === 'boolean') return v;
  }
  return stream.detail.defaultEnabled;
}

/** Organization lists are not organization-scoped: each record is its own organization. */
function organizationOf(stream: StreamSpec, raw: RawRecord, organizationId: string): string {
  if (!isOrganizationList(stream)) return organizationId;
  const listed = raw['organization_id'];
  return typeof listed === 'string' || typeof listed === 'number' ? String(listed) : organizationId;
}

/**
 * A list page's records as the comparison with stored rows needs them, and the text the client
 * repaired in them as warnings (of every record on the page, changed or not: the answer held it).
 */
function identifyPage(
  ctx: Pick<SyncContext, 'logger'> & { warehouse?: Pick<SyncContext['warehouse'], 'dialect'> },
  stream: StreamSpec,
  organizationId: string,
  records: readonly RawRecord[],
  tally: Pick<StreamTally, 'warnings'>,
  repaired: readonly string[] = [],
): ListIdentity[] {
  const listed = records.map((raw) =>
    listIdentity(stream, raw, { organizationId: organizationOf(stream, raw, organizationId), source: 'list' }),
  );
  if (repaired.length) tally.warnings.addAll(listRepairs(tableName(stream), listed, repaired, repairMessage(ctx.warehouse?.dialect)));
  return listed;
}

/**
 * What `recencyOf` reads of every record on a page (its id, change time and `date` column): the
 * rows of those normalized, and for an unchanged record, which is not normalized, its identity
 * and the `date` field as listed.
 */
function recencyRecords(listed: readonly ListIdentity[], changed: readonly NormalizedRecord[]): Parameters<typeof recencyOf>[1] {
  const rows = new Map(changed.map((n) => [n.id, n]));
  return listed.map((l) => {
    const n = rows.get(l.id);
    if (n) return n;
    const date = l.raw['date'];
    return { id: l.id, changedAt: l.changedAt, row: { date: typeof date === 'string' ? date : null } };
  });
}

/** The new and changed records of a page into rows, warnings and drift going to the tally as in `normalizePage`. */
function normalizeListed(
  ctx: Pick<SyncContext, 'runId'>,
  stream: StreamSpec,
  listed: readonly ListIdentity[],
  syncedAt: string,
  tally: Pick<StreamTally, 'warnings' | 'drift'>,
): NormalizedRecord[] {
  return listed.map((l) => {
    const opts = { organizationId: l.organizationId, source: 'list' as const, syncedAt, runId: ctx.runId, identity: l };
    const n = normalizeRecord(stream, l.raw, opts);
    tally.warnings.addAll(n.warnings);
    tally.drift.addAll(n.unknown);
    return n;
  });
}

/**
 * A page's raw records into rows. Data-shape warnings go to the tally's `warnings`, counted per
 * field and kind for one line each at the stream's end; without a tally each is logged as it
 * comes. Fields the catalog does not know go to the tally's `drift` (without one, nowhere).
 */
export function normalizePage(
  ctx: Pick<SyncContext, 'runId' | 'logger'> & { warehouse?: Pick<SyncContext['warehouse'], 'dialect'> },
  stream: StreamSpec,
  organizationId: string,
  records: RawRecord[],
  syncedAt: string,
  parent?: { key: string; value: string },
  tally?: Pick<StreamTally, 'warnings' | 'drift'>,
  repaired: readonly string[] = [],
): NormalizedRecord[] {
  const out: NormalizedRecord[] = [];
  for (const raw of records) {
    const orgId = organizationOf(stream, raw, organizationId);
    const n = normalizeRecord(stream, raw, { organizationId: orgId, source: 'list', syncedAt, runId: ctx.runId });
    if (parent && (n.row[parent.key] === null || n.row[parent.key] === undefined) && n.columns.includes(parent.key)) {
      // Child lists do not always repeat their parent's id; the path says it.
      n.row[parent.key] = parent.value;
    }
    if (tally) {
      tally.warnings.addAll(n.warnings);
      tally.drift.addAll(n.unknown);
    } else {
      for (const w of n.warnings) ctx.logger.warn({ table: w.table, record: w.id, field: w.field, kind: w.kind }, w.message);
    }
    out.push(n);
  }
  if (repaired.length) {
    const warnings = listRepairs(tableName(stream), out, repaired, repairMessage(ctx.warehouse?.dialect));
    if (tally) tally.warnings.addAll(warnings);
    else for (const w of warnings) ctx.logger.warn({ table: w.table, record: w.id, field: w.field, kind: w.kind }, w.message);
  }
  return out;
}
