import { freshness, sortOrganizations, streamFailed, type Freshness, type Health } from './health.js';
import { freshnessSection, shortNote } from './freshness-section.js';
import { count, esc, timeTag } from './page-format.js';
import type { LiveFreshness } from './live-status.js';
import { pageAssets } from './status-page-assets.js';
export { age, count, timeTag } from './page-format.js';
import type { StatusConnection, StatusDocument, StatusOrganization, StatusStream } from './status-document.js';

/**
 * The status page (`GET /`) of the daemon and of each worker: rendered on the server from the
 * same document as `/status.json` and `svcsync status --json`. The connections first (one that
 * cannot authorize shows its error and hint once), then a summary of the fleet (organizations
 * by state; a freshness heat map of organizations × streams with the requests used today
 * against the budget beneath, one column per organization; click to filter), then one line per
 * organization, failing and stale first, whose streams load when it is opened. A little inline
 * script (status-page/status-page.js) draws the map and filters; nothing comes from elsewhere, so it works offline.
 */

const STATES: readonly Health[] = ['failing', 'stale', 'waiting', 'ok'];

/** One letter per stream on the heat map: its freshness, or `X` when its last run failed, `.` when the organization has no such stream. */
const CODE: Record<Freshness | 'failed', string> = { fresh: 'F', late: 'L', stale: 'S', never: 'N', unscheduled: 'U', failed: 'X' };

export function streamCode(s: StatusStream, now: number): string {
  return streamFailed(s) ? CODE.failed : CODE[freshness(s, now)];
}

function barClass(blocked: boolean, share: number): string {
  if (blocked || share >= 1) return 'full';
  return share >= 0.8 ? 'high' : '';
}

function budgetBar(o: StatusOrganization, now: number): string {
  const share = o.budget > 0 ? Math.min(1, o.requestsToday / o.budget) : 0;
  const cls = barClass(o.blockedUntil !== null, share);
  const projected = o.projectedToday;
  const end = projected
    ? `, <span${projected.fits ? '' : ' class="over"'} data-projected>~${count(projected.requests)} by day's end</span>`
    : '';
  const blocked = o.blockedUntil ? `, quota spent: resumes ${timeTag(o.blockedUntil, now)}` : '';
  return (
    `<span class="bar" role="meter" aria-label="requests today" aria-valuenow="${o.requestsToday}" aria-valuemax="${o.budget}">` +
    `<span${cls ? ` class="${cls}"` : ''} style="width:${(share * 100).toFixed(1)}%"></span></span> ` +
    `${count(o.requestsToday)} / ${count(o.budget)}${end}${blocked}`
  );
}

const shortJob = (id: string): string => id.split('/').slice(2).join('/');
const orgKey = (x: { connection: string; organizationId: string | null }): string => `${x.connection}\u0000${x.organizationId ?? ''}`;

function connectionItem(c: StatusConnection, now: number): string {
  const a = c.authorization;
  const orgs = `${count(c.organizations)} organization${c.organizations === 1 ? '' : 's'}`;
  const hooks = `webhooks ${c.webhooks ? 'on' : 'off'}`;
  let what: string;
  if (c.state === 'failing') {
    const since = a?.failingSince ? ` since ${timeTag(a.failingSince, now)}` : '';
    what =
      ` — cannot authorize${since}: nothing of it syncs until this is fixed` +
      `<div class="err">${esc(a?.error ?? 'the service refused its token')}</div>` +
      (a?.hint ? `<div class="hint">→ ${esc(a.hint)}</div>` : '');
  } else if (c.state === 'ok') what = ` — authorized ${timeTag(a!.at, now)}`;
  else what = ' — not checked yet (no run has used its token)';
  return (
    `<li class="conn" data-connection="${esc(c.connection)}" data-state="${c.state}"><b class="${c.state}">● ${c.state}</b> ` +
    `<b>${esc(c.connection)}</b>${what}<div class="sub">${orgs} · ${esc(c.families.join(', '))} · ${hooks}</div></li>`
  );
}

/** One organization, collapsed to a line: state, name, why, last success, budget, next run; its streams load when opened. */
function organizationItem(
  o: StatusOrganization,
  axis: ReadonlyMap<string, number>,
  nextByOrg: ReadonlyMap<string, { at: string; job: string }>,
  runningByOrg: ReadonlyMap<string, string[]>,
  freshByOrg: ReadonlyMap<string, LiveFreshness>,
  now: number,
): string {
  const codes = Array.from({ length: axis.size }, () => '.');
  for (const s of o.streams) codes[axis.get(s.stream)!] = streamCode(s, now);
  const last = o.streams.reduce<string | null>(
    (a, s) => (s.lastSuccessAt && (!a || Date.parse(s.lastSuccessAt) > Date.parse(a)) ? s.lastSuccessAt : a),
    null,
  );
  const next = nextByOrg.get(orgKey(o)) ?? (o.nextRuns[0] ? { at: o.nextRuns[0].at, job: o.nextRuns[0].job } : null);
  const running = runningByOrg.get(orgKey(o));
  const p = o.projectedToday;
  const data =
    `data-c="${esc(o.connection)}" data-id="${esc(o.organizationId)}" data-state="${o.state}" data-f="${codes.join('')}" ` +
    `data-u="${o.requestsToday}" data-b="${o.budget}"${p ? ` data-p="${p.requests}"` : ''}${o.blockedUntil ? ' data-blocked' : ''}`;
  const short = shortNote(freshByOrg.get(orgKey(o)));
  const reason =
    (o.stateReason ? ` <span class="why">${esc(o.stateReason)}</span>` : '') + (short ? ` <span class="why">${esc(short)}</span>` : '');
  // A shortcut found wrong: which assumption, and what reading the long way now costs.
  const shortcuts = (o.shortcuts ?? [])
    .map((r) => {
      const text = `${r.assumption} does not hold for ${r.stream}: +${r.extraRequestsPerDay} requests a day`;
      return ` <span class="why" title="${esc(r.evidence)}">${esc(text)}</span>`;
    })
    .join('');
  let nextText = '';
  if (running) nextText = ` · running ${esc(running.join(', '))}`;
  else if (next) nextText = ` · next ${timeTag(next.at, now)} (${esc(next.job.includes('/') ? shortJob(next.job) : next.job)})`;
  return (
    `<details class="org" ${data}><summary><b class="${o.state}">● ${o.state}</b> <b>${esc(o.name ?? o.organizationId)}</b> ` +
    `<small>${esc(o.connection)} / ${esc(o.organizationId)}</small>${reason}${shortcuts}<span class="right">` +
    `${last ? `synced ${timeTag(last, now)}` : 'never synced'} · ${budgetBar(o, now)}${nextText}</span></summary></details>`
  );
}

function stateChips(doc: StatusDocument): string {
  const chips = STATES.map((h) => [h, doc.organizations.filter((o) => o.state === h).length] as const)
    .filter(([, n]) => n > 0)
    .map(([h, n]) => `<button type="button" class="chip ${h}" data-state="${h}" aria-pressed="false">${count(n)} ${h}</button>`);
  const failing = doc.connections.filter((c) => c.state === 'failing').length;
  const conns = failing
    ? ` · <span class="failing">${count(failing)} of ${count(doc.connections.length)} connections cannot authorize</span>`
    : '';
  return (
    `<div id="states">${count(doc.organizations.length)} organizations: ` +
    `${chips.join(' ') || 'none yet'} <button type="button" class="chip" data-state="" aria-pressed="true">all</button>${conns}</div>`
  );
}

/** The whole page. `query` pre-fills the filter box (the script keeps it, and the state filter, in the address). */
export function renderStatusPage(doc: StatusDocument, query: string, now: number): string {
  const live = doc.daemon;
  // The heat map's rows: every stream any organization has, in the catalog's family order.
  const names = [...new Set(doc.organizations.flatMap((o) => o.streams.map((s) => s.stream)))].sort();
  const axis = new Map(names.map((n, i) => [n, i]));
  const nextByOrg = new Map<string, { at: string; job: string }>();
  for (const r of live?.nextRuns ?? []) {
    const k = orgKey(r);
    const had = nextByOrg.get(k);
    if (!had || r.at < had.at) nextByOrg.set(k, { at: r.at, job: r.job });
  }
  const runningByOrg = new Map<string, string[]>();
  for (const r of live?.running ?? []) runningByOrg.set(orgKey(r), [...(runningByOrg.get(orgKey(r)) ?? []), shortJob(r.job)]);
  const freshByOrg = new Map((live?.freshness ?? []).map((f) => [orgKey(f), f]));
  const items = sortOrganizations(doc.organizations).map((o) => organizationItem(o, axis, nextByOrg, runningByOrg, freshByOrg, now));
  const orgNames = new Map(doc.organizations.map((o) => [orgKey(o), o.name ?? o.organizationId]));
  const fresh = freshnessSection(live?.freshness, (f) => orgNames.get(orgKey(f)) ?? f.organizationId, now);
  const queue = doc.queue ? ` · worker queue: ${count(doc.queue.waiting)} waiting, ${count(doc.queue.running)} running` : '';
  const up = live?.startedAt ? ` · daemon up since ${timeTag(live.startedAt, now)}` : '';
  const failing = doc.connections.some((c) => c.state === 'failing') || doc.organizations.some((o) => o.state === 'failing');
  const { style, script } = pageAssets();
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svcsync status</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${style}</style></head>
<body data-failing="${failing}"><h1>svcsync status</h1>
<div class="meta">generated ${timeTag(doc.generatedAt, now)}${up}${queue} · <a href="status.json">status.json</a></div>
<section aria-label="Connections"><h2>Connections</h2><ul id="connections">
${doc.connections.map((c) => connectionItem(c, now)).join('\n')}
</ul></section>
<section aria-label="Summary"><h2>Organizations</h2>${stateChips(doc)}
<figure id="fleet"><canvas id="map" data-streams="${esc(names.join(','))}" role="img"
aria-label="Freshness of each organization's streams against the schedule, and requests used today against the budget"></canvas>
<div id="tip" hidden></div>
<figcaption>One column per organization, in the order of the list below. Top: each stream's freshness against its schedule
(<i class="k F"></i> fresh <i class="k L"></i> late <i class="k S"></i> stale <i class="k X"></i> failed <i class="k N"></i> never synced
<i class="k U"></i> not scheduled). Bottom: requests used today against the daily budget (the line), and <i class="k P"></i> where the
runs still scheduled today take it. Click a column to show that organization, a stream to show where it is not fresh.</figcaption></figure>
</section>
${fresh}
<section aria-label="Organization list"><input id="filter" type="search" value="${esc(query)}"
placeholder="Filter: name, id, connection or stream:NAME" aria-label="Filter"
title="An organization's name, id or connection, or stream:NAME for the organizations where that stream is not fresh">
<span id="shown"></span>
<div id="list">
${items.join('\n')}
</div></section>
<script>${script}</script>
</body></html>
`;
}
