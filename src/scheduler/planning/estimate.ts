import { CompiledQuery } from 'kysely';
import { CATALOG, carriesChildren, childStreamsOf, findStream } from '../../catalog/index.js';
import { qualifiedName, tableName, type StreamSpec } from '../../catalog/types.js';
import type { SyncMode } from '../../extractors/stream-pass.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import type { Config } from '../../config/schema.js';
import { stateDb, type StreamStateRow } from '../../state/tables.js';
import { readsWhole, type JobSpec } from '../timing/jobs.js';
import { childrenRereadDue, cycleDaysCovered } from '../../extractors/children-cycle.js';

/** The command name a daemon run records in `_svcsync_runs` (its mode is read back from it). */
export function daemonCommand(job: Pick<JobSpec, 'jobClass'>): string {
  return `daemon ${job.jobClass}`;
}

/** The mode a recorded run used, from its command (`sync`, `sync --reconcile`, `backfill`, `daemon …`). */
export function modeOfCommand(command: string | null | undefined): SyncMode | null {
  if (!command) return null;
  if (command.includes('reconcile')) return 'reconcile';
  if (command.includes('backfill')) return 'backfill';
  return 'incremental';
}

export interface StreamSnapshot {
  state: StreamStateRow | null;
  /** Mode of the run that last touched the stream. */
  lastMode: SyncMode | null;
  pending: { detail: number; children: number; backfillOrReconcile: number };
  /** Live rows (read only when a full-read estimate needs them). */
  rows: number | null;
}

/** What the warehouse knows about one organization's streams, for estimates and ownership. */
export interface OrgSnapshot {
  streams: Map<string, StreamSnapshot>;
  /** Streams fully backfilled by the daemon (a `daemon backfill` run finished them). */
  backfilled: Set<string>;
  /** Child streams whose changes the A25 checks found to touch their parent (trusted): no reconcile cycle re-reads their lists. */
  signalled?: ReadonlySet<string>;
}

/** Child streams (qualified) of each organization whose A25 verdict is trusted, keyed `connection|organization`. */
export async function signalledChildren(
  warehouse: Warehouse,
  config: Pick<Config, 'sync'>,
  only?: { connection: string; organizationId: string },
): Promise<Map<string, Set<string>>> {
  // Taken unchecked (`trust`) or not at all (`off`), nothing found it to hold: the reconcile's cycle stays.
  if (config.sync.shortcuts.child_changes_touch_parent !== 'verify') return new Map();
  let q = stateDb(warehouse.db)
    .selectFrom('_svcsync_shortcuts')
    .select(['connection', 'organization_id', 'stream'])
    .where('shortcut', '=', 'child_changes_touch_parent')
    .where('state', '=', 'trusted');
  if (only) q = q.where('connection', '=', only.connection).where('organization_id', '=', only.organizationId);
  const out = new Map<string, Set<string>>();
  for (const r of await q.execute()) {
    const k = `${r.connection}|${r.organization_id}`;
    const set = out.get(k) ?? new Set<string>();
    set.add(r.stream);
    out.set(k, set);
  }
  return out;
}

/** Whether every child stream of a parent signals its changes on it (`signalled`), so a reconcile reads none of its lists. */
export function signalledParent(parent: StreamSpec, signalled: ReadonlySet<string> | undefined, catalog: readonly StreamSpec[]): boolean {
  const children = childStreamsOf(parent, catalog);
  return signalled !== undefined && children.length > 0 && children.every((c) => signalled.has(qualifiedName(c)));
}

async function countRows(warehouse: Warehouse, stream: StreamSpec, organizationId: string): Promise<number> {
  const p = warehouse.sql.param(1);
  try {
    const r = await warehouse.db.executeQuery<{ n: number | string }>(
      CompiledQuery.raw(`SELECT COUNT(*) AS n FROM "${tableName(stream)}" WHERE "organization_id" = ${p} AND "_deleted_at" IS NULL`, [
        organizationId,
      ]),
    );
    return Number(r.rows[0]?.n ?? 0);
  } catch {
    // The table does not exist until the first sync creates it.
    return 0;
  }
}

export async function loadSnapshot(
  warehouse: Warehouse,
  connection: string,
  organizationId: string,
  options: { rowsFor?: readonly string[]; config?: Pick<Config, 'sync'> } = {},
): Promise<OrgSnapshot> {
  const db = stateDb(warehouse.db);
  const states = await db
    .selectFrom('_svcsync_streams')
    .selectAll()
    .where('connection', '=', connection)
    .where('organization_id', '=', organizationId)
    .execute();
  const runIds = [...new Set(states.map((s) => s.last_run_id).filter((x): x is string => Boolean(x)))];
  const runs = runIds.length
    ? await db.selectFrom('_svcsync_runs').select(['run_id', 'command']).where('run_id', 'in', runIds).execute()
    : [];
  const commandOf = new Map(runs.map((r) => [r.run_id, r.command]));
  const pending = await db
    .selectFrom('_svcsync_pending')
    .select(['stream', 'kind', 'reason'])
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('connection', '=', connection)
    .where('organization_id', '=', organizationId)
    .groupBy(['stream', 'kind', 'reason'])
    .execute();
  const backfilledRows = await db
    .selectFrom('_svcsync_run_streams as rs')
    .innerJoin('_svcsync_runs as r', 'r.run_id', 'rs.run_id')
    .select('rs.stream')
    .distinct()
    .where('rs.connection', '=', connection)
    .where('rs.organization_id', '=', organizationId)
    .where('rs.status', '=', 'ok')
    .where('r.command', '=', 'daemon backfill')
    .execute();
  const streams = new Map<string, StreamSnapshot>();
  const get = (name: string): StreamSnapshot => {
    let s = streams.get(name);
    if (!s)
      streams.set(name, (s = { state: null, lastMode: null, pending: { detail: 0, children: 0, backfillOrReconcile: 0 }, rows: null }));
    return s;
  };
  for (const st of states) {
    const s = get(st.stream);
    s.state = st;
    s.lastMode = modeOfCommand(st.last_run_id ? commandOf.get(st.last_run_id) : null);
  }
  for (const p of pending) {
    const s = get(p.stream);
    const n = Number(p.n);
    if (p.kind === 'detail') s.pending.detail += n;
    else s.pending.children += n;
    if (p.reason === 'backfill' || p.reason === 'reconcile') s.pending.backfillOrReconcile += n;
  }
  for (const name of options.rowsFor ?? []) {
    const spec = findStream(name);
    if (spec) get(name).rows = await countRows(warehouse, spec, organizationId);
  }
  const signalled = options.config
    ? (await signalledChildren(warehouse, options.config, { connection, organizationId })).get(`${connection}|${organizationId}`)
    : undefined;
  return { streams, backfilled: new Set(backfilledRows.map((r) => r.stream)), signalled: signalled ?? new Set() };
}

/**
 * Streams of the job's trees whose rows a full-read estimate needs (tops, parents of children,
 * and children read from a list of all of them).
 */
export function rowsNeeded(job: JobSpec): string[] {
  if (job.mode === 'incremental') return [];
  const out = new Set<string>();
  for (const name of job.streams) {
    const spec = findStream(name);
    if (!spec) continue;
    if (!spec.parent) out.add(name);
    else out.add(`${spec.family}.${spec.parent.stream}`);
    if (spec.allList) out.add(name);
  }
  return [...out];
}

/**
 * Requests a job is expected to spend. Incremental: each stream's requests in its last
 * run of the same mode (1 when it has none), plus the queued child and single-record work.
 * Reconcile and backfill: every page of each list (rows / per_page, less the pages a pass in
 * progress has done) plus one request per parent for child streams, or the pages of the list
 * of all children where a child stream has one (A49). A reconcile whose children cycle is not
 * due (`cycle`: `childrenRereadDue` at `now`) reads only the child lists already queued.
 */
export function estimateJob(
  job: JobSpec,
  snap: OrgSnapshot,
  perPage: number,
  catalog: readonly StreamSpec[] = CATALOG,
  cycle?: { everyDays: number; now: number },
): number {
  if (job.jobClass === 'organizations') return 0;
  let total = 0;
  const carried = new Set<StreamSpec>();
  for (const name of job.streams) {
    const spec = catalog.find((s) => qualifiedName(s) === name);
    const s = snap.streams.get(name);
    const pending = (s?.pending.detail ?? 0) + (s?.pending.children ?? 0);
    if (job.mode === 'incremental') {
      // Work a backfill or reconcile queued is theirs; an incremental run drains only what it must.
      const queued = Math.max(0, pending - (s?.pending.backfillOrReconcile ?? 0));
      const sameMode = s?.lastMode === 'incremental' || (spec !== undefined && !spec.cursor && !spec.parent);
      const last = sameMode ? Number(s?.state?.last_requests ?? s?.state?.last_pages ?? 1) : 1;
      // A child's last request count already includes the queue it drained; the queue now is new work.
      total += Math.max(spec?.parent ? 0 : 1, last) + queued;
      continue;
    }
    if (!spec) continue;
    if (!spec.parent) {
      const rows = s?.rows ?? 0;
      let pages = Math.max(1, Math.ceil(rows / perPage));
      const pass = s?.state?.pass_kind === job.mode ? Number(s.state.pass_next_page ?? 1) - 1 : 0;
      pages = Math.max(1, pages - pass);
      total += pages + (s?.pending.detail ?? 0);
    } else {
      const parentSpec = catalog.find((p) => p.family === spec.family && p.name === spec.parent!.stream);
      // A parent whose single record carries all its child lists is read once for them all (A48).
      if (parentSpec && carriesChildren(parentSpec, catalog)) {
        if (carried.has(parentSpec)) {
          total += pending;
          continue;
        }
        carried.add(parentSpec);
      }
      const parent = snap.streams.get(`${spec.family}.${spec.parent.stream}`);
      const parentRows = parent?.rows ?? 0;
      if (job.mode === 'reconcile' && parentSpec && signalledParent(parentSpec, snap.signalled, catalog)) {
        total += pending;
        continue;
      }
      const lastReread = parent?.state?.children_reread_at ?? null;
      if (job.mode === 'reconcile' && cycle && !childrenRereadDue(lastReread, cycle.now, cycle.everyDays)) {
        // The rolling cycle's share: the parents whose days since the last re-read are due.
        const days = lastReread === null ? 0 : cycleDaysCovered(lastReread, new Date(cycle.now).toISOString(), cycle.everyDays).size;
        total += pending + Math.ceil((parentRows * days) / cycle.everyDays);
        continue;
      }
      // As readAllChildren decides: the list of all children once enough parents are queued.
      const allPages = Math.ceil((s?.rows ?? 0) / perPage) + 1;
      if (spec.allList && parentRows >= Math.max(2, allPages)) total += allPages;
      else total += Math.max(parentRows, pending, 1);
    }
  }
  return total;
}

/**
 * Top-level streams an unfinished daemon backfill has started on (its pass is in progress,
 * or its children still owe backfill work). Other jobs leave them alone: an incremental run
 * would otherwise resume the backfill pass at incremental priority.
 */
export function treesInBackfill(trees: readonly string[], snap: OrgSnapshot, catalog: readonly StreamSpec[] = CATALOG): string[] {
  const out: string[] = [];
  for (const t of trees) {
    const spec = catalog.find((s) => qualifiedName(s) === t);
    if (!spec) continue;
    const names = [t];
    const walk = (s: StreamSpec): void => {
      for (const c of childStreamsOf(s, catalog)) {
        names.push(qualifiedName(c));
        walk(c);
      }
    };
    walk(spec);
    const started =
      snap.streams.get(t)?.state?.pass_kind === 'backfill' ||
      names.some((n) => (snap.streams.get(n)?.pending.backfillOrReconcile ?? 0) > 0 && snap.streams.get(t)?.lastMode === 'backfill');
    if (started) out.push(t);
  }
  return out;
}

/** The job's streams in one tree: the top-level stream and its selected descendants. */
export function treeStreams(tree: string, job: JobSpec): string[] {
  const spec = findStream(tree);
  if (!spec) return [tree];
  return job.streams.filter((n) => n === tree || (n.startsWith(`${spec.family}.`) && isDescendant(n, spec)));
}

/**
 * Where a daemon backfill stands on one tree: `list` while its top-level stream's backfill
 * pass has not finished; `children` while child or single-record work it queued is left
 * (drained by an incremental run of the tree, since a backfill run would start the top-level
 * pass over); `done` once a daemon backfill run finished every stream of the tree.
 */
export function backfillPhase(tree: string, job: JobSpec, snap: OrgSnapshot): 'list' | 'children' | 'done' {
  if (!snap.backfilled.has(tree)) return 'list';
  const names = treeStreams(tree, job);
  const queued = names.some((n) => (snap.streams.get(n)?.pending.backfillOrReconcile ?? 0) > 0);
  if (queued || !names.every((n) => snap.backfilled.has(n))) return 'children';
  return 'done';
}

function isDescendant(name: string, ancestor: StreamSpec): boolean {
  let s = findStream(name);
  while (s?.parent) {
    if (s.parent.stream === ancestor.name && s.family === ancestor.family) return true;
    s = findStream(`${s.family}.${s.parent.stream}`);
  }
  return false;
}

/**
 * Records a list is assumed to hold where the warehouse has not read it yet: the reference
 * organization of `svcsync plan --fit`, the size of the sandbox's `--scale 50` organization.
 */
export const REFERENCE_RECORDS = 50;

/** What one tree (a top-level stream and its selected child streams) costs an organization. */
export interface TreeCost {
  /** The top-level stream (qualified name). */
  tree: string;
  /** The tree's streams: the top-level one, then its selected descendants. */
  streams: string[];
  kind: StreamSpec['kind'];
  /** Read whole with its child lists on every run (`readsWhole`). */
  wholeRead: boolean;
  /** A log the API never deletes from (`appendOnly`): the daemon reconciles it only on a stream schedule of its own. */
  appendOnly: boolean;
  /** Requests of one incremental run. */
  run: number;
  /** Requests of a poll that finds nothing changed: a page of a sorted list, every page of another. */
  poll: number;
  /**
   * Requests each changed record adds to a poll: its share of a list page, its single read where
   * those are on, and a child list per child stream its single record does not carry (A48).
   */
  perChange: number;
  /**
   * Requests of one daily reconcile run: every list page; null for a tree without a change field
   * (a full read finds its deletions every run).
   */
  reconcile: number | null;
  /**
   * What a reconcile adds when its slower cycle is due (`sync.reconcile_children_every_days`):
   * the child lists of every parent. 0 for a tree without child streams; null as `reconcile`.
   */
  reconcileChildren: number | null;
  /**
   * Requests of reading the tree whole (a first sync, a backfill): every page, a single read per
   * record where single reads are on, and a child list per parent (the pages of the list of all
   * children where there is one; none where the parent's single record carries them, A48).
   */
  whole: number;
  /** The list's size was assumed (REFERENCE_RECORDS), not read from the warehouse. */
  assumed: boolean;
}

/** Live rows per organization and top-level stream (`org|family.stream`), one query per table. */
export async function liveRowCounts(warehouse: Warehouse, streams: readonly StreamSpec[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const stream of streams) {
    try {
      const r = await warehouse.db.executeQuery<{ organization_id: string; n: number | string }>(
        CompiledQuery.raw(
          `SELECT "organization_id", COUNT(*) AS n FROM "${tableName(stream)}" WHERE "_deleted_at" IS NULL GROUP BY "organization_id"`,
        ),
      );
      for (const row of r.rows) out.set(`${row.organization_id}|${qualifiedName(stream)}`, Number(row.n));
    } catch {
      // The table does not exist until the first sync creates it.
    }
  }
  return out;
}

/**
 * What one run of a tree costs, from the catalog and the list sizes (pure). An incremental run
 * reads one page of a list sorted by its change field, every page of the others, and one child
 * list per parent where the parent has no change field (every parent, each run), none where it
 * has one (only the changed parents'); a reconcile reads every page, and every parent's child
 * lists when its slower cycle is due (`reconcileChildren`). Records that changed cost more
 * (their child lists, their single reads): the stream's last incremental run counts them, and
 * is taken where it cost more, unless it read the whole list (a first sync, which says nothing
 * about the next run). `rows` of a list the warehouse has not synced are `REFERENCE_RECORDS`
 * (or `referenceRecords`).
 */
export function treeCost(
  tree: StreamSpec,
  streams: readonly StreamSpec[],
  facts: { rows: (stream: StreamSpec) => number | null; state: (stream: StreamSpec) => StreamSnapshot | undefined },
  options: {
    perPage: number;
    referenceRecords?: number;
    catalog?: readonly StreamSpec[];
    wholeReadEveryDays?: number;
    /** Whether a stream's single-record reads are on (`sync.event_details`, …); unset: the catalog's default. */
    detailEnabled?: (stream: StreamSpec) => boolean;
    /** Child streams that signal their changes on their parents (A25 trusted): no reconcile cycle for their parents. */
    signalled?: ReadonlySet<string>;
  },
): TreeCost {
  const catalog = options.catalog ?? CATALOG;
  const reference = options.referenceRecords ?? REFERENCE_RECORDS;
  let assumed = false;
  const rowsOf = (s: StreamSpec): number => {
    const n = facts.rows(s);
    if (n !== null) return n;
    assumed = true;
    return reference;
  };
  const pages = (s: StreamSpec): number => Math.max(1, Math.ceil(rowsOf(s) / options.perPage));
  const parentOf = (s: StreamSpec): StreamSpec | undefined => catalog.find((p) => p.family === s.family && p.name === s.parent?.stream);
  const topState = facts.state(tree);
  const topRows = facts.rows(tree);
  // A last run that read at least the whole list was a first sync (or a full re-read).
  const lastWasWhole = topRows === null || Number(topState?.state?.last_records ?? Infinity) >= Math.max(1, topRows);
  let run = 0;
  let reconcile = 0;
  let children = 0;
  let whole = 0;
  let poll = 0;
  let perChange = 0;
  const carried = new Set<StreamSpec>();
  const detailOn = options.detailEnabled ?? ((s: StreamSpec): boolean => s.detail?.defaultEnabled === true);
  for (const s of streams) {
    let model: number;
    if (!s.parent) {
      model = s.cursor?.sort ? 1 : pages(s);
      poll += model;
      perChange += (s.cursor?.sort ? 1 / options.perPage : 0) + (detailOn(s) ? 1 : 0);
      reconcile += pages(s);
      whole += pages(s) + (detailOn(s) ? rowsOf(s) : 0);
    } else {
      const parent = parentOf(s);
      const parents = parent ? rowsOf(parent) : reference;
      // A tree read whole re-reads a share of its parents' child lists a day (`sync.whole_read_every_days`).
      const share = options.wholeReadEveryDays ? Math.ceil(parents / options.wholeReadEveryDays) : parents;
      model = parent && !parent.cursor ? share : 0;
      // A changed parent's child list, unless its single record carries it (A48).
      if (parent?.cursor && !(carriesChildren(parent, catalog) && detailOn(parent))) perChange += 1;
      const allPages = Math.ceil(rowsOf(s) / options.perPage) + 1;
      // No list of its own where the parent's single record carries it.
      if (!(parent && carriesChildren(parent, catalog) && detailOn(parent)))
        whole += s.allList && parents >= Math.max(2, allPages) ? allPages : parents;
      // A parent whose single record carries all its child lists is re-read once for all of them (A48);
      // one whose children signal their changes on it is not re-read by the cycle at all (A25 trusted).
      if (parent && signalledParent(parent, options.signalled, catalog)) children += 0;
      else if (!parent || !carriesChildren(parent, catalog)) children += parents;
      else if (!carried.has(parent)) {
        carried.add(parent);
        children += parents;
      }
    }
    const st = facts.state(s);
    const last = st?.lastMode === 'incremental' && !lastWasWhole ? Number(st.state?.last_requests ?? 0) : 0;
    run += Math.max(model, last);
  }
  return {
    tree: qualifiedName(tree),
    streams: streams.map(qualifiedName),
    kind: tree.kind,
    wholeRead: readsWhole(tree, catalog),
    appendOnly: tree.appendOnly === true,
    run,
    poll,
    perChange,
    reconcile: tree.cursor ? reconcile : null,
    reconcileChildren: tree.cursor ? children : null,
    whole,
    assumed,
  };
}
