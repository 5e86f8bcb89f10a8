import { CATALOG, childStreamsOf } from '../../catalog/index.js';
import { qualifiedName, type StreamSpec } from '../../catalog/types.js';
import type { Family } from '../../catalog/families.js';
import type { Plan } from '../../config/plans.js';
import type { Config, ConnectionConfig } from '../../config/schema.js';
import { freshnessTarget } from '../../config/freshness.js';
import { selectStreams } from '../../extractors/organization-sync.js';
import type { SyncMode } from '../../extractors/stream-pass.js';
import { Cron } from './cron.js';

/**
 * What a job does. `incremental` covers the transaction streams (with the child and
 * single-record completions of the records they find changed), `settings` the settings-like
 * streams, `organizations` the discovery of a connection's organizations.
 */
export type JobClass = 'incremental' | 'settings' | 'organizations' | 'reconcile' | 'backfill';

/** Lower runs first and is protected from the classes after it when the budget is short. */
export const PRIORITY: Readonly<Record<JobClass, number>> = {
  incremental: 0,
  settings: 1,
  organizations: 1,
  reconcile: 2,
  backfill: 3,
};

/** The schedule keys of `daemon.schedules` and a connection's `schedules`, and their values. */
export interface Schedules {
  incremental: string;
  /** Trees read whole on every run (`readsWhole`): their own key, so they can run less often. */
  whole_read: string;
  settings: string;
  reconcile: string;
  backfill: string;
  time_zone: string;
}

/** A plan's schedules: what differs between plans is how often lists, whole reads and settings run. */
const planSchedules = (incremental: string, whole_read: string, settings: string): Schedules => ({
  incremental,
  whole_read,
  settings,
  reconcile: '30 2 * * *',
  backfill: '*/15 * * * *',
  time_zone: 'UTC',
});

/**
 * The daemon's schedules when the configuration sets none, per plan (spec 8's daily quota). The
 * free plan's 900 usable requests a day are sized for an organization of 5,000 sales orders,
 * 2,000 contacts and 300 projects changing 250 orders and 100 contacts a day
 * (docs/benchmarks.md, "Requests"): an incremental run every two hours (a page per list, plus
 * the changed records' single reads and child lists), the projects once a day with a third of
 * their task lists (`sync.whole_read_every_days`), settings every six hours and the nightly
 * reconcile (its list pages, and a thirtieth of the parents' child lists:
 * src/config/cycles.ts). Paid plans run more often. `svcsync plan` shows what a schedule costs
 * an organization; `svcsync plan --fit` proposes one for its own size.
 */
export const PLAN_SCHEDULES: Readonly<Record<Plan, Readonly<Schedules>>> = {
  free: planSchedules('0 */2 * * *', '10 3 * * *', '5 */6 * * *'),
  standard: planSchedules('*/15 * * * *', '10 */4 * * *', '5 * * * *'),
  professional: planSchedules('*/15 * * * *', '10 */2 * * *', '5 * * * *'),
  premium: planSchedules('*/15 * * * *', '10 * * * *', '5 * * * *'),
  elite: planSchedules('*/15 * * * *', '10 * * * *', '5 * * * *'),
  ultimate: planSchedules('*/15 * * * *', '10 * * * *', '5 * * * *'),
  enterprise: planSchedules('*/15 * * * *', '10 * * * *', '5 * * * *'),
};

/**
 * A tree an incremental run reads whole, its child lists with it: a top-level list without a
 * change field whose records have child streams (invoice projects and their tasks). Nothing
 * tells which parents changed, so every run reads every parent's child list: about one request
 * per record, where a list with a change field costs one page.
 */
export function readsWhole(stream: StreamSpec, catalog: readonly StreamSpec[] = CATALOG): boolean {
  return !stream.parent && !stream.cursor && childStreamsOf(stream, catalog).length > 0;
}

export interface JobSpec {
  /** connection/organization/class[/group]: stable across restarts and config reloads. */
  id: string;
  connection: string;
  /** null: a connection-wide job (organization discovery). */
  organizationId: string | null;
  jobClass: JobClass;
  mode: SyncMode;
  priority: number;
  /** Top-level streams (qualified names) the job syncs; their child streams come with them. */
  trees: string[];
  /** The allowlist passed to runSync: the trees and their selected descendants. */
  streams: string[];
  cron: Cron;
  /**
   * The organization's freshness job: its trees are polled when each is due
   * (src/scheduler/freshness-keeper.ts), not on `cron`, which only bounds how often the due
   * times are looked at.
   */
  fresh?: true;
  /** A run a webhook made due early: it runs the named trees whether or not they are due. */
  early?: true;
}

/** How often a freshness job looks at its streams' due times (once a minute). */
export const FRESH_CRON = '* * * * *';

export interface KnownOrganization {
  connection: string;
  organizationId: string;
  families: Family[];
}

/** The selected child streams below a stream (qualified names), each before its own children. */
export function descendants(stream: StreamSpec, allowed: (s: StreamSpec) => boolean, catalog: readonly StreamSpec[]): string[] {
  const out: string[] = [];
  for (const child of childStreamsOf(stream, catalog)) {
    const below = descendants(child, allowed, catalog);
    if (allowed(child) || below.length) out.push(qualifiedName(child), ...below);
  }
  return out;
}

/**
 * The cron expression and zone of a job class for a connection (and optionally one top-level
 * stream). Lookup: the stream's own schedule, the connection's `schedules`, `daemon.schedules`,
 * then the connection's plan's defaults (`PLAN_SCHEDULES`). A tree read whole on every run
 * (`readsWhole`) takes `whole_read`, and the incremental schedule only where that is set
 * explicitly and `whole_read` is not (so a configuration written before `whole_read` existed
 * keeps its meaning).
 */
export function scheduleFor(
  config: Config,
  connection: ConnectionConfig,
  jobClass: JobClass,
  stream?: StreamSpec,
  catalog: readonly StreamSpec[] = CATALOG,
): { expression: string; timeZone: string } {
  const cs = connection.schedules;
  const ds = config.daemon.schedules;
  const defaults = PLAN_SCHEDULES[connection.plan];
  const key = jobClass === 'organizations' ? 'settings' : jobClass;
  const override = stream ? cs?.streams?.[qualifiedName(stream)] : undefined;
  // A stream's own schedule: `reconcile` for reconcile runs, `incremental` for incremental and settings runs.
  let fromOverride: string | undefined;
  if (override && key === 'reconcile') fromOverride = override.reconcile;
  else if (override && (key === 'incremental' || key === 'settings')) fromOverride = override.incremental;
  let expression: string;
  if (fromOverride !== undefined) expression = fromOverride;
  else if (key === 'incremental' && stream && readsWhole(stream, catalog))
    expression = cs?.whole_read ?? ds.whole_read ?? cs?.incremental ?? ds.incremental ?? defaults.whole_read;
  else expression = cs?.[key] ?? ds[key] ?? defaults[key];
  const timeZone = (fromOverride ? override?.time_zone : undefined) ?? cs?.time_zone ?? ds.time_zone ?? defaults.time_zone;
  return { expression, timeZone };
}

/**
 * Whether the daemon keeps a top-level stream fresh by its freshness target rather than a cron
 * schedule: freshness is on, the stream's target is not `off`, it is not read whole on every run
 * (projects: nothing tells which changed), and no cron schedule is set for it, its connection or
 * the daemon (a schedule set explicitly keeps its meaning).
 */
export function keptFresh(
  config: Config,
  connection: ConnectionConfig,
  stream: StreamSpec,
  catalog: readonly StreamSpec[] = CATALOG,
): boolean {
  const f = config.daemon.freshness;
  if (!f.enabled || readsWhole(stream, catalog)) return false;
  if (freshnessTarget(f, connection.freshness, stream) === 'off') return false;
  const key = stream.kind === 'settings' ? 'settings' : 'incremental';
  const own = connection.schedules?.streams?.[qualifiedName(stream)]?.incremental;
  return own === undefined && connection.schedules?.[key] === undefined && config.daemon.schedules[key] === undefined;
}

type Group = { jobClass: JobClass; mode: SyncMode; expression: string; timeZone: string; trees: StreamSpec[]; fresh?: true };

/** One organization's trees grouped into jobs: by class and schedule, the kept-fresh trees into one freshness job. */
function groupTrees(
  config: Config,
  connection: ConnectionConfig,
  top: readonly StreamSpec[],
  options: { backfill: boolean; catalog: readonly StreamSpec[] },
): Group[] {
  const groups = new Map<string, Group>();
  const add = (jobClass: JobClass, mode: SyncMode, s: StreamSpec, fresh = false): void => {
    const { expression, timeZone } = fresh
      ? { expression: FRESH_CRON, timeZone: 'UTC' }
      : scheduleFor(config, connection, jobClass, s, options.catalog);
    if (expression === 'off') return;
    const k = fresh ? 'fresh' : `${jobClass}|${expression}|${timeZone}`;
    const g = groups.get(k) ?? { jobClass, mode, expression, timeZone, trees: [], ...(fresh ? { fresh: true as const } : {}) };
    g.trees.push(s);
    groups.set(k, g);
  };
  for (const s of top) {
    if (keptFresh(config, connection, s, options.catalog)) add('incremental', 'incremental', s, true);
    else add(s.kind === 'settings' ? 'settings' : 'incremental', 'incremental', s);
    // Reconcile finds deletions of incremental streams; full-refresh streams find theirs every run,
    // and a log the API never deletes from only when its own schedule asks (A51).
    if (s.cursor && (!s.appendOnly || connection.schedules?.streams?.[qualifiedName(s)]?.reconcile !== undefined))
      add('reconcile', 'reconcile', s);
    if (options.backfill) add('backfill', 'backfill', s);
  }
  return [...groups.values()];
}

/** The discovery job of a connection: it follows the settings schedule, hourly when that is off (new organizations must show up). */
function discoveryJob(config: Config, connection: ConnectionConfig, cronOf: (e: string, z: string) => Cron): JobSpec {
  const discovery = scheduleFor(config, connection, 'organizations');
  if (discovery.expression === 'off') discovery.expression = '0 * * * *';
  return {
    id: `${connection.name}/*/organizations`,
    connection: connection.name,
    organizationId: null,
    jobClass: 'organizations',
    mode: 'incremental',
    priority: PRIORITY.organizations,
    trees: [],
    streams: [],
    cron: cronOf(discovery.expression, discovery.timeZone),
  };
}

/**
 * Every job of every known organization. Streams sharing a class and a schedule form one
 * job, so an organization costs one run per tick rather than one per stream; the streams kept
 * fresh form one freshness job (`conn/org/fresh`).
 */
export function resolveJobs(
  config: Config,
  organizations: readonly KnownOrganization[],
  options: { backfill: boolean; catalog?: readonly StreamSpec[] },
): JobSpec[] {
  const catalog = options.catalog ?? CATALOG;
  const jobs: JobSpec[] = [];
  const crons = new Map<string, Cron>();
  const cronOf = (expression: string, timeZone: string): Cron => {
    const k = `${expression}|${timeZone}`;
    let c = crons.get(k);
    if (!c) crons.set(k, (c = new Cron(expression, timeZone)));
    return c;
  };
  for (const connection of config.connections) {
    jobs.push(discoveryJob(config, connection, cronOf));
    for (const org of organizations.filter((o) => o.connection === connection.name)) {
      if (connection.organizations && !connection.organizations.includes(org.organizationId)) continue;
      const { top, allowed } = selectStreams(catalog, org.families, connection.streams);
      const counters = new Map<JobClass, number>();
      for (const g of groupTrees(config, connection, top, { backfill: options.backfill, catalog })) {
        const n = g.fresh ? 0 : (counters.get(g.jobClass) ?? 0);
        if (!g.fresh) counters.set(g.jobClass, n + 1);
        jobs.push({
          id: `${connection.name}/${org.organizationId}/${g.fresh ? 'fresh' : g.jobClass}${n ? `/${n}` : ''}`,
          connection: connection.name,
          organizationId: org.organizationId,
          jobClass: g.jobClass,
          mode: g.mode,
          priority: PRIORITY[g.jobClass],
          trees: g.trees.map(qualifiedName),
          streams: g.trees.flatMap((s) => [qualifiedName(s), ...descendants(s, allowed, catalog)]),
          cron: cronOf(g.expression, g.timeZone),
          ...(g.fresh ? { fresh: true as const } : {}),
        });
      }
    }
  }
  return jobs;
}

/** The streams of `job` restricted to the given trees (for a run that leaves busy trees out). */
export function narrowJob(job: JobSpec, trees: readonly string[], catalog: readonly StreamSpec[] = CATALOG): JobSpec {
  if (trees.length === job.trees.length) return job;
  const keep = new Set<string>();
  for (const t of trees) {
    keep.add(t);
    const spec = catalog.find((s) => qualifiedName(s) === t);
    const walk = (s: StreamSpec): void => {
      for (const c of childStreamsOf(s, catalog)) {
        keep.add(qualifiedName(c));
        walk(c);
      }
    };
    if (spec) walk(spec);
  }
  return { ...job, trees: [...trees], streams: job.streams.filter((s) => keep.has(s)) };
}
