/**
 * When a reconcile re-reads every parent's child lists, and not only the changed parents'.
 * Deletions of top-level records are found by every reconcile from the list pages alone; child
 * rows (a contact's persons, a credit's refunds) are re-read on this slower cycle, since
 * reading them costs one request per parent (docs/assumptions.md, A25).
 */

const DAY_MS = 86_400_000;

/**
 * Slack on the cycle: a daily reconcile that starts a little earlier than the one that re-read
 * the children (a slower run, a queue) still counts as a full cycle on, not one more day.
 */
const SLACK_MS = 3_600_000;

/**
 * Whether a reconcile at `now` re-reads every parent's children: forced (`sync --reconcile
 * --deep`), never done for the stream (`last` null), a cycle of 0 days (every reconcile), or
 * `everyDays` past the last time (less an hour's slack).
 */
export function childrenRereadDue(last: string | null, now: number, everyDays: number, forced = false): boolean {
  if (forced || last === null || everyDays <= 0) return true;
  const at = Date.parse(last);
  if (!Number.isFinite(at)) return true;
  return now - at >= everyDays * DAY_MS - SLACK_MS;
}
