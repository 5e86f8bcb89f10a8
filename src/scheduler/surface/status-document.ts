import { childrenCycleDays } from '../../config/cycles.js';
import { connectionLimits } from '../../api/client.js';
import { quotaDay, quotaDayAt, type QuotaDay } from '../../api/quota-day.js';
import { CATALOG, findStream } from '../../catalog/index.js';
import { tableName } from '../../catalog/types.js';
import type { LiveStatus } from './live-status.js';
import { DEFAULT_TARGETS } from '../../config/freshness.js';
import { freshnessSettings } from '../planning/fresh-plan.js';
import type { Family } from '../../catalog/families.js';
import { dailyBudget } from '../../config/plans.js';
import { svcsyncVersion } from '../../core/version.js';
import type { Config } from '../../config/schema.js';
import { historyRecord, historyVersionCounts } from '../../loaders/derived/ensure-history.js';
import { migrateToLatest } from '../../loaders/migrate.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { listAuthorizations } from '../../state/connection-auth.js';
import { listDrift } from '../../state/drift.js';
import { stateDb, type StreamStateRow } from '../../state/tables.js';
import { cachedRowCounts, type RowCount } from './row-counts.js';
import type { DayProjection } from '../planning/day-projection.js';
import { organizationHealth, sortOrganizations, type ConnectionState, type Health } from './health.js';
import { resolveJobs, type JobSpec, type KnownOrganization } from '../timing/jobs.js';
import { queueDepth, SYNC_QUEUE, type QueueDepth } from './queue-depth.js';
import { refutedShortcuts, type RefutedShortcut } from '../planning/shortcut-cost.js';
import { projectOrganization, runCommands, ScheduleMemo, snapshotOf, type PendingCounts } from '../planning/status-estimates.js';

/**
 * The status document: every configured connection, and every organization and stream, read
 * from the warehouse alone (no API calls), the worker queue, and what a running daemon is
 * doing now. `svcsync status` prints it, and the daemon's and each worker's HTTP port serve it
 * as `/status.json` and as the page rendered from it (`status-page.ts`).
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
  /** Rows marked deleted in the stream's tables, its child tables (a deleted order's lines) included. */
  deleted: number;
  pending: number;
  /** Fields the API sent on this stream that the catalog does not know (`_svcsync_drift`). */
  drift: string[];
  /**
   * History (`{table}_history`, docs/warehouse.md): whether the connection keeps it for the stream
   * now, and the versions its table holds for the organization. Absent when it never kept any.
   */
  history?: { on: boolean; versions: number };
}

export interface StatusOrganization {
  connection: string;
  organizationId: string;
  name: string | null;
  families: string[];
  /** The organization's worst state (src/scheduler/health.ts); `failing` for every organization of a connection that cannot authorize. */
  state: Health;
  /** Why, in a few words (`connection acme cannot authorize`, `2 streams stale: ...`); null when all is well. */
  stateReason: string | null;
  requestsToday: number;
  budget: number;
  blockedUntil: string | null;
  /** Budget left today (budget less requests today; 0 while the quota is spent). */
  budgetLeft: number;
  /** Requests used by the end of the quota day if the runs still scheduled today run at their estimates; null when not worked out. */
  projectedToday: DayProjection | null;
  /** The daemon's next runs of this organization's jobs, soonest first. */
  nextRuns: Array<{ job: string; streams: number; at: string }>;
  streams: StatusStream[];
  /**
   * Request-saving readings of the API that a check found wrong for this organization, with what
   * reading the long way now costs (docs/assumptions.md, "Shortcuts that check themselves").
   */
  shortcuts?: RefutedShortcut[];
}

/** A configured connection, whether or not it reached any organization. */
export interface StatusConnection {
  connection: string;
  /** `failing` when the service refused its token last time (nothing of it can sync), `unknown` before any run used it. */
  state: ConnectionState;
  /** The last authorization result a run saw (`_svcsync_connections`); null before any. */
  authorization: {
    result: 'ok' | 'refused';
    at: string;
    error: string | null;
    hint: string | null;
    failingSince: string | null;
    lastOkAt: string | null;
  } | null;
  families: string[];
  /** Organizations known for it (from discovery). */
  organizations: number;
  /** Webhooks are on (a `webhook_secret` is set), on the daemon and on workers alike. */
  webhooks: boolean;
}

export interface CollectOptions {
  /** Only this organization (the page's detail of one organization). */
  only?: { connection: string; organizationId: string } | undefined;
  /** Skip what only the page shows (row counts, drift, projections): `/healthz/fleet`. */
  light?: boolean;
  /**
   * Row counts of every organization read every table whole (a GROUP BY per table): on a large
   * warehouse the page's most expensive part, for counts that hardly move. A long-lived process
   * serving the page may reuse them for this long; one organization's counts are read fresh.
   */
  rowCountsMaxAgeMs?: number;
}

/** Node 20 has no `Map.groupBy`. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

/** The stream-state columns the document and the estimates read. */
const STATE_COLUMNS = [
  'connection',
  'organization_id',
  'stream',
  'cursor',
  'pass_kind',
  'pass_next_page',
  'last_run_id',
  'last_finished_at',
  'last_success_at',
  'last_status',
  'last_error',
  'last_pages',
  'last_requests',
] as const;

/**
 * The daemon's jobs for these organizations, kept while neither changes: resolving 3,000 jobs
 * (a cron expression parsed for each) took a tenth of a second on every page and every
 * `/healthz/fleet` of a 1,000-organization fleet.
 */
const jobCache = new WeakMap<Config, { key: string; jobs: JobSpec[] }>();
function jobsOf(config: Config, known: KnownOrganization[]): JobSpec[] {
  const key = known.map((o) => `${o.connection}|${o.organizationId}|${o.families.join(',')}`).join('\n');
  const hit = jobCache.get(config);
  if (hit?.key === key) return hit.jobs;
  const jobs = resolveJobs(config, known, { backfill: config.daemon.backfill });
  jobCache.set(config, { key, jobs });
  return jobs;
}

/** Every connection of the configuration, failing first, with its last authorization result. */
async function collectConnections(config: Config, warehouse: Warehouse, orgs: readonly StatusOrganization[]): Promise<StatusConnection[]> {
  const seen = new Map((await listAuthorizations(warehouse.db)).map((r) => [r.connection, r]));
  const out = config.connections.map((c): StatusConnection => {
    const r = seen.get(c.name);
    const result = r?.result === 'refused' ? 'refused' : 'ok';
    let state: ConnectionState = 'unknown';
    if (r) state = result === 'refused' ? 'failing' : 'ok';
    return {
      connection: c.name,
      state,
      authorization: r
        ? { result, at: r.checked_at, error: r.error, hint: r.hint, failingSince: r.failing_since, lastOkAt: r.last_ok_at }
        : null,
      families: [...c.families],
      organizations: orgs.filter((o) => o.connection === c.name).length,
      webhooks: Boolean(c.webhook_secret),
    };
  });
  const order: Record<ConnectionState, number> = { failing: 0, unknown: 1, ok: 2 };
  return out.sort((a, b) => order[a.state] - order[b.state] || a.connection.localeCompare(b.connection));
}

/** Everything `svcsync status` shows per organization, read from the warehouse alone (no API calls); failing first. */
export async function collectStatus(
  config: Config,
  warehouse: Warehouse,
  now: number,
  options: CollectOptions = {},
): Promise<StatusOrganization[]> {
  return (await collect(config, warehouse, now, options)).organizations;
}

/** The warehouse's rows the document is made of, read once and shared by the steps of `collect`. */
interface StatusRows {
  organizations: Array<{ connection: string; organization_id: string; name: string | null; family: string }>;
  states: StreamStateRow[];
  pending: PendingCounts[];
  counts: Map<string, RowCount>;
}

async function readRows(warehouse: Warehouse, now: number, options: CollectOptions): Promise<StatusRows> {
  const db = stateDb(warehouse.db);
  const only = options.only;
  let orgQuery = db.selectFrom('_svcsync_organizations').selectAll().orderBy('connection').orderBy('organization_id');
  if (only) orgQuery = orgQuery.where('connection', '=', only.connection).where('organization_id', '=', only.organizationId);
  const organizations = await orgQuery.execute();
  let stateQuery = db
    .selectFrom('_svcsync_streams')
    .select(STATE_COLUMNS)
    .orderBy('connection')
    .orderBy('organization_id')
    .orderBy('stream');
  if (only) stateQuery = stateQuery.where('connection', '=', only.connection).where('organization_id', '=', only.organizationId);
  // The columns the document and the estimates read, not the pass's bookkeeping: at 1,000 organizations this is 17,000 rows.
  const states = (await stateQuery.execute()) as StreamStateRow[];
  let pendingQuery = db
    .selectFrom('_svcsync_pending')
    .select(['connection', 'organization_id', 'stream', 'kind', 'reason'])
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .groupBy(['connection', 'organization_id', 'stream', 'kind', 'reason']);
  if (only) pendingQuery = pendingQuery.where('connection', '=', only.connection).where('organization_id', '=', only.organizationId);
  const pending: PendingCounts[] = (await pendingQuery.execute()).map((p) => ({ ...p, n: Number(p.n) }));
  const counts = options.light
    ? new Map<string, RowCount>()
    : await cachedRowCounts(warehouse, now, only?.organizationId, options.rowCountsMaxAgeMs ?? 0);
  return { organizations, states, pending, counts };
}

/** Each organization's requests today, and its quota day (when today began and when it resets). */
interface QuotaDays {
  usage: Map<string, { count: number | string; blocked_until: string | null }>;
  dayOf(organizationId: string, connection: string): QuotaDay;
}

async function readQuotaDays(warehouse: Warehouse, config: Config, now: number): Promise<QuotaDays> {
  // Today's row of each organization only: the table keeps a row per organization and day. A day
  // whose end the server told is keyed by the zone's date of its middle, within a day of the
  // zone's date now: the rows of those three dates say which is today (quotaDayAt).
  const zones = new Map(config.connections.map((c) => [c.name, c.quota_reset_time_zone]));
  const dates = [...new Set(zones.values())].flatMap((z) => [-1, 0, 1].map((d) => quotaDay(now + d * 86_400_000, z)));
  const usageRows = dates.length
    ? await stateDb(warehouse.db)
        .selectFrom('_svcsync_usage')
        .selectAll()
        .where('day', 'in', [...new Set(dates)])
        .orderBy('day', 'desc')
        .execute()
    : [];
  const quotaDays = new Map<string, QuotaDay>();
  return {
    usage: new Map(usageRows.map((u) => [`${u.organization_id}|${u.day}`, u])),
    dayOf: (organizationId, connection) => {
      let day = quotaDays.get(organizationId);
      if (!day) {
        const latest = usageRows.find((u) => u.organization_id === organizationId);
        const told = latest?.resets_at ? Date.parse(latest.resets_at) : null;
        quotaDays.set(organizationId, (day = quotaDayAt(now, zones.get(connection) ?? 'UTC', told)));
      }
      return day;
    },
  };
}

/** One entry per organization (a row per family it has), with its requests and budget today; no streams yet. */
function organizationEntries(config: Config, rows: StatusRows, days: QuotaDays, now: number): Map<string, StatusOrganization> {
  const orgs = new Map<string, StatusOrganization>();
  for (const o of rows.organizations) {
    const key = `${o.connection}|${o.organization_id}`;
    const connection = config.connections.find((c) => c.name === o.connection);
    const limits = connection ? connectionLimits(connection) : null;
    let entry = orgs.get(key);
    if (!entry) {
      // Today is the quota day as the limiter counts it: midnight in the reset zone, or the
      // server's reset kept with the latest day.
      const u = days.usage.get(`${o.organization_id}|${days.dayOf(o.organization_id, o.connection).key}`);
      const blocked = u?.blocked_until && Date.parse(u.blocked_until) > now ? u.blocked_until : null;
      entry = {
        connection: o.connection,
        organizationId: o.organization_id,
        name: o.name,
        families: [],
        state: 'waiting',
        stateReason: null,
        requestsToday: u ? Number(u.count) : 0,
        budget: limits ? dailyBudget(limits) : 0,
        blockedUntil: blocked,
        budgetLeft: 0,
        projectedToday: null,
        nextRuns: [],
        streams: [],
        shortcuts: [],
      };
      entry.budgetLeft = blocked ? 0 : Math.max(0, entry.budget - entry.requestsToday);
      orgs.set(key, entry);
    }
    entry.families.push(o.family);
  }
  return orgs;
}

/** Each organization's streams: state, rows, pending, drift and history. */
async function addStreams(
  orgs: Map<string, StatusOrganization>,
  warehouse: Warehouse,
  rows: StatusRows,
  options: CollectOptions,
): Promise<void> {
  const drift = new Map<string, string[]>();
  for (const d of options.light ? [] : await listDrift(warehouse.db)) {
    const key = `${d.connection}|${d.organization_id}|${d.stream}`;
    drift.set(key, [...(drift.get(key) ?? []), d.field]);
  }
  // Only tables svcsync recorded as keeping history have a history table to count.
  const kept = options.light ? [] : await historyRecord(warehouse.db);
  const historyOn = new Map(kept.map((r) => [`${r.connection}|${r.table_name}`, r.disabled_at === null]));
  const versions = await historyVersionCounts(warehouse, new Set(kept.map((r) => r.table_name)), options.only?.organizationId);
  const pendingBy = new Map<string, number>();
  for (const p of rows.pending) {
    const key = `${p.connection}|${p.organization_id}|${p.stream}`;
    pendingBy.set(key, (pendingBy.get(key) ?? 0) + p.n);
  }
  for (const s of rows.states) {
    const entry = orgs.get(`${s.connection}|${s.organization_id}`);
    if (!entry) continue;
    const c = rows.counts.get(`${s.organization_id}|${s.stream}`) ?? { rows: 0, deleted: 0 };
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
    const spec = findStream(s.stream);
    const on = spec ? historyOn.get(`${s.connection}|${tableName(spec)}`) : undefined;
    if (spec && on !== undefined)
      entry.streams.at(-1)!.history = { on, versions: versions.get(`${s.organization_id}|${tableName(spec)}`) ?? 0 };
  }
}

/** The jobs of the daemon's schedule, and the cron walks already made for them. */
interface Schedule {
  jobs: JobSpec[];
  memo: ScheduleMemo;
}

/**
 * The daemon's schedule, from the configuration alone (the same jobs `svcsync daemon` runs): each
 * organization's next runs, each stream's period.
 */
function scheduleRuns(config: Config, orgs: Map<string, StatusOrganization>, options: CollectOptions, now: number): Schedule {
  const known: KnownOrganization[] = [...orgs.values()].map((o) => ({
    connection: o.connection,
    organizationId: o.organizationId,
    families: o.families as Family[],
  }));
  // One organization's jobs are quick to resolve; the fleet's are kept while it does not change.
  const jobs = options.only ? resolveJobs(config, known, { backfill: config.daemon.backfill }) : jobsOf(config, known);
  const memo = new ScheduleMemo(now);
  for (const job of jobs) {
    if (job.organizationId === null) continue;
    const entry = orgs.get(`${job.connection}|${job.organizationId}`);
    if (!entry) continue;
    // A spent quota holds every job until the reset.
    const after = entry.blockedUntil ? Math.max(now, Date.parse(entry.blockedUntil) - 1) : now;
    const { next, every } = memo.next(job, after);
    entry.nextRuns.push({ job: job.fresh ? 'fresh' : job.jobClass, streams: job.streams.length, at: new Date(next).toISOString() });
    // The period between two fires: what "fresh" means for the stream. A kept-fresh stream may
    // wait its quiet interval between polls (or its target, where that is longer).
    const period = job.fresh ? freshPeriodSeconds(config) : every;
    if (job.jobClass === 'incremental' || job.jobClass === 'settings')
      for (const st of entry.streams) if (job.streams.includes(st.stream)) st.expectedEverySeconds = period;
  }
  return { jobs, memo };
}

/** The longest a kept-fresh stream waits between polls when nothing is wrong: its quiet interval, or the settings target where longer. */
function freshPeriodSeconds(config: Config): number {
  const settings = config.daemon.freshness.settings;
  return Math.max(freshnessSettings(config).quietMinutes, typeof settings === 'number' ? settings : DEFAULT_TARGETS.settings) * 60;
}

/** Each organization's requests by the end of its quota day, if the runs still scheduled run at their estimates. */
async function projectDays(
  config: Config,
  warehouse: Warehouse,
  orgs: Map<string, StatusOrganization>,
  at: { rows: StatusRows; days: QuotaDays; schedule: Schedule; now: number },
): Promise<void> {
  const { rows, days, now } = at;
  const { jobs, memo } = at.schedule;
  const commands = await runCommands(
    warehouse,
    rows.states.flatMap((s) => (s.last_run_id ? [s.last_run_id] : [])),
  );
  const jobsOf = groupBy(jobs, (j) => `${j.connection}|${j.organizationId}`);
  const statesOf = groupBy(rows.states, (s) => `${s.connection}|${s.organization_id}`);
  const pendingOf = groupBy(rows.pending, (p) => `${p.connection}|${p.organization_id}`);
  for (const [key, o] of orgs) {
    const counted = (stream: string): number | null => rows.counts.get(`${o.organizationId}|${stream}`)?.rows ?? null;
    const snap = snapshotOf(statesOf.get(key) ?? [], pendingOf.get(key) ?? [], counted, commands);
    const reset = days.dayOf(o.organizationId, o.connection).resetsAt;
    o.projectedToday = projectOrganization(
      jobsOf.get(key) ?? [],
      snap,
      { usedToday: o.requestsToday, budget: o.budget, blocked: o.blockedUntil !== null },
      (j) => memo.firesUntil(j, reset),
      config.sync.per_page,
      undefined,
      { everyDays: childrenCycleDays(config, config.connections.find((c) => c.name === o.connection)?.plan ?? 'free'), now },
    );
  }
}

async function collect(
  config: Config,
  warehouse: Warehouse,
  now: number,
  options: CollectOptions,
): Promise<{ organizations: StatusOrganization[]; connections: StatusConnection[] }> {
  await migrateToLatest(warehouse);
  const rows = await readRows(warehouse, now, options);
  const days = await readQuotaDays(warehouse, config, now);
  const orgs = organizationEntries(config, rows, days, now);
  await addStreams(orgs, warehouse, rows, options);
  if (!options.light)
    for (const r of await refutedShortcuts(config, warehouse, CATALOG)) orgs.get(`${r.connection}|${r.organizationId}`)?.shortcuts?.push(r);
  const schedule = scheduleRuns(config, orgs, options, now);
  if (!options.light) await projectDays(config, warehouse, orgs, { rows, days, schedule, now });
  const organizations = [...orgs.values()];
  const connections = await collectConnections(config, warehouse, organizations);
  const failing = new Set(connections.filter((c) => c.state === 'failing').map((c) => c.connection));
  for (const o of organizations) {
    o.nextRuns.sort((a, b) => a.at.localeCompare(b.at));
    const h = organizationHealth(o.streams, failing.has(o.connection) ? o.connection : null, now);
    o.state = h.state;
    o.stateReason = h.reason;
  }
  return { organizations: sortOrganizations(organizations), connections };
}

/** `svcsync status --json`: one object, so fields can be added without breaking a reader. */
export interface StatusDocument {
  /** svcsync's version (package.json), as in every `--json` output. */
  version: string;
  /** When it was read (ISO 8601, UTC). */
  generatedAt: string;
  /** Every configured connection, failing first. */
  connections: StatusConnection[];
  /** Failing organizations first, then stale, waiting and healthy ones. */
  organizations: StatusOrganization[];
  /** svcsync worker's queue, when workers use this warehouse (Postgres); null otherwise. */
  queue: (QueueDepth & { schema: string }) | null;
  /** What a running daemon is doing now (its `/status.json`); null from `svcsync status` and on workers (no schedule of their own). */
  daemon: LiveStatus | null;
}

/** The status of every connection, organization and stream, and the worker queue, as `status --json` prints it. */
export async function collectStatusDocument(
  config: Config,
  warehouse: Warehouse,
  now: number,
  daemon: LiveStatus | null = null,
  options: CollectOptions = {},
): Promise<StatusDocument> {
  const { organizations, connections } = await collect(config, warehouse, now, options);
  const depth =
    warehouse.dialect === 'postgres' && !options.light ? await queueDepth(warehouse.db, config.worker.schema, SYNC_QUEUE) : null;
  return {
    version: svcsyncVersion(),
    generatedAt: new Date(now).toISOString(),
    connections,
    organizations,
    queue: depth ? { schema: config.worker.schema, ...depth } : null,
    daemon,
  };
}
