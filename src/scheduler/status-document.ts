import { CompiledQuery } from 'kysely';
import { connectionLimits } from '../api/client.js';
import { quotaDayAt } from '../api/quota-day.js';
import { CATALOG } from '../catalog/index.js';
import { qualifiedName, tableName } from '../catalog/types.js';
import type { Family } from '../catalog/families.js';
import { dailyBudget } from '../config/plans.js';
import { svcsyncVersion } from '../core/version.js';
import type { Config } from '../config/schema.js';
import { migrateToLatest } from '../loaders/migrate.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { listDrift } from '../state/drift.js';
import { listStreamStates } from '../state/stream-state.js';
import { stateDb } from '../state/tables.js';
import { resolveJobs } from './jobs.js';
import { queueDepth, SYNC_QUEUE, type QueueDepth } from './queue-depth.js';

/**
 * The status document: every connection, organization and stream read from the warehouse alone
 * (no API calls), the worker queue, and what a running daemon is doing now. `svcsync status`
 * prints it, and the daemon's and each worker's HTTP port serve it as `/status.json` and as the
 * page rendered from it (`status-page.ts`).
 */

export interface StatusStream {
  stream: string;
  cursor: string | null;
  inProgress: string | null;
  lastStatus: string | null;
  lastFinishedAt: string | null;
  /** The last run that finished the stream without error. */
  lastSuccessAt: string | null;
  /** How often the daemon's schedule runs the stream (its incremental or settings job), or null when it does not. */
  expectedEverySeconds: number | null;
  lastError: string | null;
  rows: number;
  deleted: number;
  pending: number;
  /** Fields the API sent on this stream that the catalog does not know (`_svcsync_drift`). */
  drift: string[];
}

export interface StatusOrganization {
  connection: string;
  organizationId: string;
  name: string | null;
  families: string[];
  requestsToday: number;
  budget: number;
  blockedUntil: string | null;
  /** Budget left today (budget less requests today; 0 while the quota is spent). */
  budgetLeft: number;
  /** The daemon's next runs of this organization's jobs, soonest first. */
  nextRuns: Array<{ job: string; streams: number; at: string }>;
  streams: StatusStream[];
}

async function rowCounts(warehouse: Warehouse): Promise<Map<string, { rows: number; deleted: number }>> {
  const out = new Map<string, { rows: number; deleted: number }>();
  for (const stream of CATALOG) {
    const table = tableName(stream);
    try {
      const result = await warehouse.db.executeQuery<{ organization_id: string; live: number | string; gone: number | string }>(
        CompiledQuery.raw(
          'SELECT "organization_id", SUM(CASE WHEN "_deleted_at" IS NULL THEN 1 ELSE 0 END) AS live, ' +
            `SUM(CASE WHEN "_deleted_at" IS NULL THEN 0 ELSE 1 END) AS gone FROM "${table}" GROUP BY "organization_id"`,
        ),
      );
      for (const r of result.rows)
        out.set(`${r.organization_id}|${qualifiedName(stream)}`, { rows: Number(r.live), deleted: Number(r.gone) });
    } catch {
      // A table the warehouse does not have yet has no rows to count.
    }
  }
  return out;
}

/** Everything `svcsync status` shows, read from the warehouse alone (no API calls). */
export async function collectStatus(config: Config, warehouse: Warehouse, now: number): Promise<StatusOrganization[]> {
  await migrateToLatest(warehouse);
  const db = stateDb(warehouse.db);
  const orgRows = await db.selectFrom('_svcsync_organizations').selectAll().orderBy('connection').orderBy('organization_id').execute();
  const states = await listStreamStates(warehouse.db);
  const pending = await db
    .selectFrom('_svcsync_pending')
    .select(['connection', 'organization_id', 'stream'])
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .groupBy(['connection', 'organization_id', 'stream'])
    .execute();
  const usage = await db.selectFrom('_svcsync_usage').selectAll().orderBy('day', 'desc').execute();
  const counts = await rowCounts(warehouse);
  const drift = new Map<string, string[]>();
  for (const d of await listDrift(warehouse.db)) {
    const key = `${d.connection}|${d.organization_id}|${d.stream}`;
    drift.set(key, [...(drift.get(key) ?? []), d.field]);
  }
  const pendingBy = new Map<string, number>();
  for (const p of pending) {
    const key = `${p.connection}|${p.organization_id}|${p.stream}`;
    pendingBy.set(key, (pendingBy.get(key) ?? 0) + Number(p.n));
  }
  const orgs = new Map<string, StatusOrganization>();
  for (const o of orgRows) {
    const key = `${o.connection}|${o.organization_id}`;
    const connection = config.connections.find((c) => c.name === o.connection);
    const limits = connection ? connectionLimits(connection) : null;
    let entry = orgs.get(key);
    if (!entry) {
      // Today is the quota day as the limiter counts it: midnight in the reset zone, or the
      // server's reset kept with the latest day (rows come newest first).
      const latest = usage.find((x) => x.organization_id === o.organization_id);
      const told = latest?.resets_at ? Date.parse(latest.resets_at) : null;
      const today = quotaDayAt(now, connection?.quota_reset_time_zone ?? 'UTC', told).key;
      const u = usage.find((x) => x.organization_id === o.organization_id && x.day === today);
      const blocked = u?.blocked_until && Date.parse(u.blocked_until) > now ? u.blocked_until : null;
      entry = {
        connection: o.connection,
        organizationId: o.organization_id,
        name: o.name,
        families: [],
        requestsToday: u ? Number(u.count) : 0,
        budget: limits ? dailyBudget(limits) : 0,
        blockedUntil: blocked,
        budgetLeft: 0,
        nextRuns: [],
        streams: [],
      };
      entry.budgetLeft = blocked ? 0 : Math.max(0, entry.budget - entry.requestsToday);
      orgs.set(key, entry);
    }
    entry.families.push(o.family);
  }
  for (const s of states) {
    const entry = orgs.get(`${s.connection}|${s.organization_id}`);
    if (!entry) continue;
    const c = counts.get(`${s.organization_id}|${s.stream}`) ?? { rows: 0, deleted: 0 };
    entry.streams.push({
      stream: s.stream,
      cursor: s.cursor,
      inProgress: s.pass_kind ? `${s.pass_kind} pass at page ${s.pass_next_page}` : null,
      lastStatus: s.last_status,
      lastFinishedAt: s.last_finished_at,
      lastSuccessAt: s.last_success_at,
      expectedEverySeconds: null,
      lastError: s.last_error,
      rows: c.rows,
      deleted: c.deleted,
      pending: pendingBy.get(`${s.connection}|${s.organization_id}|${s.stream}`) ?? 0,
      drift: drift.get(`${s.connection}|${s.organization_id}|${s.stream}`) ?? [],
    });
  }
  // The daemon's schedule, from the configuration alone (the same jobs `svcsync daemon` runs).
  const known = [...orgs.values()].map((o) => ({
    connection: o.connection,
    organizationId: o.organizationId,
    families: o.families as Family[],
  }));
  for (const job of resolveJobs(config, known, { backfill: config.daemon.backfill })) {
    if (job.organizationId === null) continue;
    const entry = orgs.get(`${job.connection}|${job.organizationId}`);
    if (!entry) continue;
    // A spent quota holds every job until the reset.
    const after = entry.blockedUntil ? Math.max(now, Date.parse(entry.blockedUntil) - 1) : now;
    const next = job.cron.next(after);
    entry.nextRuns.push({ job: job.jobClass, streams: job.streams.length, at: new Date(next).toISOString() });
    if (job.jobClass === 'incremental' || job.jobClass === 'settings') {
      // The period between two fires: what "fresh" means for the stream on the status page.
      const every = Math.round((job.cron.next(next) - next) / 1000);
      for (const st of entry.streams) if (job.streams.includes(st.stream)) st.expectedEverySeconds = every;
    }
  }
  for (const o of orgs.values()) o.nextRuns.sort((a, b) => a.at.localeCompare(b.at));
  return [...orgs.values()];
}

/** `svcsync status --json`: one object, so fields can be added without breaking a reader. */
export interface StatusDocument {
  /** svcsync's version (package.json), as in every `--json` output. */
  version: string;
  /** When it was read (ISO 8601, UTC). */
  generatedAt: string;
  organizations: StatusOrganization[];
  /** svcsync worker's queue, when workers use this warehouse (Postgres); null otherwise. */
  queue: (QueueDepth & { schema: string }) | null;
  /** What a running daemon is doing now (its `/status.json`); null from `svcsync status`, which reads only the warehouse. */
  daemon: LiveStatus | null;
}

/** The status of every connection, organization and stream, and the worker queue, as `status --json` prints it. */
export async function collectStatusDocument(
  config: Config,
  warehouse: Warehouse,
  now: number,
  daemon: LiveStatus | null = null,
): Promise<StatusDocument> {
  const organizations = await collectStatus(config, warehouse, now);
  const depth = warehouse.dialect === 'postgres' ? await queueDepth(warehouse.db, config.worker.schema, SYNC_QUEUE) : null;
  return {
    version: svcsyncVersion(),
    generatedAt: new Date(now).toISOString(),
    organizations,
    queue: depth ? { schema: config.worker.schema, ...depth } : null,
    daemon,
  };
}

/** The daemon's live state in `/status.json` (null in `svcsync status --json`, which reads only the warehouse). */
export interface LiveStatus {
  startedAt: string | null;
  running: Array<{ job: string; connection: string; organizationId: string | null; streams: string[] }>;
  /** Per connection: whether webhooks are on (a `webhook_secret` is set). */
  hooks: Array<{ connection: string; active: boolean }>;
  /** Webhook runs waiting out their debounce delay. */
  hookRunsDue: Array<{ connection: string; organizationId: string; at: string }>;
  /** Organizations whose hooks fell back to the schedule (budget low) in the last day. */
  hookFallbacks: Array<{ connection: string; organizationId: string; at: string; reason: string }>;
  nextRuns: Array<{ job: string; connection: string; organizationId: string; at: string }>;
}
