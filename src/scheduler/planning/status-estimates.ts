import { CATALOG } from '../../catalog/index.js';
import type { StreamSpec } from '../../catalog/types.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { stateDb, type StreamStateRow } from '../../state/tables.js';
import { projectEndOfDay, type DayProjection } from './day-projection.js';
import { estimateJob, modeOfCommand, type OrgSnapshot, type StreamSnapshot } from './estimate.js';
import type { JobSpec } from '../timing/jobs.js';

/**
 * The end-of-day projection of every organization on the status page, from a few bulk reads
 * rather than `loadSnapshot`'s four queries per organization (4,000 per page at 1,000
 * organizations). Each job's estimate is the daemon's own (`estimateJob`), as `svcsync plan`
 * uses it.
 */

/** Pending work per connection|organization|stream, split as the estimates need it. */
export interface PendingCounts {
  connection: string;
  organization_id: string;
  stream: string;
  kind: string;
  reason: string;
  n: number;
}

/** Rows `_svcsync_runs.run_id IN (...)` asks for at once: well under either database's limit on bound parameters. */
const RUN_CHUNK = 500;

/** The command of each run that last touched a stream: its mode decides which estimate applies. */
export async function runCommands(warehouse: Warehouse, runIds: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const ids = [...new Set(runIds)];
  for (let i = 0; i < ids.length; i += RUN_CHUNK) {
    const rows = await stateDb(warehouse.db)
      .selectFrom('_svcsync_runs')
      .select(['run_id', 'command'])
      .where('run_id', 'in', ids.slice(i, i + RUN_CHUNK))
      .execute();
    for (const r of rows) out.set(r.run_id, r.command);
  }
  return out;
}

/** One organization's snapshot, as `loadSnapshot` reads it, built from rows already read for every organization. */
export function snapshotOf(
  states: readonly StreamStateRow[],
  pending: readonly PendingCounts[],
  rows: (stream: string) => number | null,
  commands: ReadonlyMap<string, string>,
): OrgSnapshot {
  const streams = new Map<string, StreamSnapshot>();
  const get = (name: string): StreamSnapshot => {
    let s = streams.get(name);
    if (!s)
      streams.set(
        name,
        (s = { state: null, lastMode: null, pending: { detail: 0, children: 0, backfillOrReconcile: 0 }, rows: rows(name) }),
      );
    return s;
  };
  for (const st of states) {
    const s = get(st.stream);
    s.state = st;
    s.lastMode = modeOfCommand(st.last_run_id ? commands.get(st.last_run_id) : null);
  }
  for (const p of pending) {
    const s = get(p.stream);
    if (p.kind === 'detail') s.pending.detail += p.n;
    else s.pending.children += p.n;
    if (p.reason === 'backfill' || p.reason === 'reconcile') s.pending.backfillOrReconcile += p.n;
  }
  // The backfill's progress is not projected: a backfill takes only what the schedule leaves.
  return { streams, backfilled: new Set() };
}

/**
 * The organization's projected usage at the end of its quota day: used so far plus, for each
 * scheduled job (not discovery, which no organization is charged for, nor a backfill, which
 * takes what is left), its estimate times its fires from now until the reset (`firesLeft`).
 */
export function projectOrganization(
  jobs: readonly JobSpec[],
  snap: OrgSnapshot,
  usage: { usedToday: number; budget: number; blocked: boolean },
  firesLeft: (job: JobSpec) => number,
  perPage: number,
  catalog: readonly StreamSpec[] = CATALOG,
  cycle?: { everyDays: number; now: number },
): DayProjection {
  // The freshness job spends what the day leaves and never more (timing/freshness.ts): it does not push a day over.
  const remaining = jobs
    .filter((j) => j.jobClass !== 'organizations' && j.jobClass !== 'backfill' && !j.fresh)
    .map((j) => ({ estimate: estimateJob(j, snap, perPage, catalog, cycle), fires: firesLeft(j) }));
  return projectEndOfDay(usage.usedToday, remaining, usage.budget, usage.blocked);
}

/**
 * Cron arithmetic shared by every organization on one schedule: a fleet has a handful of
 * schedules, and walking a quarter-hourly one to the reset for each of 1,000 organizations
 * took seconds.
 */
export class ScheduleMemo {
  private readonly fires = new Map<string, number>();
  private readonly periods = new Map<string, { next: number; every: number }>();

  constructor(private readonly now: number) {}

  /** The job's fires from now until `reset` (a fire at the reset instant belongs to the next day). */
  firesUntil(job: JobSpec, reset: number): number {
    const key = `${job.cron.toString()}|${reset}`;
    let n = this.fires.get(key);
    if (n === undefined) this.fires.set(key, (n = job.cron.between(this.now, reset - 1).length));
    return n;
  }

  /** The job's next fire after now, and the seconds between it and the one after. */
  next(job: JobSpec, after = this.now): { next: number; every: number } {
    const key = `${job.cron.toString()}|${after}`;
    let p = this.periods.get(key);
    if (!p) {
      const next = job.cron.next(after);
      this.periods.set(key, (p = { next, every: Math.round((job.cron.next(next) - next) / 1000) }));
    }
    return p;
  }
}
