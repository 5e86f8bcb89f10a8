import { connectionLimits } from '../api/client.js';
import { nextQuotaReset, quotaDay } from '../api/quota-day.js';
import { dailyBudget } from '../config/plans.js';
import { type Family } from '../catalog/families.js';
import type { Config } from '../config/schema.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { stateDb } from '../state/tables.js';
import { estimateJob, loadSnapshot, rowsNeeded } from './estimate.js';
import { resolveJobs, type JobClass, type KnownOrganization } from './jobs.js';

export interface PlannedJob {
  id: string;
  jobClass: JobClass;
  schedule: string;
  streams: number;
  fires: number;
  /** Estimated requests per run. */
  estimate: number;
  total: number;
}

export interface OrganizationPlan {
  connection: string;
  organizationId: string;
  /** The quota day planned (yyyy-mm-dd in the reset zone). */
  day: string;
  budget: number;
  jobs: PlannedJob[];
  /** Requests the scheduled jobs need; backfill is not included (it takes what is left). */
  total: number;
  fits: boolean;
  leftForBackfill: number;
}

/** Organizations the warehouse knows (from earlier runs); the plan makes no API call. */
export async function knownOrganizations(config: Config, warehouse: Warehouse): Promise<KnownOrganization[]> {
  const rows = await stateDb(warehouse.db).selectFrom('_svcsync_organizations').selectAll().execute();
  const byKey = new Map<string, KnownOrganization>();
  for (const r of rows) {
    if (Number(r.is_active ?? 1) === 0) continue;
    const c = config.connections.find((x) => x.name === r.connection);
    if (!c || !c.families.includes(r.family as Family)) continue;
    const k = `${r.connection}|${r.organization_id}`;
    const o = byKey.get(k) ?? { connection: r.connection, organizationId: r.organization_id, families: [] };
    o.families.push(r.family as Family);
    byKey.set(k, o);
  }
  return [...byKey.values()];
}

/**
 * What the next full quota day of the schedule costs per organization: every job's fires in
 * that day times its estimate, against the organization's budget (quota less reserve).
 */
export async function planNextDay(
  config: Config,
  warehouse: Warehouse,
  now: number,
  options: { backfill?: boolean } = {},
): Promise<OrganizationPlan[]> {
  const orgs = await knownOrganizations(config, warehouse);
  const jobs = resolveJobs(config, orgs, { backfill: options.backfill ?? config.daemon.backfill });
  const out: OrganizationPlan[] = [];
  for (const org of orgs) {
    const connection = config.connections.find((c) => c.name === org.connection)!;
    const zone = connection.quota_reset_time_zone;
    const from = nextQuotaReset(now, zone);
    const to = nextQuotaReset(from + 1, zone);
    const mine = jobs.filter((j) => j.connection === org.connection && j.organizationId === org.organizationId);
    const snap = await loadSnapshot(warehouse, org.connection, org.organizationId, { rowsFor: [...new Set(mine.flatMap(rowsNeeded))] });
    const planned: PlannedJob[] = [];
    for (const j of mine) {
      // The day starts at the reset instant itself: a fire at midnight belongs to it.
      const fires = j.cron.between(from - 1, to - 1).length;
      const estimate = estimateJob(j, snap, config.sync.per_page);
      planned.push({
        id: j.id,
        jobClass: j.jobClass,
        schedule: j.cron.toString(),
        streams: j.streams.length,
        fires,
        estimate,
        total: j.jobClass === 'backfill' ? 0 : fires * estimate,
      });
    }
    const budget = dailyBudget(connectionLimits(connection));
    const total = planned.reduce((a, p) => a + p.total, 0);
    out.push({
      connection: org.connection,
      organizationId: org.organizationId,
      day: quotaDay(from, zone),
      budget,
      jobs: planned,
      total,
      fits: total <= budget,
      leftForBackfill: Math.max(0, budget - total),
    });
  }
  return out;
}

export function renderPlan(plans: readonly OrganizationPlan[]): string {
  if (plans.length === 0) return 'No organizations known yet: run `svcsync check` or `svcsync sync` once, then plan again.\n';
  const lines: string[] = [];
  let warnings = 0;
  for (const p of plans) {
    const left = p.fits ? `, ${p.leftForBackfill} left for backfill` : '';
    lines.push(`${p.connection} / ${p.organizationId} — quota day ${p.day}: ${p.total} of ${p.budget} requests planned${left}`);
    for (const j of p.jobs) {
      const cost =
        j.jobClass === 'backfill' ? `takes what is left (about ${j.estimate} requests to go)` : `${j.fires} × ~${j.estimate} = ${j.total}`;
      lines.push(`  ${j.jobClass.padEnd(13)} ${j.schedule.padEnd(28)} ${String(j.streams).padStart(3)} streams  ${cost}`);
    }
    if (!p.fits) {
      warnings++;
      lines.push(
        `  WARNING: the schedule needs ${p.total} requests but the budget is ${p.budget}: ` +
          'lower-priority jobs (settings, reconcile) will be skipped and incremental runs may run out. ' +
          'Run incremental jobs less often, or raise the plan or limits.per_day.',
      );
    }
  }
  if (warnings) lines.push(`${warnings} organization(s) do not fit their daily budget.`);
  return lines.join('\n') + '\n';
}
