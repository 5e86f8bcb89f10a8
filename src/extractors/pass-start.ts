import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName, tableName } from '../catalog/types.js';
import { childStreamsOf } from '../catalog/index.js';
import { childrenCycleDays, wholeReadCycleDays } from '../config/cycles.js';
import type { PassEnd } from '../state/unit-of-work.js';
import type { PassKind, PassState, StreamKey, StreamState } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { childrenRereadDue } from './children-cycle.js';
import { marksVanished } from './page-plan.js';

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

/** One pass to walk: which stream of which organization, where it stands, the cursor it started from. */
export interface Walk {
  key: StreamKey;
  stream: StreamSpec;
  pass: PassState;
  cursor: string | null;
  resumed: boolean;
  /** When the stream's slow cycle last re-read child lists (`children_reread_at`): the days it covers follow from it. */
  rereadAt: string | null;
  wholeReadCycle: boolean;
}

export function passKindFor(stream: StreamSpec, mode: SyncMode): PassKind {
  if (!stream.cursor) return 'full';
  return mode;
}

/**
 * Whether finishing an interrupted pass already does what this run asks. A backfill or a
 * reconcile resumed is that work done. An incremental or full pass resumed covers changes
 * up to when it started, not up to now (records created since may sit on pages it had
 * already read), so a fresh pass follows it: one page for a sorted list. A reconcile resumed
 * without every parent's children does not do what --deep asks.
 */
export function resumeSuffices(resumed: PassState, want: PassKind, options: PassOptions): boolean {
  const satisfies = resumed.kind === want && (want === 'backfill' || want === 'reconcile');
  return satisfies && (resumed.children || options.deep !== true);
}

/** The walk of a pass over a stream whose state is `state`: the one it holds (resumed), or `fresh`. */
export function walkOf(key: StreamKey, stream: StreamSpec, state: StreamState, options: PassOptions, fresh?: PassState): Walk {
  return {
    key,
    stream,
    pass: fresh ?? state.pass!,
    cursor: state.cursor,
    resumed: fresh === undefined,
    rereadAt: state.row?.children_reread_at ?? null,
    wholeReadCycle: options.wholeReadCycle === true,
  };
}

/** A fresh pass of kind `want`: its floor, and whether it queues every parent's child lists. */
export async function newPass(
  ctx: SyncContext,
  stream: StreamSpec,
  state: StreamState,
  want: PassKind,
  options: PassOptions,
  organizationId: string,
): Promise<PassState> {
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
  return { kind: want, startedAt, nextPage: 1, floor, maxChanged: null, unsorted: false, records: 0, children };
}

/**
 * Whether every child stream of `stream` signals its changes on its parent, by the A25 checks'
 * verdict (src/extractors/shortcuts.ts): its changed parents' lists, read by every incremental
 * run, then hold every child change, and a reconcile's slow cycle of every parent's lists buys
 * nothing the checks' own sampled long reads do not already verify.
 */
export function childrenSignalled(ctx: Pick<SyncContext, 'shortcuts'>, stream: StreamSpec): boolean {
  const children = childStreamsOf(stream);
  return children.length > 0 && children.every((c) => ctx.shortcuts?.isTrusted('child_changes_touch_parent', qualifiedName(c)) === true);
}

/**
 * The days of a slow cycle for a pass: a reconcile's children (none where the children signal
 * their changes on their parents, `childrenSignalled`), a scheduled tree read whole; null for the others.
 */
export function cycleDays(
  ctx: Pick<SyncContext, 'config' | 'connection' | 'shortcuts'>,
  kind: PassKind,
  wholeReadCycle: boolean,
  stream?: StreamSpec,
): number | null {
  if (kind === 'reconcile' && stream && childrenSignalled(ctx, stream)) return null;
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
  if (kind === 'reconcile' && childrenSignalled(ctx, stream)) return options.deep === true;
  const days = cycleDays(ctx, kind, options.wholeReadCycle === true);
  if (days === null) return true;
  // Where child changes were seen not to touch their parent (A25 refuted), only reading every parent's lists finds them.
  const unsignalled = childStreamsOf(stream).some((c) => ctx.shortcuts?.isRefuted('child_changes_touch_parent', qualifiedName(c)));
  if (kind === 'reconcile' && unsignalled) return true;
  return childrenRereadDue(lastReread, ctx.clock.now(), days, options.deep === true);
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
 * What the last page commits besides its rows: the cursor, on full reads (which write every
 * new or changed row they list and keep the ids of the others) the instant before which a row
 * neither written nor listed is gone, and, when the pass queued
 * every parent's child lists or its slow cycle's share of them over the whole list, its start as
 * the instant up to which they were re-read.
 */
export function passEnd(stream: StreamSpec, pass: PassState, cursor: string | null, page: number): PassEnd {
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
