import type { LiveStatus, StatusDocument, StatusOrganization, StatusStream } from './status-document.js';

/**
 * The daemon's status page (`GET /`): rendered on the server from the same document as
 * `/status.json` and `svcsync status --json`, with a little inline script for the filter box
 * and the refresh. No external assets, so it works offline and behind any proxy.
 */

export type Freshness = 'fresh' | 'late' | 'stale' | 'never' | 'unscheduled';

/** How a stream's last success compares with its schedule: fresh within 1.5 periods (plus a minute), late within 3, then stale. */
export function freshness(stream: Pick<StatusStream, 'lastSuccessAt' | 'expectedEverySeconds'>, now: number): Freshness {
  if (!stream.lastSuccessAt) return 'never';
  if (stream.expectedEverySeconds === null) return 'unscheduled';
  const age = (now - Date.parse(stream.lastSuccessAt)) / 1000;
  if (age <= stream.expectedEverySeconds * 1.5 + 60) return 'fresh';
  if (age <= stream.expectedEverySeconds * 3 + 60) return 'late';
  return 'stale';
}

export type Health = 'failing' | 'stale' | 'waiting' | 'ok';
const HEALTH_ORDER: Record<Health, number> = { failing: 0, stale: 1, waiting: 2, ok: 3 };

/** An organization's worst state: a stream whose last run failed, then one stale, then one never synced. */
export function health(org: StatusOrganization, now: number): Health {
  if (org.streams.some((s) => s.lastStatus !== null && s.lastStatus !== 'ok' && s.lastError)) return 'failing';
  const f = org.streams.map((s) => freshness(s, now));
  if (f.includes('stale')) return 'stale';
  if (f.includes('never') || org.streams.length === 0) return 'waiting';
  return 'ok';
}

/** Failing and stale organizations first, then by connection and name. */
export function sortForPage(orgs: readonly StatusOrganization[], now: number): StatusOrganization[] {
  return [...orgs].sort(
    (a, b) =>
      HEALTH_ORDER[health(a, now)] - HEALTH_ORDER[health(b, now)] ||
      a.connection.localeCompare(b.connection) ||
      (a.name ?? a.organizationId).localeCompare(b.name ?? b.organizationId),
  );
}

const esc = (v: string | number | null | undefined): string =>
  String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** "3 min", "2 h", "5 d". */
export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1rem 2rem;color:#222}
h1{font-size:1.3rem;margin:0 0 .3rem}
.meta{color:#666;margin-bottom:.8rem}
input{font:inherit;padding:.3rem .5rem;width:24rem;margin-bottom:.8rem}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #eee;vertical-align:top}
tr.org td{background:#f6f6f6;border-top:2px solid #ddd;font-weight:600}
.failing{color:#b00020}.stale{color:#b35c00}.waiting{color:#666}.ok{color:#1b7f3b}
.f-fresh{color:#1b7f3b}.f-late{color:#b35c00}.f-stale{color:#b00020}.f-never,.f-unscheduled{color:#777}
.bar{display:inline-block;width:8rem;height:.7rem;background:#eee;border-radius:3px;vertical-align:middle;overflow:hidden}
.bar span{display:block;height:100%;background:#3b82f6}.bar span.high{background:#d97706}.bar span.full{background:#b00020}
.err{font-weight:400;color:#b00020;white-space:pre-wrap;font-size:12px}
.num{text-align:right;font-variant-numeric:tabular-nums}
`;

// Filters organization groups by their text, and reloads every 30 s with the filter kept in the URL.
const SCRIPT = `
const box=document.getElementById('filter');
function apply(){const q=box.value.toLowerCase();
for(const g of document.querySelectorAll('tbody[data-org]'))
g.hidden=q!==''&&!g.textContent.toLowerCase().includes(q)&&!g.dataset.org.includes(q);}
box.addEventListener('input',apply);apply();
setTimeout(()=>location.replace(location.pathname+(box.value?'?q='+encodeURIComponent(box.value):'')),30000);
`;

function barClass(blocked: boolean, share: number): string {
  if (blocked || share >= 1) return 'full';
  return share >= 0.8 ? 'high' : '';
}

function budgetBar(o: StatusOrganization): string {
  const share = o.budget > 0 ? Math.min(1, o.requestsToday / o.budget) : 0;
  const cls = barClass(o.blockedUntil !== null, share);
  const title = o.blockedUntil ? `quota spent until ${o.blockedUntil}` : `${o.requestsToday} of ${o.budget} requests today`;
  return (
    `<span class="bar" title="${esc(title)}" role="meter" aria-valuenow="${o.requestsToday}" aria-valuemax="${o.budget}">` +
    `<span class="${cls}" style="width:${(share * 100).toFixed(1)}%"></span></span> ${o.requestsToday} / ${o.budget}`
  );
}

function streamRow(s: StatusStream, now: number): string {
  const f = freshness(s, now);
  const last = s.lastSuccessAt ? `${esc(s.lastSuccessAt)} (${age(now - Date.parse(s.lastSuccessAt))} ago)` : 'never';
  const error = s.lastError && s.lastStatus !== 'ok' ? `<div class="err">${esc(s.lastError)}</div>` : '';
  return (
    `<tr><td>${esc(s.stream)}</td><td class="f-${f}" data-freshness="${f}">${last}</td>` +
    `<td class="num">${s.rows}</td><td>${esc(s.lastStatus ?? '—')}${s.inProgress ? ` · ${esc(s.inProgress)}` : ''}${error}</td></tr>`
  );
}

const shortJob = (id: string): string => id.split('/').slice(2).join('/');

function hookState(o: StatusOrganization, live: LiveStatus | null): string {
  const mine = (x: { connection: string; organizationId: string }): boolean =>
    x.connection === o.connection && x.organizationId === o.organizationId;
  if (!live?.hooks.find((x) => x.connection === o.connection)?.active) return 'off';
  const fallback = live.hookFallbacks.find(mine);
  if (fallback) return `on — fell back to the schedule: ${fallback.reason}`;
  const due = live.hookRunsDue.find(mine);
  return due ? `on — run due ${due.at}` : 'on';
}

function nextRun(o: StatusOrganization, live: LiveStatus | null): string {
  const next = live?.nextRuns
    .filter((r) => r.connection === o.connection && r.organizationId === o.organizationId)
    .sort((a, b) => a.at.localeCompare(b.at))[0];
  if (next) return `${next.at.slice(0, 16).replace('T', ' ')} (${shortJob(next.job)})`;
  return o.nextRuns[0]?.at ?? '—';
}

/** One organization: a header row (health, budget, next run, what runs, webhooks) and a row per stream. */
function organizationGroup(o: StatusOrganization, live: LiveStatus | null, now: number): string {
  const h = health(o, now);
  const running = live?.running.filter((r) => r.connection === o.connection && r.organizationId === o.organizationId) ?? [];
  const label = `${o.name ?? ''} ${o.organizationId} ${o.connection}`.toLowerCase();
  const what = running.length ? running.map((r) => shortJob(r.job)).join(', ') : 'nothing';
  const header =
    `<tr class="org"><td colspan="4"><span class="${h}">● ${esc(h)}</span> ${esc(o.name ?? o.organizationId)} ` +
    `<small>(${esc(o.connection)} / ${esc(o.organizationId)}; ${esc(o.families.join(', '))})</small><br>` +
    `<small>budget ${budgetBar(o)} · next run ${esc(nextRun(o, live))} · running ${esc(what)} · ` +
    `webhooks ${esc(hookState(o, live))}</small></td></tr>`;
  return `<tbody data-org="${esc(label)}" data-health="${h}">${header}${o.streams.map((s) => streamRow(s, now)).join('')}</tbody>`;
}

/** The whole page. `query` pre-fills the filter box (it survives the refresh). */
export function renderStatusPage(doc: StatusDocument, query: string, now: number): string {
  const live = doc.daemon;
  const groups = sortForPage(doc.organizations, now).map((o) => organizationGroup(o, live, now));
  const counts = (['failing', 'stale', 'waiting', 'ok'] as const)
    .map((h) => [h, doc.organizations.filter((o) => health(o, now) === h).length] as const)
    .filter(([, n]) => n > 0)
    .map(([h, n]) => `<span class="${h}">${n} ${h}</span>`)
    .join(' · ');
  const queue = doc.queue ? ` · worker queue: ${doc.queue.waiting} waiting, ${doc.queue.running} running` : '';
  const up = live?.startedAt ? ` · daemon up since ${esc(live.startedAt)}` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svcsync status</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${STYLE}</style></head>
<body><h1>svcsync status</h1>
<div class="meta">${doc.organizations.length} organizations: ${counts || 'none yet'} · generated ${esc(doc.generatedAt)}${up}${queue}
 · <a href="status.json">status.json</a></div>
<input id="filter" type="search" placeholder="Filter by organization, connection or stream" value="${esc(query)}" aria-label="Filter">
<table><thead><tr><th>stream</th><th>last success</th><th class="num">rows</th><th>last run</th></tr></thead>
${groups.join('\n')}
</table>
<script>${SCRIPT}</script>
</body></html>
`;
}
