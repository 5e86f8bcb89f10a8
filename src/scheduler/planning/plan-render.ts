import { freshLines } from './fresh-plan.js';
import { REFERENCE_RECORDS } from './estimate.js';
import { REFERENCE_ORGANIZATION, type OrganizationPlan, type PlannedJob } from './plan.js';

/** `svcsync plan` in words: each organization's busiest day against its budget, its jobs, its kept-fresh streams. */

/** A reconcile's two parts: list pages each run, and its night's share of every parent's child lists. */
function reconcileLine(r: NonNullable<PlannedJob['reconcile']>): string {
  const lists = `list pages ~${r.lists} a run`;
  if (r.children === 0) return `${lists}; no child lists`;
  if (r.everyDays <= 0) return `${lists} + every parent's child lists ~${r.children} a run (sync.reconcile_children_every_days: 0)`;
  return `${lists} + a ${r.everyDays}-day rolling re-read of every parent's child lists (~${r.children} in all): ~${r.perDay} a night`;
}

/** One organization's plan in words, after its name: the busiest day against the budget, then its jobs. */
function planLines(p: OrganizationPlan): string[] {
  const lines: string[] = [];
  if (p.unlimited) {
    lines.push(` — busiest quota day ${p.day}: ${p.total} requests planned; the daily quota is unlimited`);
    lines.push(`  a first sync or backfill of everything: ~${p.firstSync.requests} requests, no daily quota to wait for`);
  } else {
    const left = p.fits ? `, ${p.leftForBackfill} left for backfill` : '';
    lines.push(` — busiest quota day ${p.day}: ${p.total} of ${p.budget} requests planned${left}`);
    const days = p.firstSync.days < 1 ? 'within a day' : `about ${p.firstSync.days.toFixed(1)} days`;
    lines.push(`  a first sync or backfill of everything: ~${p.firstSync.requests} requests, ${days} at ${p.budget} a day`);
  }
  for (const j of p.jobs) {
    const cost =
      j.jobClass === 'backfill' ? `takes what is left (about ${j.estimate} requests to go)` : `${j.fires} × ~${j.estimate} = ${j.total}`;
    lines.push(`  ${j.jobClass.padEnd(13)} ${j.schedule.padEnd(28)} ${String(j.streams).padStart(3)} streams  ${cost}`);
    if (j.reconcile) lines.push(`    ${reconcileLine(j.reconcile)}`);
  }
  lines.push(...freshLines(p));
  for (const r of p.shortcuts)
    lines.push(`  ${r.assumption} does not hold (${r.stream}): reading ${r.longWay} adds ~${r.extraRequestsPerDay} requests a day`);
  if (!p.fits)
    lines.push(
      `  WARNING: the schedule needs ${p.need} requests but the budget is ${p.budget}: ` +
        'lower-priority jobs (settings, reconcile) will be skipped and incremental runs may run out. ' +
        'Run `svcsync plan --fit` for schedules that fit, or raise the plan or limits.per_day.',
    );
  return lines;
}

/**
 * Every organization's plan. Organizations not synced yet are planned alike (a connection that
 * names three gets three identical plans): they share one block, which names them all.
 */
export function renderPlan(plans: readonly OrganizationPlan[], referenceRecords = REFERENCE_RECORDS): string {
  if (plans.length === 0) return 'No organizations known yet: run `svcsync check` or `svcsync sync` once, then plan again.\n';
  const blocks = new Map<string, { connection: string; ids: string[]; reference: boolean; lines: string[] }>();
  for (const [i, p] of plans.entries()) {
    const lines = planLines(p);
    const key = p.reference ? `${p.connection}\n${lines.join('\n')}` : String(i);
    const block = blocks.get(key) ?? { connection: p.connection, ids: [], reference: p.reference, lines };
    block.ids.push(p.organizationId === REFERENCE_ORGANIZATION ? 'a reference organization' : p.organizationId);
    blocks.set(key, block);
  }
  const out: string[] = [];
  for (const b of blocks.values()) {
    const who = `${b.connection} / ${b.ids.join(', ')}${b.reference ? ' (not synced yet)' : ''}`;
    out.push(`${who}${b.lines[0]!}`, ...b.lines.slice(1));
  }
  const warnings = plans.filter((p) => !p.fits).length;
  if (plans.some((p) => p.assumed))
    out.push(`Lists the warehouse has not synced yet are assumed to hold ${referenceRecords} records each (--records N changes it).`);
  if (warnings) out.push(`${warnings} organization(s) do not fit their daily budget.`);
  return out.join('\n') + '\n';
}
