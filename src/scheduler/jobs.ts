import { CATALOG, childStreamsOf } from '../catalog/index.js';
import { qualifiedName, type StreamSpec } from '../catalog/types.js';
import type { Family } from '../catalog/families.js';
import type { Config, ConnectionConfig } from '../config/schema.js';
import { selectStreams } from '../extractors/organization-sync.js';
import type { SyncMode } from '../extractors/stream-pass.js';
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

export const DEFAULT_SCHEDULES = {
  incremental: '*/15 * * * *',
  settings: '0 * * * *',
  reconcile: '30 2 * * *',
  backfill: '*/15 * * * *',
  time_zone: 'UTC',
} as const;

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
}

export interface KnownOrganization {
  connection: string;
  organizationId: string;
  families: Family[];
}

function descendants(stream: StreamSpec, allowed: (s: StreamSpec) => boolean, catalog: readonly StreamSpec[]): string[] {
  const out: string[] = [];
  for (const child of childStreamsOf(stream, catalog)) {
    const below = descendants(child, allowed, catalog);
    if (allowed(child) || below.length) out.push(qualifiedName(child), ...below);
  }
  return out;
}

/** The cron expression and zone of a job class for a connection (and optionally one stream). */
export function scheduleFor(
  config: Config,
  connection: ConnectionConfig,
  jobClass: JobClass,
  stream?: string,
): { expression: string; timeZone: string } {
  const cs = connection.schedules;
  const ds = config.daemon.schedules;
  const key = jobClass === 'organizations' ? 'settings' : jobClass;
  const override = stream ? cs?.streams?.[stream] : undefined;
  // A stream's own schedule: `reconcile` for reconcile runs, `incremental` for incremental and settings runs.
  let fromOverride: string | undefined;
  if (override && key === 'reconcile') fromOverride = override.reconcile;
  else if (override && (key === 'incremental' || key === 'settings')) fromOverride = override.incremental;
  const expression = fromOverride ?? cs?.[key] ?? ds[key] ?? DEFAULT_SCHEDULES[key];
  const timeZone = (fromOverride ? override?.time_zone : undefined) ?? cs?.time_zone ?? ds.time_zone ?? DEFAULT_SCHEDULES.time_zone;
  return { expression, timeZone };
}

/**
 * Every job of every known organization. Streams sharing a class and a schedule form one
 * job, so an organization costs one run per tick rather than one per stream.
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
    // Discovery follows the settings schedule, and stays hourly when settings streams are off:
    // without it new organizations would never be picked up.
    const discovery = scheduleFor(config, connection, 'organizations');
    if (discovery.expression === 'off') discovery.expression = DEFAULT_SCHEDULES.settings;
    {
      jobs.push({
        id: `${connection.name}/*/organizations`,
        connection: connection.name,
        organizationId: null,
        jobClass: 'organizations',
        mode: 'incremental',
        priority: PRIORITY.organizations,
        trees: [],
        streams: [],
        cron: cronOf(discovery.expression, discovery.timeZone),
      });
    }
    for (const org of organizations.filter((o) => o.connection === connection.name)) {
      if (connection.organizations && !connection.organizations.includes(org.organizationId)) continue;
      const { top, allowed } = selectStreams(catalog, org.families, connection.streams);
      const groups = new Map<string, { jobClass: JobClass; mode: SyncMode; expression: string; timeZone: string; trees: StreamSpec[] }>();
      const add = (jobClass: JobClass, mode: SyncMode, s: StreamSpec): void => {
        const { expression, timeZone } = scheduleFor(config, connection, jobClass, qualifiedName(s));
        if (expression === 'off') return;
        const k = `${jobClass}|${expression}|${timeZone}`;
        const g = groups.get(k) ?? { jobClass, mode, expression, timeZone, trees: [] };
        g.trees.push(s);
        groups.set(k, g);
      };
      for (const s of top) {
        add(s.kind === 'settings' ? 'settings' : 'incremental', 'incremental', s);
        // Reconcile finds deletions of incremental streams; full-refresh streams find theirs every run.
        if (s.cursor) add('reconcile', 'reconcile', s);
        if (options.backfill) add('backfill', 'backfill', s);
      }
      const counters = new Map<JobClass, number>();
      for (const g of groups.values()) {
        const n = counters.get(g.jobClass) ?? 0;
        counters.set(g.jobClass, n + 1);
        const trees = g.trees.map(qualifiedName);
        jobs.push({
          id: `${connection.name}/${org.organizationId}/${g.jobClass}${n ? `/${n}` : ''}`,
          connection: connection.name,
          organizationId: org.organizationId,
          jobClass: g.jobClass,
          mode: g.mode,
          priority: PRIORITY[g.jobClass],
          trees,
          streams: g.trees.flatMap((s) => [qualifiedName(s), ...descendants(s, allowed, catalog)]),
          cron: cronOf(g.expression, g.timeZone),
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
