import { carriesChildren, streamTables } from '../catalog/index.js';
import type { MemoPage } from '../state/page-memo-store.js';
import type { DeletedRows } from '../loaders/deleted-rows.js';
import { recencyOf, type PendingReason, type Recency } from '../state/pending.js';
import { commitPage, type PageCommit, type PassEnd } from '../state/unit-of-work.js';
import type { SyncContext } from './context.js';
import { childrenSlice } from './children-cycle.js';
import { IncrementalWindow } from './incremental-window.js';
import { memoAt, memoizes, memoQuery, pageToKeep, passMemo } from './page-memo.js';
import { isNewOrChanged, marksVanished, pendingReason, planPage, type PagePlan, type PagePlanInput } from './page-plan.js';
import { detailIsEnabled, identifyPage, normalizeListed, recencyRecords } from './page-records.js';
import type { Page, PagerRequest } from './pager.js';
import { cycleDays, passEnd, type Walk } from './pass-start.js';
import { StoredRows } from './stored-rows.js';
import { countDeleted, type StreamTally } from './stream-tally.js';

const MAX_PAGES = 100_000;

/** Kept pages (src/extractors/page-memo.ts) are written this many at a time, with a page's commit. */
const MEMO_BATCH = 20;

const UNSORTED = 'the server did not return this list newest first; reading every page this run (costs requests, loses nothing)';

type PageCounts = Pick<StreamTally, 'pages' | 'records' | 'reads' | 'written' | 'deleted'>;

/** What `planPage` is told the same for every page of a pass. */
type PassPlan = Pick<PagePlanInput, 'kind' | 'detail' | 'everyParent' | 'detailCarriesChildren' | 'changeField'>;

/**
 * Everything one page commits, gathered before the commit: its rows and the work they queue,
 * the unchanged ids it listed, what to keep of its answer, its counts, and on the last page the
 * pass's end. A page taken as read (its answer the same as last time) is one with no rows.
 */
export interface PageWork {
  page: number;
  syncedAt: string;
  decided: Pick<PagePlan, 'rows' | 'fresh' | 'parents' | 'checked' | 'details'> & { reason: PendingReason };
  /** Ids of unchanged rows a read that marks vanished rows listed (kept until the pass ends). */
  listed: readonly string[];
  /** What to keep of the page's answer for the next read, or null. */
  kept: MemoPage | null;
  recency?: () => Recency;
  counts: Omit<PageCounts, 'pages' | 'deleted'>;
  /** The last page of the pass: the cursor and what the pass's end commits. */
  end?: PassEnd | undefined;
}

/**
 * One pass over a stream, as the paging loop in `walk` drives it: `open` decides what holds for
 * every page, `work` turns a page into its `PageWork`, `commit` writes it in one transaction, and
 * `finish` reports the pass. Every decision is made by a pure unit; this object only applies them.
 */
export class PassWalker {
  /** Pages to keep, written with every MEMO_BATCH-th page and the last: losing them to a stop only costs a comparison. */
  private readonly memos: MemoPage[] = [];
  private readonly before: PageCounts;
  private readonly log: SyncContext['logger'];

  private constructor(
    private readonly ctx: SyncContext,
    private readonly walk: Walk,
    private readonly tally: StreamTally,
    private readonly window: IncrementalWindow,
    private readonly stored: StoredRows,
    /** What the pager is asked for: the same for every page of the pass. */
    readonly request: PagerRequest,
    private readonly memoKey: string | null,
    private readonly plan: PassPlan,
  ) {
    this.before = { ...tally };
    this.log = ctx.logger.child({ organization_id: walk.key.organizationId, stream: walk.key.stream });
  }

  static async open(ctx: SyncContext, walk: Walk, tally: StreamTally): Promise<PassWalker> {
    const { key, stream, pass, resumed } = walk;
    const window = IncrementalWindow.forPass(stream, pass);
    ctx.progress.streamStarted({ connection: key.connection, organizationId: key.organizationId, stream: key.stream, kind: pass.kind });
    ctx.logger
      .child({ organization_id: key.organizationId, stream: key.stream })
      .info(
        { pass: pass.kind, page: pass.nextPage, resumed, floor: pass.floor, every_parents_children: pass.children },
        resumed ? 'resuming pass' : 'starting pass',
      );
    const stored = await StoredRows.open(ctx, stream, key.organizationId);
    const days = cycleDays(ctx, pass.kind, walk.wholeReadCycle, stream);
    // The parents whose day of the slow cycle this pass covers, besides the changed ones.
    const everyParent = pass.children || days === null ? pass.children : (childrenSlice(walk.rereadAt, pass.startedAt, days) ?? false);
    const detail = detailIsEnabled(ctx, stream);
    const request = pageRequest(ctx, walk, window, tally);
    const memoKey = memoizes(ctx, stream, !window.mayStopEarly(), detail) ? memoQuery(stream, request.query, request.perPage) : null;
    // With no rows when the pass began, no page can stand as kept: nothing is recalled.
    if (memoKey !== null) request.memo = passMemo(ctx, key, stream, memoKey, stored.wasEmpty);
    // The record carries its child lists only while that reading holds for the organization (A48).
    const detailCarriesChildren = carriesChildren(stream, ctx.catalog) && (ctx.shortcuts?.uses('embedded_children', key.stream) ?? true);
    const plan: PassPlan = { kind: pass.kind, detail, everyParent, detailCarriesChildren, changeField: stream.cursor !== undefined };
    return new PassWalker(ctx, walk, tally, window, stored, request, memoKey, plan);
  }

  /** A page's work: taken as read when its answer and rows stand as last time, else compared record by record. */
  async work(page: Page): Promise<PageWork> {
    const syncedAt = this.ctx.stamp.next();
    return page.unchanged ? this.unchangedWork(page, page.unchanged, syncedAt) : this.listedWork(page, syncedAt);
  }

  /** Commits a page's work in one transaction, then counts and reports it. */
  async commit(work: PageWork): Promise<void> {
    const page = this.pageCommit(work);
    const { deleted } = await commitPage(this.ctx, page);
    this.stored.written(work.decided.rows);
    countPage(this.tally, { pages: 1, ...work.counts }, deleted);
    const requestsLeftToday = this.ctx.limiters.peek(this.walk.key.organizationId)?.remainingToday() ?? null;
    this.ctx.progress.page({
      ...this.walk.key,
      page: work.page,
      records: this.tally.records,
      written: this.tally.written,
      requestsLeftToday,
    });
  }

  /** Logs the pass's counts and, with its rows in, refreshes the planner statistics the next pass's lookups are planned on. */
  async finish(): Promise<void> {
    const counts = since(this.before, this.tally);
    this.log.info({ pass: this.walk.pass.kind, ...counts }, 'pass finished');
    if (await this.ctx.warehouse.sql.refreshStatistics(this.ctx.warehouse.db, streamTables(this.walk.stream), counts.written))
      this.log.info({ written: counts.written }, 'refreshed the warehouse planner statistics of the stream tables');
  }

  /** Answered as when last read, its rows untouched since: its ids are listed, nothing is written. */
  private unchangedWork(page: Page, unchanged: MemoPage, syncedAt: string): PageWork {
    const { ids, maxChanged } = unchanged;
    this.window.observe(maxChanged === null ? [] : [Date.parse(maxChanged)]);
    const kind = this.walk.pass.kind;
    return {
      page: page.page,
      syncedAt,
      decided: { rows: [], fresh: new Set(), parents: [], checked: [], details: [], reason: pendingReason(kind) },
      listed: marksVanished(kind) ? ids : [],
      kept: null,
      counts: { records: ids.length, reads: ids.length, written: 0 },
      end: this.advance(page, ids.length, !page.hasMore),
    };
  }

  /** A page parsed: its records compared with the stored rows, the new and changed normalized, the rest planned. */
  private async listedWork(page: Page, syncedAt: string): Promise<PageWork> {
    const { key, stream } = this.walk;
    const listed = identifyPage(this.ctx, stream, key.organizationId, page.records, this.tally, page.repaired);
    const view = this.window.observe(
      listed.map((l) => l.changedAt),
      page.sortedBy,
    );
    // The order the server reports, when it reports one: a spelling of its own would make every run read every page.
    if (view.becameUnsorted) this.log.warn({ page: page.page, asked: this.window.sortParams, reported: page.sortedBy }, UNSORTED);
    const stored = await this.stored.of(listed);
    // Only new and changed records are normalized: an unchanged one has nothing to write.
    const fresh = listed.filter((l) => isNewOrChanged(l, stored));
    const changed = normalizeListed(this.ctx, stream, fresh, syncedAt, this.tally);
    const plan = planPage({ ...this.plan, records: listed, changed, stored, hasMore: page.hasMore, reachedFloor: view.reachedFloor });
    const { listedUnchanged, finished, changed: written, ...decided } = plan;
    const kept = this.memoKey === null ? null : pageToKeep(key, this.memoKey, page, listed, syncedAt);
    const end = this.advance(page, page.records.length, finished);
    const recency = (): Recency => {
      const records = recencyRecords(listed, changed);
      return recencyOf(stream, records);
    };
    const counts = { records: page.records.length, reads: page.records.length, written };
    return { page: page.page, syncedAt, decided, listed: listedUnchanged, kept, recency, counts, end };
  }

  /** What `commitPage` writes of a page's work: with the pass's position, or its end on the last page. */
  private pageCommit(work: PageWork): PageCommit {
    const { key, stream, pass } = this.walk;
    return {
      key,
      stream,
      syncedAt: work.syncedAt,
      ...work.decided,
      ...(work.listed.length ? { listed: { passStartedAt: pass.startedAt, page: work.page, ids: work.listed } } : {}),
      memos: this.keep(work.kept, work.end !== undefined),
      lastMemoPage: this.memoKey !== null && work.end ? memoAt(key, this.memoKey, work.page) : undefined,
      checkDetails: this.plan.detailCarriesChildren && this.plan.detail,
      ...(work.recency ? { recency: work.recency } : {}),
      ...(work.end ? { end: work.end } : { position: pass }),
    };
  }

  /** Moves the pass past a page of `records`; the pass's end when that page is the last. */
  private advance(page: Page, records: number, last: boolean): PassEnd | undefined {
    const { stream, pass, cursor } = this.walk;
    Object.assign(pass, {
      nextPage: page.page + 1,
      records: pass.records + records,
      unsorted: this.window.unsorted,
      maxChanged: this.window.maxChanged,
    });
    return last ? passEnd(stream, pass, cursor, page.page) : undefined;
  }

  /** The kept pages to write with this commit: every MEMO_BATCH-th page's and the last's, or none. */
  private keep(kept: MemoPage | null, last: boolean): MemoPage[] | undefined {
    if (kept) this.memos.push(kept);
    return last || this.memos.length >= MEMO_BATCH ? this.memos.splice(0) : undefined;
  }
}

function pageRequest(ctx: SyncContext, { key, stream, pass }: Walk, window: IncrementalWindow, tally: StreamTally): PagerRequest {
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

function countPage(tally: StreamTally, page: Omit<PageCounts, 'deleted'>, deleted: DeletedRows): void {
  tally.pages += page.pages;
  tally.records += page.records;
  tally.reads += page.reads;
  tally.written += page.written;
  countDeleted(tally, deleted);
}
