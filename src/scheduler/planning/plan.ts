import { connectionLimits } from '../../api/client.js';
import { quotaDayAt, type QuotaDay } from '../../api/quota-day.js';
import { CATALOG } from '../../catalog/index.js';
import { qualifiedName, type StreamSpec } from '../../catalog/types.js';
import { type Family } from '../../catalog/families.js';
import { dailyBudget, unlimitedDaily } from '../../config/plans.js';
import { childrenCycleDays, wholeReadCycleDays } from '../../config/cycles.js';
import type { Config } from '../../config/schema.js';
import type { Logger } from '../../core/logger.js';
import { refutedShortcuts, type RefutedShortcut } from './shortcut-cost.js';
import { selectStreams } from '../../extractors/organization-sync.js';
import { detailIsEnabled } from '../../extractors/stream-pass.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { stateDb } from '../../state/tables.js';
import { liveRowCounts, modeOfCommand, signalledChildren, treeCost, type StreamSnapshot, type TreeCost } from './estimate.js';
import { countFires, type Cron } from '../timing/cron.js';
import { descendants, resolveJobs, type JobClass, type JobSpec, type KnownOrganization } from '../timing/jobs.js';
import { freshJobPlan, loadChangeRates, type FreshStreamPlan } from './fresh-plan.js';
import type { ChangeRates } from '../timing/change-model.js';

export interface PlannedJob {
  id: string;
  jobClass: JobClass;
  schedule: string;
  streams: number;
  /** Fires on the busiest quota day planned. */
  fires: number;
  /** Estimated requests per run (a reconcile: its list pages plus its children cycle averaged over the days between). */
  estimate: number;
  total: number;
  /** A reconcile's parts: its list pages each run, and a share of every parent's child lists, all of them once in `everyDays`. */
  reconcile?: { lists: number; children: number; everyDays: number; perDay: number };
}

export interface OrganizationPlan {
  connection: string;
  organizationId: string;
  /** No organization of the connection is known yet: planned for a reference organization of the catalog's streams. */
  reference: boolean;
  /** The busiest of the quota days planned (yyyy-mm-dd, the quota day's key). */
  day: string;
  budget: number;
  jobs: PlannedJob[];
  /** Requests the scheduled jobs are expected to spend on that day; backfill is not included (it takes what is left). */
  total: number;
  /**
   * What they need: `total` less the polls the freshness job buys with spare budget (it polls
   * more often only where the budget has room). `fits` holds this against the budget.
   */
  need: number;
  fits: boolean;
  leftForBackfill: number;
  /** Some list sizes were assumed (REFERENCE_RECORDS), not read from the warehouse. */
  assumed: boolean;
  /** Requests of reading everything whole (a first sync, a backfill), and the days it takes at the budget. */
  firstSync: { requests: number; days: number };
  /** Shortcuts a check found wrong for the organization, and what reading the long way costs a day (counted in `total`). */
  shortcuts: RefutedShortcut[];
  /** The daily quota is unlimited in practice (`UNLIMITED_PER_DAY`): the budget bounds nothing. */
  unlimited: boolean;
  /** The streams kept fresh on the busiest day: polls, requests and predicted staleness of each (docs/daemon.md, "Freshness"). */
  freshness: FreshStreamPlan[];
  /** Even the longest poll intervals do not fit the day: the changes alone need more than the budget leaves. */
  freshShort: boolean;
}

/** An organization to plan for, with what each of its trees costs. */
export interface PlanOrganization extends KnownOrganization {
  reference: boolean;
  budget: number;
  /** Its connection's daily quota is unlimited in practice (`UNLIMITED_PER_DAY`). */
  unlimited?: boolean;
  /** The reset zone of its connection, and the server's reset kept with its latest quota day. */
  zone: string;
  serverReset: number | null;
  costs: TreeCost[];
  /** Shortcuts a check found wrong (src/scheduler/shortcut-cost.ts); none when absent. */
  shortcuts?: RefutedShortcut[];
  /** Each kept-fresh tree's change rates, learned from the warehouse (absent: not synced yet, every hour counts as active). */
  rates?: ReadonlyMap<string, ChangeRates>;
}

/** The id a connection's reference organization is planned under when no organization of it is known. */
export const REFERENCE_ORGANIZATION = '(reference)';

/** Quota days a plan looks at: a week, so weekly schedules show on the day they fire. */
export const PLAN_DAYS = 7;

/** Organizations the warehouse knows (from earlier runs) that the configuration still syncs; the plan makes no API call. */
export async function knownOrganizations(config: Config, warehouse: Warehouse): Promise<KnownOrganization[]> {
  const rows = await stateDb(warehouse.db).selectFrom('_svcsync_organizations').selectAll().execute();
  const byKey = new Map<string, KnownOrganization>();
  for (const r of rows) {
    if (Number(r.is_active ?? 1) === 0) continue;
    const c = config.connections.find((x) => x.name === r.connection);
    if (!c || !c.families.includes(r.family as Family)) continue;
    if (c.organizations && !c.organizations.includes(r.organization_id)) continue;
    const k = `${r.connection}|${r.organization_id}`;
    const o = byKey.get(k) ?? { connection: r.connection, organizationId: r.organization_id, families: [] };
    o.families.push(r.family as Family);
    byKey.set(k, o);
  }
  return [...byKey.values()];
}

/** Each stream's state and the mode of the run that last touched it, keyed `connection|org|stream`. */
async function streamStates(warehouse: Warehouse): Promise<Map<string, StreamSnapshot>> {
  const db = stateDb(warehouse.db);
  const states = await db.selectFrom('_svcsync_streams').selectAll().execute();
  const runIds = [...new Set(states.map((s) => s.last_run_id).filter((x): x is string => Boolean(x)))];
  const commandOf = new Map<string, string>();
  for (let i = 0; i < runIds.length; i += 500) {
    const rows = await db
      .selectFrom('_svcsync_runs')
      .select(['run_id', 'command'])
      .where('run_id', 'in', runIds.slice(i, i + 500))
      .execute();
    for (const r of rows) commandOf.set(r.run_id, r.command);
  }
  const out = new Map<string, StreamSnapshot>();
  for (const st of states) {
    out.set(`${st.connection}|${st.organization_id}|${st.stream}`, {
      state: st,
      lastMode: modeOfCommand(st.last_run_id ? commandOf.get(st.last_run_id) : null),
      pending: { detail: 0, children: 0, backfillOrReconcile: 0 },
      rows: null,
    });
  }
  return out;
}

/** The server's reset kept with each organization's latest quota day (`_svcsync_usage.resets_at`). */
async function serverResets(warehouse: Warehouse): Promise<Map<string, number | null>> {
  const rows = await stateDb(warehouse.db)
    .selectFrom('_svcsync_usage')
    .select(['organization_id', 'day', 'resets_at'])
    .orderBy('day', 'desc')
    .execute();
  const out = new Map<string, number | null>();
  for (const r of rows) if (!out.has(r.organization_id)) out.set(r.organization_id, r.resets_at ? Date.parse(r.resets_at) : null);
  return out;
}

/**
 * Every organization the configuration syncs, with what each of its trees costs a run, from the
 * warehouse alone: the organizations earlier runs found, their list sizes and their streams'
 * last runs. A connection none of whose organizations is known yet is planned for one reference
 * organization of its families, whose lists hold `referenceRecords` (REFERENCE_RECORDS) each.
 */
export async function loadPlanOrganizations(
  config: Config,
  warehouse: Warehouse | null,
  options: { referenceRecords?: number; catalog?: readonly StreamSpec[]; now?: number } = {},
): Promise<PlanOrganization[]> {
  const catalog = options.catalog ?? CATALOG;
  const known = warehouse ? await knownOrganizations(config, warehouse) : [];
  const orgs: Array<KnownOrganization & { reference: boolean }> = known.map((o) => ({ ...o, reference: false }));
  // A connection that names its organizations gets a reference organization under each name.
  for (const c of config.connections)
    if (!known.some((o) => o.connection === c.name))
      for (const id of c.organizations ?? [REFERENCE_ORGANIZATION])
        orgs.push({ connection: c.name, organizationId: id, families: [...c.families], reference: true });
  const tops = catalog.filter((s) => !s.parent);
  // No warehouse yet (`svcsync plan` before the first sync): nothing is known of any list.
  const rows = warehouse ? await liveRowCounts(warehouse, tops) : new Map<string, number>();
  const states = warehouse ? await streamStates(warehouse) : new Map<string, StreamSnapshot>();
  const resets = warehouse ? await serverResets(warehouse) : new Map<string, number | null>();
  const refuted = warehouse ? await refutedShortcuts(config, warehouse, catalog) : [];
  const now = options.now ?? Date.now();
  const signalled = warehouse ? await signalledChildren(warehouse, config) : new Map<string, Set<string>>();
  const learned = new Map<string, Map<string, ChangeRates>>();
  if (warehouse)
    for (const o of orgs.filter((x) => !x.reference))
      learned.set(`${o.connection}|${o.organizationId}`, await loadChangeRates(warehouse, o, tops, now));
  return orgs.map((o) => {
    const connection = config.connections.find((c) => c.name === o.connection)!;
    const { top, allowed } = selectStreams(catalog, o.families, connection.streams);
    const state = (s: StreamSpec): StreamSnapshot | undefined => states.get(`${o.connection}|${o.organizationId}|${qualifiedName(s)}`);
    // A list's size is known once a run of it has finished (its table then holds what the API lists).
    const rowsOf = (s: StreamSpec): number | null =>
      state(s)?.state?.last_finished_at ? (rows.get(`${o.organizationId}|${qualifiedName(s)}`) ?? 0) : null;
    const costs = top.map((t) => {
      const names = new Set([qualifiedName(t), ...descendants(t, allowed, catalog)]);
      const streams = catalog.filter((s) => names.has(qualifiedName(s)));
      return treeCost(
        t,
        streams,
        { rows: rowsOf, state },
        {
          perPage: config.sync.per_page,
          referenceRecords: options.referenceRecords,
          catalog,
          wholeReadEveryDays: wholeReadCycleDays(config, connection.plan),
          detailEnabled: (s) => detailIsEnabled({ config }, s),
          signalled: signalled.get(`${o.connection}|${o.organizationId}`),
        },
      );
    });
    const limits = connectionLimits(connection);
    return {
      ...o,
      budget: dailyBudget(limits),
      unlimited: unlimitedDaily(limits),
      zone: connection.quota_reset_time_zone,
      serverReset: resets.get(o.organizationId) ?? null,
      costs,
      shortcuts: refuted.filter((r) => r.connection === o.connection && r.organizationId === o.organizationId),
      rates: learned.get(`${o.connection}|${o.organizationId}`),
    };
  });
}

/** The quota days from the next reset on: `count` of them, each with its start and end. */
export function quotaDaysAhead(
  now: number,
  zone: string,
  serverReset: number | null,
  count = PLAN_DAYS,
): Array<QuotaDay & { from: number }> {
  const out: Array<QuotaDay & { from: number }> = [];
  let from = quotaDayAt(now, zone, serverReset).resetsAt;
  for (let i = 0; i < count; i++) {
    const day = quotaDayAt(from, zone, serverReset);
    out.push({ ...day, from });
    from = day.resetsAt;
  }
  return out;
}

/** A reconcile job's parts: its trees' list pages, and their children cycle (requests once a cycle). */
export function reconcileParts(job: Pick<JobSpec, 'trees'>, costs: readonly TreeCost[]): { lists: number; children: number } {
  let lists = 0;
  let children = 0;
  for (const t of job.trees) {
    const c = costs.find((x) => x.tree === t);
    if (!c) continue;
    lists += c.reconcile ?? c.run;
    children += c.reconcileChildren ?? 0;
  }
  return { lists, children };
}

/**
 * What one tree's reconcile costs a day: its list pages, and its children cycle's share of a day
 * (`everyDays`; 0 re-reads the children on every run); null without a change field.
 */
export function reconcileEstimate(c: Pick<TreeCost, 'reconcile' | 'reconcileChildren'>, everyDays: number): number | null {
  if (c.reconcile === null) return null;
  const children = c.reconcileChildren ?? 0;
  return c.reconcile + (everyDays <= 0 ? children : Math.round(children / everyDays));
}

/** What a job's run costs: its trees' incremental runs; a backfill, every page and child list; a reconcile, `reconcileEstimate`. */
export function jobEstimate(job: Pick<JobSpec, 'jobClass' | 'trees'>, costs: readonly TreeCost[], everyDays = 7): number {
  let total = 0;
  for (const t of job.trees) {
    const c = costs.find((x) => x.tree === t);
    if (!c) continue;
    if (job.jobClass === 'backfill') total += c.reconcile === null ? c.run : c.reconcile + (c.reconcileChildren ?? 0);
    else if (job.jobClass === 'reconcile') total += reconcileEstimate(c, everyDays) ?? c.run;
    else total += c.run;
  }
  return total;
}

interface PlannedDay {
  day: string;
  total: number;
  need: number;
  fires: Map<string, number>;
  fresh: ReturnType<typeof freshJobPlan> | null;
}

/** One quota day: each cron job's fires times its estimate, then what the freshness job's polls and changes cost on top. */
function planDay(
  config: Config,
  org: PlanOrganization,
  jobs: readonly JobSpec[],
  estimates: Map<string, number>,
  day: { key: string; from: number; resetsAt: number },
  firesIn: (cron: Cron, from: number, to: number) => number,
): PlannedDay {
  const fires = new Map<string, number>();
  let total = 0;
  for (const j of jobs) {
    if (j.fresh) continue;
    // The day starts at the reset instant itself: a fire at midnight belongs to it.
    const n = firesIn(j.cron, day.from - 1, day.resetsAt - 1);
    fires.set(j.id, n);
    if (j.jobClass !== 'backfill') total += n * estimates.get(j.id)!;
  }
  // The freshness job polls as the day's budget, less the other jobs' need, allows (rules in timing/freshness.ts).
  const freshJob = jobs.find((j) => j.fresh);
  const fresh = freshJob ? freshJobPlan(config, org, freshJob, { from: day.from, reset: day.resetsAt, reserved: total }) : null;
  const need = total + (fresh?.baseDemand ?? 0);
  if (freshJob && fresh) {
    fires.set(freshJob.id, fresh.polls);
    estimates.set(freshJob.id, fresh.polls > 0 ? Math.round(fresh.demand / fresh.polls) : 0);
    total += fresh.demand;
  }
  return { day: day.key, total, need, fires, fresh };
}

/** A job's line on the busiest day. */
function plannedJob(
  j: JobSpec,
  busiest: PlannedDay | null,
  estimates: Map<string, number>,
  costs: readonly TreeCost[],
  everyDays: number,
): PlannedJob {
  const fires = busiest?.fires.get(j.id) ?? 0;
  const estimate = estimates.get(j.id)!;
  const base = { id: j.id, jobClass: j.jobClass, streams: j.streams.length, fires, estimate };
  if (j.fresh) return { ...base, schedule: 'freshness', total: busiest?.fresh?.demand ?? 0 };
  return {
    ...base,
    schedule: j.cron.toString(),
    total: j.jobClass === 'backfill' ? 0 : fires * estimate,
    ...(j.jobClass === 'reconcile' ? { reconcile: reconcileSplit(j, costs, everyDays, estimate) } : {}),
  };
}

/**
 * What an organization's schedule costs (pure): each job's fires on each of the next quota
 * days times its estimate, the freshness job's polls and changes; the busiest day against the budget.
 */
export function planOrganization(
  config: Config,
  org: PlanOrganization,
  now: number,
  options: { backfill?: boolean; fires?: Map<string, number> } = {},
): OrganizationPlan {
  // Organizations of one zone share their days: a fleet counts each schedule's fires once.
  const cache = options.fires ?? new Map<string, number>();
  const firesIn = (cron: Cron, from: number, to: number): number => {
    const key = `${cron.expression}|${cron.timeZone}|${from}|${to}`;
    let n = cache.get(key);
    if (n === undefined) cache.set(key, (n = countFires(cron.expression, cron.timeZone, from, to)));
    return n;
  };
  const jobs = resolveJobs(config, [org], { backfill: options.backfill ?? config.daemon.backfill }).filter(
    (j) => j.organizationId === org.organizationId && j.connection === org.connection,
  );
  const everyDays = childrenCycleDays(config, config.connections.find((c) => c.name === org.connection)?.plan ?? 'free');
  const estimates = new Map(jobs.map((j) => [j.id, jobEstimate(j, org.costs, everyDays)]));
  let busiest: PlannedDay | null = null;
  for (const day of quotaDaysAhead(now, org.zone, org.serverReset)) {
    const planned = planDay(config, org, jobs, estimates, day, firesIn);
    if (!busiest || planned.total > busiest.total) busiest = planned;
  }
  const planned = jobs.map((j) => plannedJob(j, busiest, estimates, org.costs, everyDays));
  const shortcuts = org.shortcuts ?? [];
  const extra = shortcuts.reduce((a, r) => a + r.extraRequestsPerDay, 0);
  const total = planned.reduce((a, p) => a + p.total, 0) + extra;
  const need = (busiest?.need ?? 0) + extra;
  const firstSync = org.costs.reduce((a, c) => a + c.whole, 0);
  return {
    connection: org.connection,
    organizationId: org.organizationId,
    reference: org.reference,
    day: busiest?.day ?? '',
    budget: org.budget,
    jobs: planned,
    total,
    need,
    fits: need <= org.budget && !(busiest?.fresh?.short ?? false),
    leftForBackfill: Math.max(0, org.budget - need),
    assumed: org.costs.some((c) => c.assumed),
    firstSync: { requests: firstSync, days: org.budget > 0 ? firstSync / org.budget : Infinity },
    shortcuts,
    unlimited: org.unlimited ?? false,
    freshness: busiest?.fresh?.streams ?? [],
    freshShort: busiest?.fresh?.short ?? false,
  };
}

/**
 * What the configured schedules cost each organization on the busiest of the next quota days,
 * against its budget, from the warehouse alone (no API call).
 */
export async function planNextDay(
  config: Config,
  warehouse: Warehouse,
  now: number,
  options: { backfill?: boolean; referenceRecords?: number } = {},
): Promise<OrganizationPlan[]> {
  const orgs = await loadPlanOrganizations(config, warehouse, { ...options, now });
  const fires = new Map<string, number>();
  return orgs.map((o) => planOrganization(config, o, now, { ...options, fires }));
}

/** One line per organization whose schedule does not fit, with the figures (the daemon's start-up warning). */
export function misfits(plans: readonly OrganizationPlan[]): Array<{ plan: OrganizationPlan; message: string }> {
  return plans
    .filter((p) => !p.fits)
    .map((p) => ({
      plan: p,
      message:
        `the schedule of ${p.connection} / ${p.organizationId} needs about ${p.need} requests on quota day ${p.day} ` +
        `but its budget is ${p.budget} (${p.jobs
          .filter((j) => j.total > 0)
          .map((j) => `${j.jobClass} ${j.schedule}: ${j.fires} × ~${j.estimate}`)
          .join('; ')}); lower-priority jobs will be skipped and incremental runs may run out. ` +
        '`svcsync plan --fit` prints schedules that fit.',
    }));
}

/** A reconcile job's parts, its children cycle a day being what its estimate holds beyond the list pages. */
function reconcileSplit(
  job: Pick<JobSpec, 'trees'>,
  costs: readonly TreeCost[],
  everyDays: number,
  estimate: number,
): NonNullable<PlannedJob['reconcile']> {
  const parts = reconcileParts(job, costs);
  return { ...parts, everyDays, perDay: estimate - parts.lists };
}

/**
 * At start-up: warns once per organization whose schedule does not fit its budget, with the
 * figures (`misfits`). Planning reads only the warehouse; a failure to plan is logged, never
 * fatal. Returns how many organizations do not fit.
 */
export async function warnScheduleMisfits(ctx: {
  config: Config;
  warehouse: Warehouse;
  logger: Logger;
  now: number;
  backfill?: boolean;
}): Promise<number> {
  try {
    const plans = await planNextDay(ctx.config, ctx.warehouse, ctx.now, { backfill: ctx.backfill });
    const bad = misfits(plans);
    for (const { plan, message } of bad)
      ctx.logger.warn(
        {
          connection: plan.connection,
          organization_id: plan.organizationId,
          quota_day: plan.day,
          planned: plan.total,
          budget: plan.budget,
        },
        message,
      );
    return bad.length;
  } catch (err) {
    ctx.logger.warn({ err }, 'could not work out whether the schedule fits the daily budget (svcsync plan shows it)');
    return 0;
  }
}
