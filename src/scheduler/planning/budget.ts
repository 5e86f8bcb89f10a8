import type { JobSpec } from '../timing/jobs.js';

/** What is left of one organization's day, as its limiter counts it. */
export interface BudgetView {
  /** The day's budget left after the reserve (OrgLimiter.remainingToday()). */
  remaining: number;
  /** When the count resets (epoch ms). */
  nextReset: number;
}

export interface Decision {
  run: boolean;
  /** Requests of the day held back for higher priorities: the job stops when only this many are left. */
  floor: number;
  reason: string;
}

/**
 * Requests that jobs of a higher priority than `priority` are expected to need from `now`
 * until the reset: each such job's estimate times its fires in that span (or its `demand`
 * until the reset, where a freshness plan worked it out), times `safety`. A job of `priority`
 * may use only what is left above this.
 */
export function heldForHigher(
  priority: number,
  jobs: ReadonlyArray<{ job: JobSpec; estimate: number; demand?: number }>,
  now: number,
  reset: number,
  safety: number,
): number {
  let demand = 0;
  for (const { job, estimate, demand: planned } of jobs) {
    if (job.priority >= priority) continue;
    if (planned !== undefined) {
      demand += planned;
      continue;
    }
    if (estimate <= 0) continue;
    // A fire at the reset instant belongs to the next day.
    demand += estimate * job.cron.between(now, reset - 1).length;
  }
  return Math.ceil(demand * safety);
}

/**
 * Whether a job may start. Incremental syncs (priority 0) need only their estimate to fit
 * what is left. Every later class must also leave the demand of the classes before it
 * (`floor`) untouched. A backfill takes only what is left: it starts when at least a page
 * fits above the floor and is stopped when the floor is reached, so it spreads across days.
 */
export function decide(job: JobSpec, estimate: number, view: BudgetView, floor: number): Decision {
  const free = view.remaining - floor;
  if (job.jobClass === 'backfill') {
    if (free >= 1) return { run: true, floor, reason: `backfill may use ${free} of the ${view.remaining} requests left today` };
    return {
      run: false,
      floor,
      reason: `budget: backfill waits; ${view.remaining} requests left today and ${floor} are held for higher priorities`,
    };
  }
  if (estimate <= free) return { run: true, floor, reason: `estimated ${estimate} of ${view.remaining} requests left today` };
  const held = floor ? `, ${floor} of them held for higher priorities` : '';
  return { run: false, floor, reason: `budget: needs about ${estimate} requests; ${view.remaining} left today${held}` };
}
