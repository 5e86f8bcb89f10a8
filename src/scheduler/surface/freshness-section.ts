import type { LiveFreshness } from './live-status.js';
import { age, esc, timeTag } from './page-format.js';

/**
 * The status page's view of the daemon's freshness plan (docs/daemon.md, "Freshness"): per
 * organization and kept-fresh stream, how often it changes, how often it is polled now, when
 * next, and the staleness the plan predicts. A fleet's page shows only the organizations whose
 * day runs short (their quietest streams wait), so a thousand organizations stay one screen.
 */

/** Past this many organizations, the table lists only those whose day runs short. */
export const FRESHNESS_ROWS_ORGS = 20;

/** What each state means to the reader. */
const STATE_TEXT: Record<string, string> = {
  target: 'at its target',
  fresher: 'fresher than its target (spare budget)',
  quiet: 'quiet: no changes expected',
  budget: "delayed: the day's budget runs short",
};

const minutes = (m: number): string => age(m * 60_000);

/** The streams a short day delays, for the organization's line: null when its day holds its plan. */
export function shortNote(live: LiveFreshness | undefined): string | null {
  if (!live) return null;
  const delayed = live.streams.filter((s) => s.state === 'budget').map((s) => s.stream);
  if (!live.short && delayed.length === 0) return null;
  return delayed.length
    ? `budget short today: polled less often: ${delayed.join(', ')}`
    : "budget short today: every stream's target does not fit";
}

function rows(f: LiveFreshness, name: string, now: number): string[] {
  return f.streams.map(
    (s, i) =>
      `<tr data-state="${esc(s.state)}">${i === 0 ? `<th scope="rowgroup" rowspan="${f.streams.length}">${esc(name)}</th>` : ''}` +
      `<td>${esc(s.stream)}</td><td>${esc(STATE_TEXT[s.state] ?? s.state)}</td>` +
      `<td>${s.changesPerDay === null ? '—' : esc(s.changesPerDay)}</td><td>${minutes(s.intervalMinutes)}</td>` +
      `<td>${timeTag(s.nextPollAt, now)}</td><td>${s.p95Minutes === null ? '—' : minutes(s.p95Minutes)}</td></tr>`,
  );
}

/** The section, or '' when the daemon keeps no stream fresh (cron schedules, or a worker's page). */
export function freshnessSection(plans: readonly LiveFreshness[] | undefined, nameOf: (f: LiveFreshness) => string, now: number): string {
  if (!plans?.length) return '';
  const short = plans.filter((f) => shortNote(f) !== null);
  const shown = (plans.length > FRESHNESS_ROWS_ORGS ? short : plans).slice(0, FRESHNESS_ROWS_ORGS);
  const summary =
    `${plans.length} organization${plans.length === 1 ? '' : 's'} kept fresh; ` +
    (short.length ? `${short.length} short of budget today` : 'every day holds its plan') +
    (shown.length < plans.length ? ` (showing ${shown.length ? `${shown.length} short of budget` : 'none'})` : '');
  const table = shown.length
    ? `<table id="freshness-plan"><thead><tr><th>organization</th><th>stream</th><th>state</th><th>changes a day</th>` +
      `<th>polled every (now)</th><th>next poll</th><th>predicted p95 staleness</th></tr></thead>` +
      `<tbody>${shown.flatMap((f) => rows(f, nameOf(f), now)).join('\n')}</tbody></table>`
    : '';
  return `<section aria-label="Freshness"><h2>Freshness</h2><p id="freshness-summary">${esc(summary)}</p>${table}</section>`;
}
