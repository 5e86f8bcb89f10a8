/**
 * When a pass re-reads every parent's child lists, and not only the changed parents'.
 * Deletions of top-level records are found by every reconcile from the list pages alone; child
 * rows (a contact's persons, a credit's refunds, a project's tasks) are re-read on a slower
 * cycle, since reading them costs one request per parent (docs/assumptions.md, A25). The
 * cycle rolls: each day of it re-reads the parents whose place falls on that day, so an
 * organization pays about 1/N of its child lists a day instead of all of them on one day.
 */

const DAY_MS = 86_400_000;

/**
 * Slack on the cycle: a daily reconcile that starts a little earlier than the one that re-read
 * the children (a slower run, a queue) still counts as a full cycle on, not one more day.
 */
const SLACK_MS = 3_600_000;

/**
 * Whether a pass at `now` re-reads every parent's children: forced (`sync --reconcile
 * --deep`), never done for the stream (`last` null), a cycle of 0 days (every pass), or
 * `everyDays` past the last time (less an hour's slack): the cycle has not rolled for a whole
 * turn (the daemon was stopped), so every parent is overdue.
 */
export function childrenRereadDue(last: string | null, now: number, everyDays: number, forced = false): boolean {
  if (forced || last === null || everyDays <= 0) return true;
  const at = Date.parse(last);
  if (!Number.isFinite(at)) return true;
  return now - at >= everyDays * DAY_MS - SLACK_MS;
}

/**
 * A parent's day in a cycle of `everyDays` days: FNV-1a over the id as the API sent it, so the
 * same parent keeps its day across runs and processes, and parents spread evenly over the days.
 */
export function cycleDayOf(id: string, everyDays: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % everyDays;
}

/**
 * The days of the cycle a pass starting at `startedAt` covers: every UTC day after the last
 * re-read's day up to the pass's own (a daily reconcile covers one; one missed covers two). The
 * pass's start, not the clock, so a resumed pass covers the same days. Empty when the last
 * re-read was the same day.
 */
export function cycleDaysCovered(last: string, startedAt: string, everyDays: number): Set<number> {
  const from = Math.floor(Date.parse(last) / DAY_MS);
  const to = Math.floor(Date.parse(startedAt) / DAY_MS);
  const days = new Set<number>();
  for (let d = from + 1; d <= to && days.size < everyDays; d++) days.add(d % everyDays);
  return days;
}

/**
 * Which parents a pass that is not re-reading every parent still re-reads: those whose day of
 * the cycle it covers. Null when it covers none (only the changed parents' children are read).
 */
export function childrenSlice(last: string | null, startedAt: string, everyDays: number): ((id: string) => boolean) | null {
  if (last === null || everyDays <= 0 || !Number.isFinite(Date.parse(last))) return null;
  const days = cycleDaysCovered(last, startedAt, everyDays);
  if (days.size === 0) return null;
  return (id) => days.has(cycleDayOf(id, everyDays));
}
