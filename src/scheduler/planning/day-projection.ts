/**
 * Where an organization's quota day is heading: the requests used so far plus what the runs
 * still planned before the reset are expected to cost. The status page shows it beside the
 * requests used, so a schedule that will not fit shows before the budget runs out.
 */

/** One job's runs still due before the reset. */
export interface RemainingRuns {
  /** Requests one run is expected to cost (the daemon's estimate, src/scheduler/estimate.ts). */
  estimate: number;
  /** Its scheduled fires from now until the reset. */
  fires: number;
}

export interface DayProjection {
  /** Requests used by the end of the quota day if every planned run runs at its estimate. */
  requests: number;
  /** The projection stays within the budget. */
  fits: boolean;
}

/**
 * Used so far plus every remaining run at its estimate; while the quota is spent nothing more
 * runs today, so the projection is what was used. The daemon's admission skips runs that do
 * not fit, so a projection over the budget means some of them will be skipped.
 */
export function projectEndOfDay(usedToday: number, remaining: readonly RemainingRuns[], budget: number, blocked: boolean): DayProjection {
  const planned = blocked ? 0 : remaining.reduce((a, r) => a + Math.max(0, r.estimate) * Math.max(0, r.fires), 0);
  const requests = usedToday + planned;
  return { requests, fits: requests <= budget };
}
