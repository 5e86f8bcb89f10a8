/** The daemon's live state in `/status.json` (null in `svcsync status --json`, which reads only the warehouse). */
export interface LiveStatus {
  startedAt: string | null;
  running: Array<{ job: string; connection: string; organizationId: string | null; streams: string[] }>;
  /** Webhook runs waiting out their debounce delay. */
  hookRunsDue: Array<{ connection: string; organizationId: string; at: string }>;
  /** Organizations whose hooks fell back to the schedule (budget low) in the last day. */
  hookFallbacks: Array<{ connection: string; organizationId: string; at: string; reason: string }>;
  nextRuns: Array<{ job: string; connection: string; organizationId: string; at: string }>;
  /**
   * Each organization's kept-fresh streams as the daemon last planned them (docs/daemon.md,
   * "Freshness"): changes a day, state (`budget`: delayed because the day runs short), the
   * interval now, the next poll and the predicted staleness.
   */
  freshness?: LiveFreshness[];
}

export interface LiveFreshness {
  connection: string;
  organizationId: string;
  /** Even the longest intervals do not fit what is left of the day. */
  short: boolean;
  streams: Array<{
    stream: string;
    state: string;
    changesPerDay: number | null;
    intervalMinutes: number;
    nextPollAt: string;
    p95Minutes: number | null;
  }>;
}
