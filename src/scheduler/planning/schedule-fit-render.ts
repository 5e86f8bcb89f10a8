/**
 * A fit of `svcsync plan --fit` (src/scheduler/planning/schedule-fit.ts) as the command shows it:
 * the `schedules:` YAML the daemon reads, the same schedules as cron lines, and in words.
 */
import { REFERENCE_ORGANIZATION } from './plan.js';
import type { ConnectionFit, FitOrganization } from './schedule-fit.js';

const q = (s: string): string => JSON.stringify(s);

/** The `connections:` entries with their fitted `schedules:` (YAML the daemon reads). */
export function renderFitConfig(fits: readonly ConnectionFit[]): string {
  const lines = ['connections:'];
  for (const f of fits) {
    const s = f.schedules;
    lines.push(`  - name: ${f.connection}`, '    schedules:', `      time_zone: ${s.time_zone}`);
    for (const key of ['incremental', 'whole_read', 'settings', 'reconcile'] as const) if (s[key]) lines.push(`      ${key}: ${q(s[key])}`);
    if (s.streams) {
      lines.push('      streams:');
      for (const [tree, own] of Object.entries(s.streams)) {
        const parts = (['incremental', 'reconcile'] as const).flatMap((k) => (own[k] ? [`${k}: ${q(own[k])}`] : []));
        lines.push(`        ${tree}: { ${parts.join(', ')} }`);
      }
    }
  }
  return lines.join('\n') + '\n';
}

/**
 * The same schedules as cron lines: one `svcsync sync` per schedule, naming its streams (a
 * tree's child streams with it), `--wait` so that two lines due together take turns on an
 * organization instead of one skipping it as busy, `--cycle` on the trees read whole.
 */
export function renderFitCron(fits: readonly ConnectionFit[], options: { command: string; log?: string }): string[] {
  const log = options.log ?? 'sync.log';
  const lines: string[] = [];
  for (const f of fits) {
    const only = fits.length > 1 ? ` --connection ${f.connection}` : '';
    const groups = new Map<string, { expression: string; reconcile: boolean; cycle: boolean; every: number; streams: string[] }>();
    const add = (expression: string, reconcile: boolean, cycle: boolean, every: number, streams: readonly string[]): void => {
      const key = `${reconcile ? 'r' : 'i'}|${cycle ? 'c' : ''}|${expression}`;
      const g = groups.get(key) ?? { expression, reconcile, cycle, every, streams: [] };
      g.streams.push(...streams);
      groups.set(key, g);
    };
    for (const t of f.trees) {
      // A tree read whole follows its slow cycle, as the daemon's runs do and as its cost was fitted.
      add(t.incremental, false, t.kind === 'whole', t.every, t.streams);
      if (t.reconcile) add(t.reconcile, true, false, 0, t.streams);
    }
    const ordered = [...groups.values()].sort(
      (a, b) => Number(a.reconcile) - Number(b.reconcile) || a.every - b.every || a.expression.localeCompare(b.expression),
    );
    for (const g of ordered) {
      let mode = g.reconcile ? 'sync --reconcile' : 'sync';
      if (g.cycle) mode += ' --cycle';
      lines.push(`${g.expression}  ${options.command} ${mode}${only} --wait --stream ${g.streams.join(',')} >> ${log} 2>&1`);
    }
  }
  return lines;
}

function every(minutes: number): string {
  if (minutes < 60) return `every ${minutes} min`;
  if (minutes === 1440) return 'once a day';
  return minutes === 60 ? 'every hour' : `every ${minutes / 60} h`;
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** What a connection's daily quota is: its plan's, `limits.per_day` in its place, or unlimited. */
function quotaLabel(f: ConnectionFit): string {
  if (f.unlimited) return `unlimited daily quota: limits.per_day ${f.limitsPerDay}`;
  return f.limitsPerDay === null ? `${f.plan} plan` : `${f.plan} plan, limits.per_day ${f.limitsPerDay}`;
}

/** An organization's busiest day under the fit, against its budget. */
function verdictOf(o: FitOrganization): string {
  if (o.unlimited) return `${o.total} requests on the busiest quota day (${o.day}); the daily quota is unlimited`;
  return o.fits
    ? `fits: ${o.total} of ${o.budget} requests on the busiest quota day (${o.day}), ${o.budget - o.total} to spare for changes`
    : `DOES NOT FIT: ${o.total} of ${o.budget} requests on ${o.day} even at the slowest schedules; ` +
        'sync fewer streams (connections[].streams) or raise the plan';
}

/**
 * One line per organization and its verdict. Organizations not synced yet are planned alike
 * (a connection that names three gets three identical plans): they share one line.
 */
function organizationLines(f: ConnectionFit, referenceRecords: number): string[] {
  const lines: string[] = [];
  const planned = new Map<string, string[]>();
  for (const o of f.organizations) {
    const verdict = verdictOf(o);
    if (o.reference) planned.set(verdict, [...(planned.get(verdict) ?? []), o.organizationId]);
    else {
      const assumed = o.assumed ? ` (lists not synced yet assumed at ${referenceRecords} records)` : '';
      lines.push(`  organization ${o.organizationId}: ${verdict}${assumed}`);
    }
  }
  for (const [verdict, ids] of planned) {
    const named = ids.filter((id) => id !== REFERENCE_ORGANIZATION);
    if (named.length < ids.length) lines.push(`  a reference organization (${referenceRecords} records a list): ${verdict}`);
    if (named.length)
      lines.push(
        `  organization${named.length > 1 ? 's' : ''} ${named.join(', ')} (not synced yet, ${referenceRecords} records a list): ${verdict}`,
      );
  }
  return lines;
}

/** The fit in words: per connection its trees' schedules, and each organization's busiest day against its budget. */
export function renderFitSummary(fits: readonly ConnectionFit[], safety: number, referenceRecords: number): string {
  const lines: string[] = [];
  for (const f of fits) {
    lines.push(`${f.connection} (${quotaLabel(f)}):`);
    for (const t of f.trees) {
      const children = t.streams.length > 1 ? ` (with ${t.streams.slice(1).join(', ')})` : '';
      const weekday = t.reconcile && !t.reconcile.endsWith('*') ? WEEKDAYS[Number(t.reconcile.split(' ')[4])] : null;
      const reconcile = t.reconcile ? `; reconcile ${weekday ? `on ${weekday}s` : 'nightly'}` : '';
      lines.push(`  ${every(t.every).padEnd(14)} ${t.tree}${children}${reconcile}`);
    }
    lines.push(...organizationLines(f, referenceRecords));
  }
  lines.push(`Planned to at most the budget ÷ ${safety} (daemon.budget_safety), leaving the rest for changed records' extra requests.`);
  return lines.join('\n') + '\n';
}
