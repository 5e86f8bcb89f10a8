import { connectionLimits, TokenCacheRegistry, type RequestEvent } from '../api/client.js';
import { LimiterRegistry, type OrgLimiter } from '../api/limiter.js';
import { CATALOG } from '../catalog/index.js';
import type { StreamSpec } from '../catalog/types.js';
import type { Family } from '../catalog/families.js';
import type { Config } from '../config/schema.js';
import { childrenCycleDays } from '../config/cycles.js';
import type { Clock } from '../core/clock.js';
import { watchHeap } from '../core/heap-budget.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { RecordBudget } from '../extractors/record-budget.js';
import { StopRequested, type StopRequest } from '../extractors/stop.js';
import { RunStopped, runSync, type SyncSummary } from '../extractors/sync-run.js';
import { migrateToLatest } from '../loaders/migrate.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { recordAuthorization, type AuthorizationSeen } from '../state/connection-auth.js';
import { stateDb } from '../state/tables.js';
import { WarehouseUsageStore } from '../state/usage-store.js';
import { decide, heldForHigher } from './planning/budget.js';
import {
  backfillPhase,
  daemonCommand,
  estimateJob,
  loadSnapshot,
  rowsNeeded,
  treesInBackfill,
  type OrgSnapshot,
} from './planning/estimate.js';
import { authorizationOf } from './surface/health.js';
import { hookBudget, resolveHook, type HookResolution, type HookTarget } from './surface/hooks.js';
import { Holds } from './timing/holds.js';
import { outcomeOf, type Admission, type JobOutcome, type JobRun } from './timing/job-run.js';
import { narrowJob, resolveJobs, type JobSpec, type KnownOrganization } from './timing/jobs.js';
import { DaemonMetrics } from './surface/metrics.js';
import { FreshnessKeeper } from './freshness-keeper.js';
import type { FreshDay } from './timing/freshness.js';

/** Everything a job runner needs, passed in; nothing global. */
export interface RunnerContext {
  config: Config;
  warehouse: Warehouse;
  clock: Clock;
  logger: Logger;
  secrets: SecretRegistry;
  /** One registry for every run, so per-organization windows and daily counts are global. */
  limiters?: LimiterRegistry;
  /** Spread a backfill of every stream across days (`daemon --backfill`, or `daemon.backfill`). */
  backfill?: boolean;
  catalog?: readonly StreamSpec[];
  /** Test seams. */
  fetch?: typeof fetch;
  random?: () => number;
}

/**
 * The jobs of one process and how they run, whatever drives them: `svcsync daemon` drives it
 * from its cron `Scheduler`, `svcsync worker` from pg-boss. It knows the job list (from the
 * organizations discovered so far), admits a job with the budget rules of docs/daemon.md
 * against its estimate, runs it as one `runSync`, and turns the summary into an outcome. It
 * holds what every run of the process shares: the limiters, the token caches, the cap on
 * records in flight, the heap watch, the metrics and the holds (backoffs, quota pauses).
 */
export class JobRunner {
  readonly limiters: LimiterRegistry;
  readonly metrics: DaemonMetrics;
  /** Backoffs and quota pauses: admission pauses an organization whose quota it finds spent; drivers settle outcomes. */
  readonly holds: Holds;
  /** When each organization's kept-fresh streams are next worth a poll. */
  readonly freshness: FreshnessKeeper;
  private readonly tokens: TokenCacheRegistry;
  /** One cap on records in flight for all the jobs this process runs at once. */
  private readonly records: RecordBudget;
  private readonly catalog: readonly StreamSpec[];
  private readonly backfill: boolean;
  private jobList: JobSpec[] = [];
  private organizations: KnownOrganization[] = [];
  private readonly finishedBackfills = new Set<string>();
  /** Actual requests of each job's last complete run: the best estimate of its next. */
  private readonly history = new Map<string, number>();
  /**
   * Each connection's latest authorization result in this process, and when it was last written
   * to `_svcsync_connections` (which every process and `svcsync status` read).
   */
  private readonly authorizations = new Map<string, { seen: AuthorizationSeen; written: number }>();
  /** Stops watching the heap (src/core/heap-budget.ts), which the process does while it runs jobs. */
  private unwatchHeap: () => void = () => undefined;

  constructor(
    private readonly ctx: RunnerContext,
    /** The job list changed (discovery found organizations, a backfill finished): a cron scheduler re-reads it. */
    private readonly onJobsChanged: () => void = () => undefined,
  ) {
    this.catalog = ctx.catalog ?? CATALOG;
    this.backfill = ctx.backfill ?? ctx.config.daemon.backfill;
    this.limiters =
      ctx.limiters ??
      new LimiterRegistry({
        clock: ctx.clock,
        store: new WarehouseUsageStore(ctx.warehouse, () => ctx.clock.now()),
        logger: ctx.logger,
      });
    this.records = new RecordBudget(ctx.config.sync.max_records_in_flight);
    this.freshness = new FreshnessKeeper({ config: ctx.config, warehouse: ctx.warehouse, logger: ctx.logger, catalog: this.catalog });
    // One token serves every job.
    this.tokens = new TokenCacheRegistry({
      clock: ctx.clock,
      secrets: ctx.secrets,
      logger: ctx.logger,
      regions: ctx.config.regions,
      timeoutMs: ctx.config.sync.request_timeout_ms,
      fetch: ctx.fetch,
    });
    this.metrics = new DaemonMetrics({
      clock: ctx.clock,
      limiters: this.limiters,
      warehouse: ctx.warehouse,
      quota: {
        organizations: () => this.quotaOrganizations(),
        limiter: (connection, organizationId) => this.limiterFor(connection, organizationId),
        jobs: () => this.jobList,
      },
      records: this.records,
    });
    const settings = ctx.config.daemon;
    this.holds = new Holds({
      clock: ctx.clock,
      retryBackoffMs: settings.retry_backoff_ms,
      retryBackoffMaxMs: settings.retry_backoff_max_ms,
    });
  }

  /**
   * Before the first job: watches the heap near `sync.heap_budget_mb` (the process's jobs share
   * it) and brings the warehouse to the latest migration.
   */
  async start(): Promise<void> {
    this.unwatchHeap();
    this.unwatchHeap = watchHeap(this.ctx.config.sync.heap_budget_mb).stop;
    await migrateToLatest(this.ctx.warehouse);
  }

  /** After the last job returned (runSync returns only after each branch committed its last page). */
  async stop(): Promise<void> {
    await this.limiters.flush();
    this.unwatchHeap();
    this.unwatchHeap = () => undefined;
  }

  /** Jobs as scheduled now. */
  jobs(): readonly JobSpec[] {
    return this.jobList;
  }

  knownOrganizations(): readonly KnownOrganization[] {
    return this.organizations;
  }

  /** Reads the organizations discovered so far (by any run) and rebuilds the job list. */
  async reloadOrganizations(): Promise<void> {
    const rows = await stateDb(this.ctx.warehouse.db).selectFrom('_svcsync_organizations').selectAll().execute();
    const byKey = new Map<string, KnownOrganization>();
    for (const r of rows) {
      if (Number(r.is_active ?? 1) === 0) continue;
      const connection = this.ctx.config.connections.find((c) => c.name === r.connection);
      if (!connection || !connection.families.includes(r.family as Family)) continue;
      const k = `${r.connection}|${r.organization_id}`;
      const o = byKey.get(k) ?? { connection: r.connection, organizationId: r.organization_id, families: [] };
      o.families.push(r.family as Family);
      byKey.set(k, o);
    }
    this.organizations = [...byKey.values()].sort(
      (a, b) => a.connection.localeCompare(b.connection) || a.organizationId.localeCompare(b.organizationId),
    );
    this.jobList = resolveJobs(this.ctx.config, this.organizations, { backfill: this.backfill, catalog: this.catalog }).filter(
      (j) => !this.finishedBackfills.has(j.id),
    );
    this.onJobsChanged();
  }

  private finishBackfill(job: JobSpec): void {
    this.finishedBackfills.add(job.id);
    this.jobList = this.jobList.filter((j) => j.id !== job.id);
    this.ctx.logger.info({ job: job.id }, 'backfill complete for this organization');
    this.onJobsChanged();
  }

  /**
   * Organizations whose quota the metrics show from start-up: those discovered so far and those
   * the configuration names, before any job of theirs ran.
   */
  private quotaOrganizations(): Array<{ connection: string; organizationId: string }> {
    const out = new Map(this.organizations.map((o) => [`${o.connection}\u0000${o.organizationId}`, o]));
    for (const c of this.ctx.config.connections)
      for (const id of c.organizations ?? []) out.set(`${c.name}\u0000${id}`, { connection: c.name, organizationId: id, families: [] });
    return [...out.values()];
  }

  /** The latest authorization result of each connection this process has seen. */
  authorizationResults(): AuthorizationSeen[] {
    return [...this.authorizations.values()].map((a) => a.seen);
  }

  /**
   * Keeps a run's verdict on its connection's authorization: in memory, and in
   * `_svcsync_connections` when it changed or the row is older than a few minutes (so a fleet
   * of short jobs does not write it after every run). A failed write is logged: the run's own
   * outcome stands.
   */
  private async noteAuthorization(seen: AuthorizationSeen | null): Promise<void> {
    if (!seen) return;
    const before = this.authorizations.get(seen.connection);
    const changed = before?.seen.result !== seen.result || before.seen.error !== seen.error;
    if (changed && seen.result === 'refused')
      this.ctx.logger.warn(
        { connection: seen.connection, hint: seen.hint },
        `connection ${seen.connection} cannot authorize: ${seen.error}`,
      );
    else if (changed && before) this.ctx.logger.info({ connection: seen.connection }, `connection ${seen.connection} authorized again`);
    const due = changed || seen.at - before.written >= AUTHORIZATION_REFRESH_MS;
    this.authorizations.set(seen.connection, { seen, written: due ? seen.at : (before?.written ?? 0) });
    if (!due) return;
    await recordAuthorization(this.ctx.warehouse.db, seen).catch((err: unknown) =>
      this.ctx.logger.warn({ err, connection: seen.connection }, "could not record the connection's authorization result"),
    );
  }

  /** The organization's limiter, created with its connection's limits if no run made it yet. */
  async limiterFor(connectionName: string, organizationId: string): Promise<OrgLimiter | null> {
    const connection = this.ctx.config.connections.find((c) => c.name === connectionName);
    if (!connection) return null;
    return this.limiters.get(organizationId, { limits: connectionLimits(connection), timeZone: connection.quota_reset_time_zone });
  }

  /** The organization's jobs and one snapshot of its state that every one of their estimates can read. */
  private async orgSnapshot(
    connection: string,
    organizationId: string,
    read?: OrgSnapshot,
  ): Promise<{ orgJobs: JobSpec[]; snap: OrgSnapshot }> {
    const orgJobs = this.jobList.filter((j) => j.connection === connection && j.organizationId === organizationId);
    if (read) return { orgJobs, snap: read };
    const snap = await loadSnapshot(this.ctx.warehouse, connection, organizationId, {
      rowsFor: [...new Set(orgJobs.flatMap(rowsNeeded))],
      config: this.ctx.config,
    });
    return { orgJobs, snap };
  }

  /** Estimated requests of a job (0 for discovery, which no organization is charged for). */
  async estimate(job: JobSpec, snap?: OrgSnapshot): Promise<number> {
    if (job.organizationId === null) return 0;
    if (job.fresh) return this.freshness.estimate(job, job.trees, this.ctx.clock.now());
    const s =
      snap ??
      (await loadSnapshot(this.ctx.warehouse, job.connection, job.organizationId, { rowsFor: rowsNeeded(job), config: this.ctx.config }));
    const plan = this.ctx.config.connections.find((c) => c.name === job.connection)?.plan ?? 'free';
    const cycle = { everyDays: childrenCycleDays(this.ctx.config, plan), now: this.ctx.clock.now() };
    const fromDb = estimateJob(job, s, this.ctx.config.sync.per_page, this.catalog, cycle);
    const last = this.history.get(job.id);
    if (last === undefined || job.mode !== 'incremental') return fromDb;
    const queued = job.streams.reduce((a, n) => a + (s.streams.get(n)?.pending.detail ?? 0) + (s.streams.get(n)?.pending.children ?? 0), 0);
    return Math.max(1, last) + queued;
  }

  /**
   * Whether a job may start now, and on which streams with what floor: the budget rules of
   * docs/daemon.md. The daemon's scheduler asks it before each start; a worker before each job
   * it takes (passing the snapshot `admitHook` read, if it asked that first).
   */
  async admit(job: JobSpec, now: number, snapshot?: OrgSnapshot): Promise<Admission> {
    if (job.organizationId === null) return { run: true, job, floor: 0, estimate: 0 };
    const limiter = await this.limiterFor(job.connection, job.organizationId);
    if (!limiter) return { run: false, reason: 'busy: connection no longer configured' };
    const blocked = limiter.blockedUntil();
    if (blocked) {
      this.holds.pause(job.connection, job.organizationId, blocked.getTime());
      return { run: false, reason: `paused: the daily quota is spent (429 code 45); resumes at ${blocked.toISOString()}` };
    }
    const { orgJobs, snap } = await this.orgSnapshot(job.connection, job.organizationId, snapshot);
    let effective = job;
    if (job.jobClass === 'backfill') {
      const phases = job.trees.map((t) => ({ t, phase: backfillPhase(t, job, snap) }));
      const lists = phases.filter((p) => p.phase === 'list').map((p) => p.t);
      const children = phases.filter((p) => p.phase === 'children').map((p) => p.t);
      if (lists.length === 0 && children.length === 0) {
        this.finishBackfill(job);
        return { run: false, reason: 'busy: backfill complete' };
      }
      // Lists first; then the queued child work, drained by an incremental run of those trees.
      effective = lists.length ? narrowJob(job, lists, this.catalog) : { ...narrowJob(job, children, this.catalog), mode: 'incremental' };
    } else {
      // Trees a backfill has started on are the backfill's until it finishes them.
      const owned = new Set(this.backfill ? treesInBackfill(job.trees, snap, this.catalog) : []);
      let trees = job.trees.filter((t) => !owned.has(t));
      if (job.trees.length > 0 && trees.length === 0) return { run: false, reason: 'busy: a backfill in progress owns these streams' };
      if (job.fresh && !job.early) {
        await this.freshness.replan(job, await this.freshDay(job, orgJobs, snap, limiter, now), snap);
        const due = new Set(this.freshness.dueTrees(job, now));
        trees = trees.filter((t) => due.has(t));
        if (trees.length === 0) return { run: false, reason: 'busy: no stream is due yet' };
      }
      effective = narrowJob(job, trees, this.catalog);
    }
    const estimate = await this.estimate(effective, snap);
    const withEstimates = await this.demandsOf(
      orgJobs.filter((j) => j.priority < job.priority),
      snap,
    );
    const reset = limiter.nextReset().getTime();
    const floor = job.priority === 0 ? 0 : heldForHigher(job.priority, withEstimates, now, reset, this.ctx.config.daemon.budget_safety);
    // A freshness run is paced instead: it reads what its share allows, newest first, and stops there.
    if (job.fresh) return this.paced(effective, estimate, limiter.remainingToday(), now);
    const d = decide(effective, estimate, { remaining: limiter.remainingToday(), nextReset: reset }, floor);
    if (!d.run) return { run: false, reason: d.reason };
    return { run: true, job: effective, floor: d.floor, estimate };
  }

  /** A webhook checked against the job list: the organization's incremental jobs and trees to run, or why not. */
  resolveHook(target: HookTarget): HookResolution {
    return resolveHook(target, this.organizations, this.jobList, this.catalog);
  }

  /**
   * Whether a hook may start an extra incremental run: only above what the scheduled incremental
   * fires until the reset need. Also returns the organization's snapshot it read, so that a
   * worker admitting the run right after passes it to `admit` instead of reading the same state twice.
   */
  async admitHook(job: JobSpec, now: number): Promise<{ run: boolean; reason: string; snapshot?: OrgSnapshot }> {
    const limiter = await this.limiterFor(job.connection, job.organizationId!);
    if (!limiter) return { run: false, reason: 'connection no longer configured' };
    if (limiter.blockedUntil()) return { run: false, reason: 'the daily quota is spent (429 code 45)' };
    const { orgJobs, snap } = await this.orgSnapshot(job.connection, job.organizationId!);
    const estimate = await this.estimate(job, snap);
    const scheduled = await this.demandsOf(
      orgJobs.filter((j) => j.priority === 0),
      snap,
    );
    const held = heldForHigher(1, scheduled, now, limiter.nextReset().getTime(), this.ctx.config.daemon.budget_safety);
    return { ...hookBudget(estimate, limiter.remainingToday(), held), snapshot: snap };
  }

  /**
   * A freshness run on a short day stops at the hour's share (its floor: what must be left when
   * it stops), or does not start while the last hour spent it.
   */
  private paced(job: JobSpec, estimate: number, remaining: number, now: number): Admission {
    const allowance = Math.min(remaining, this.freshness.allowance(job, now));
    if (allowance < 1) return { run: false, reason: "busy: the day is short and this hour's share of it is spent" };
    return { run: true, job, floor: Math.max(0, remaining - allowance), estimate: Math.min(estimate, allowance) };
  }

  /** Each job's estimate, and a freshness job's demand until the reset as last planned (`heldForHigher`). */
  private demandsOf(jobs: readonly JobSpec[], snap: OrgSnapshot): Promise<Array<{ job: JobSpec; estimate: number; demand?: number }>> {
    return Promise.all(
      jobs.map(async (j) => {
        const demand = j.fresh ? this.freshness.demand(j) : null;
        return { job: j, estimate: await this.estimate(j, snap), ...(demand === null ? {} : { demand }) };
      }),
    );
  }

  /**
   * The day a freshness plan works within: what the organization's limiter has left (lowered to
   * what the server reports, A15, so other integrations' spending shows) and what the other
   * scheduled jobs need until the reset.
   */
  private async freshDay(
    job: JobSpec,
    orgJobs: readonly JobSpec[],
    snap: OrgSnapshot,
    limiter: OrgLimiter,
    now: number,
  ): Promise<FreshDay> {
    const reset = limiter.nextReset().getTime();
    let reserved = 0;
    for (const j of orgJobs) {
      if (j.id === job.id || j.fresh || j.jobClass === 'backfill') continue;
      reserved += (await this.estimate(j, snap)) * j.cron.between(now, reset - 1).length;
    }
    return { now, reset, remaining: limiter.remainingToday(), reserved };
  }

  /** After a freshness run: what each tree's poll found, and the plan for the rest of the day. */
  private async notePolls(job: JobSpec, startedAt: number, summary: SyncSummary | undefined): Promise<void> {
    if (!job.fresh || job.organizationId === null || !summary) return;
    this.freshness.spend(job, startedAt, summary.requests);
    const found = new Map<string, number>();
    for (const o of summary.organizations)
      for (const s of o.streams) if (job.trees.includes(s.stream) && s.status === 'ok') found.set(s.stream, s.written);
    // The run may have been narrowed to the due trees: the plan covers all of the job's.
    const whole = this.jobList.find((j) => j.id === job.id) ?? job;
    this.freshness.polled(whole, found, startedAt);
    try {
      const limiter = await this.limiterFor(job.connection, job.organizationId);
      if (!limiter) return;
      const { orgJobs, snap } = await this.orgSnapshot(job.connection, job.organizationId);
      const now = this.ctx.clock.now();
      await this.freshness.replan(whole, await this.freshDay(whole, orgJobs, snap, limiter, now), snap);
    } catch (err) {
      this.ctx.logger.warn({ err, job: job.id }, 'could not plan the next polls; the streams are polled when next due');
    }
  }

  /** One runSync of the job, stopped by `run.soft` between pages and abandoned by `run.hard`; never throws. */
  async runJob(job: JobSpec, run: JobRun): Promise<JobOutcome> {
    const started = this.ctx.clock.now();
    this.metrics.jobStarted(job);
    const controller = new AbortController();
    const onHard = (): void => controller.abort(run.hard.reason);
    run.hard.addEventListener('abort', onHard, { once: true });
    const limiter = job.organizationId === null ? null : await this.limiterFor(job.connection, job.organizationId);
    const stop: StopRequest = {
      reason: () => {
        if (run.soft.aborted) return 'shutdown';
        // Jobs after the incremental class stop at the share held for higher priorities; asked
        // before a request is sent, so the floor stays untouched.
        if (limiter && (job.priority > 0 || job.fresh) && limiter.remainingToday() <= run.floor) return 'budget';
        return null;
      },
    };
    // An answered request shows the service accepted the connection's token.
    let answered = 0;
    const onRequest = (e: RequestEvent): void => {
      if (e.outcome === 'ok') answered++;
      this.metrics.onRequest(e);
      run.onRequest?.();
    };
    let summary: SyncSummary | undefined;
    let outcome: JobOutcome;
    try {
      summary = await runSync({
        config: this.ctx.config,
        warehouse: this.ctx.warehouse,
        clock: this.ctx.clock,
        logger: this.ctx.logger.child({ job: job.id }),
        secrets: this.ctx.secrets,
        signal: controller.signal,
        stop,
        command: daemonCommand(job),
        mode: job.mode,
        wholeReadCycle: true,
        connection: job.connection,
        organization: job.organizationId ?? undefined,
        streams: job.streams,
        catalog: this.catalog,
        fetch: this.ctx.fetch,
        random: this.ctx.random,
        limiters: this.limiters,
        tokens: this.tokens,
        records: this.records,
        heapWatched: true,
        onRequest,
      });
      outcome = outcomeOf(job, summary);
      if (outcome.status === 'ok' && (job.jobClass === 'incremental' || job.jobClass === 'settings'))
        this.history.set(job.id, outcome.requests ?? 0);
    } catch (err) {
      // A stopped run still counts what it committed.
      if (err instanceof RunStopped) summary = err.summary;
      outcome = failedOutcome(job, err, controller.signal.aborted);
    } finally {
      run.hard.removeEventListener('abort', onHard);
    }
    const written = summary
      ? summary.organizations.flatMap((o) =>
          o.streams.map((s) => ({
            organizationId: o.organizationId,
            stream: s.stream,
            written: s.written,
            deletedTables: s.deletedTables,
          })),
        )
      : [];
    this.metrics.jobFinished(job, outcome, (this.ctx.clock.now() - started) / 1000, written);
    await this.notePolls(job, started, summary);
    await this.noteAuthorization(authorizationOf(job.connection, summary?.connectionFailures ?? [], answered, this.ctx.clock.now()));
    if (job.jobClass === 'organizations' && (outcome.status === 'ok' || outcome.status === 'partial')) await this.reloadOrganizations();
    return outcome;
  }
}

/** How often an unchanged authorization result is written again, so `svcsync status` shows it as recent. */
const AUTHORIZATION_REFRESH_MS = 5 * 60_000;

/** A run that threw: abandoned at the shutdown bound, stopped between pages (shutdown, budget), or failed. */
function failedOutcome(job: JobSpec, err: unknown, abandoned: boolean): JobOutcome {
  if (abandoned) return { status: 'stopped', error: 'stopped (abandoned at the shutdown bound)' };
  if (err instanceof StopRequested)
    return {
      status: 'stopped',
      error: err.reason === 'budget' ? 'stopped at its share of the daily budget; continues on a later tick' : `stopped (${err.reason})`,
    };
  return { status: 'failed', failed: [job.organizationId], error: err instanceof Error ? err.message : String(err) };
}
