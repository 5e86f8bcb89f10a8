import { connectionLimits, TokenCacheRegistry } from '../api/client.js';
import { LimiterRegistry, type OrgLimiter } from '../api/limiter.js';
import type { RequestEvent } from '../api/client.js';
import { CATALOG } from '../catalog/index.js';
import { qualifiedName, type StreamSpec } from '../catalog/types.js';
import type { Family } from '../catalog/families.js';
import type { Config } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { watchHeap } from '../core/heap-budget.js';
import { RecordBudget } from '../extractors/record-budget.js';
import { StopRequested, type StopRequest } from '../extractors/stop.js';
import { runSync, type SyncSummary } from '../extractors/sync-run.js';
import { migrateToLatest } from '../loaders/migrate.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { stateDb } from '../state/tables.js';
import { WarehouseUsageStore } from '../state/usage-store.js';
import { decide, heldForHigher } from './budget.js';
import { hookBudget, HookDebouncer, type HookTarget } from './hooks.js';
import type { HookResult } from './http-server.js';
import { daemonCommand, estimateJob, loadSnapshot, rowsNeeded, backfillPhase, treesInBackfill, type OrgSnapshot } from './estimate.js';
import { narrowJob, resolveJobs, type JobSpec, type KnownOrganization } from './jobs.js';
import { DaemonMetrics } from './metrics.js';
import { Scheduler, type Admission, type JobOutcome, type JobRun, type JobStatus, type SchedulerEvent } from './scheduler.js';

/** Everything the daemon needs, passed in; nothing global. */
export interface DaemonContext {
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
  onEvent?: (e: SchedulerEvent) => void;
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

/** The last thing each job did, for status and metrics. */
export interface JobReport {
  at: number;
  outcome: JobOutcome;
  summary?: SyncSummary;
}

/**
 * `svcsync daemon`: one warehouse, one limiter registry, one scheduler. Jobs are runSync
 * calls on subsets of streams; the daemon estimates each job's cost against what is left of
 * the organization's day before starting it, and stops jobs between pages on shutdown.
 */
export class Daemon {
  readonly scheduler: Scheduler;
  readonly limiters: LimiterRegistry;
  private readonly tokens: TokenCacheRegistry;
  /** One cap on records in flight for all the jobs this process runs at once. */
  private readonly records: RecordBudget;
  /** Stops watching the heap (src/core/heap-budget.ts), which the daemon does for its whole life. */
  private unwatchHeap: () => void = () => undefined;
  readonly metrics: DaemonMetrics;
  readonly reports = new Map<string, JobReport>();
  private readonly warehouse: Warehouse;
  private readonly catalog: readonly StreamSpec[];
  private jobList: JobSpec[] = [];
  private organizations: KnownOrganization[] = [];
  private readonly backfill: boolean;
  /** Actual requests of each job's last complete run: the best estimate of its next. */
  private readonly history = new Map<string, number>();
  private stopping = false;
  /** Webhooks: coalesced per organization, and where the budget made them fall back to the schedule. */
  private readonly hooks: HookDebouncer;
  private readonly hookFallback = new Map<string, { at: number; until: number; reason: string }>();
  private startedAt: number | null = null;

  constructor(private readonly ctx: DaemonContext) {
    this.catalog = ctx.catalog ?? CATALOG;
    this.backfill = ctx.backfill ?? ctx.config.daemon.backfill;
    this.warehouse = ctx.warehouse;
    this.limiters =
      ctx.limiters ??
      new LimiterRegistry({
        clock: ctx.clock,
        store: new WarehouseUsageStore(ctx.warehouse.db, () => ctx.clock.now()),
        logger: ctx.logger,
      });
    this.records = new RecordBudget(ctx.config.sync.max_records_in_flight);
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
      quota: { organizations: () => this.organizations },
      records: this.records,
    });
    const settings = ctx.config.daemon;
    this.scheduler = new Scheduler({
      clock: ctx.clock,
      logger: ctx.logger.child({ component: 'scheduler' }),
      jobs: () => this.jobList,
      runJob: (job, run) => this.runJob(job, run),
      admit: (job, now) => this.admit(job, now),
      maxConcurrent: settings.max_concurrent_jobs,
      retryBackoffMs: settings.retry_backoff_ms,
      retryBackoffMaxMs: settings.retry_backoff_max_ms,
      onEvent: (e) => {
        if (e.type === 'skipped') this.metrics.jobSkipped(e.job, e.reason);
        if (e.type === 'started') this.metrics.jobStarted(e.job);
        ctx.onEvent?.(e);
      },
    });
    this.hooks = new HookDebouncer(ctx.clock, settings.hooks.debounce_ms, (key, trees) => {
      this.fireHook(key, trees).catch((err: unknown) => ctx.logger.error({ err }, 'webhook run failed to start'));
    });
  }

  /** The connection's webhook secret, if hooks are on for it. */
  hookSecret(connection: string): string | undefined {
    return this.ctx.config.connections.find((c) => c.name === connection)?.webhook_secret;
  }

  /**
   * A webhook with a valid secret: makes the organization's incremental run of the family's
   * streams (or the named ones) due after the debounce delay. Never reads or trusts a payload.
   */
  receiveHook(target: HookTarget): Promise<HookResult> {
    return Promise.resolve(this.hookResult(target));
  }

  /**
   * What a hook names, checked against what is scheduled: the organization's incremental jobs
   * and the trees (top-level streams) of the family to run, or why not (unknown, invalid).
   */
  resolveHook(
    target: HookTarget,
  ): { kind: 'ok'; key: string; trees: string[]; jobs: JobSpec[] } | Exclude<HookResult, { kind: 'accepted' | 'fallback' }> {
    const connection = this.ctx.config.connections.find((c) => c.name === target.connection)!;
    const family = target.family as Family;
    const org = this.organizations.find(
      (o) => o.connection === connection.name && o.organizationId === target.organizationId && o.families.includes(family),
    );
    if (!org)
      return {
        kind: 'unknown',
        message:
          `organization ${target.organizationId} is not known to connection ${connection.name} for family ${target.family}: ` +
          'svcsync syncs the organizations its discovery found (svcsync status lists them)',
      };
    const jobs = this.jobList.filter(
      (j) => j.connection === connection.name && j.organizationId === org.organizationId && j.jobClass === 'incremental',
    );
    const familyTrees = jobs.flatMap((j) => j.trees).filter((t) => t.startsWith(`${family}.`));
    const trees = new Set<string>();
    for (const name of target.streams) {
      const qualified = name.includes('.') ? name : `${family}.${name}`;
      let spec = this.catalog.find((s) => qualifiedName(s) === qualified);
      // A child stream is synced with its parent's tree.
      while (spec?.parent) {
        const parent = spec.parent.stream;
        spec = this.catalog.find((s) => s.family === spec!.family && s.name === parent);
      }
      const tree = spec ? qualifiedName(spec) : qualified;
      if (!familyTrees.includes(tree))
        return {
          kind: 'invalid',
          message:
            `stream "${name}" is not an incremental stream of ${target.family} for this organization; ` +
            `name one of: ${familyTrees.join(', ')}`,
        };
      trees.add(tree);
    }
    if (familyTrees.length === 0)
      return { kind: 'invalid', message: `no incremental stream of ${target.family} is scheduled for this organization` };
    const wanted = trees.size ? [...trees] : familyTrees;
    return {
      kind: 'ok',
      key: `${connection.name}\u0000${org.organizationId}`,
      trees: wanted,
      jobs: jobs.filter((j) => j.trees.some((t) => wanted.includes(t))),
    };
  }

  private hookResult(target: HookTarget): HookResult {
    const resolved = this.resolveHook(target);
    if (resolved.kind !== 'ok') return resolved;
    const { key, trees } = resolved;
    this.metrics.hooksReceived.inc({ connection: target.connection });
    const fallback = this.hookFallback.get(key);
    if (fallback && fallback.until > this.ctx.clock.now()) return { kind: 'fallback', reason: fallback.reason };
    const r = this.hooks.add(key, trees);
    if (r.kind === 'coalesced') this.metrics.hooksCoalesced.inc({ connection: target.connection });
    return { kind: 'accepted', runAt: r.at, coalesced: r.kind === 'coalesced' };
  }

  /** The debounce delay is over: fire the organization's incremental job on the trees the hooks named, if the budget allows. */
  private async fireHook(key: string, trees: string[]): Promise<void> {
    const [connection, organizationId] = key.split('\u0000') as [string, string];
    const now = this.ctx.clock.now();
    for (const job of this.jobList) {
      if (job.connection !== connection || job.organizationId !== organizationId || job.jobClass !== 'incremental') continue;
      const mine = job.trees.filter((t) => trees.includes(t));
      if (mine.length === 0) continue;
      const verdict = await this.hookAllowed(narrowJob(job, mine, this.catalog), now);
      if (!verdict.run) {
        this.hookFallback.set(key, { at: now, until: now + this.ctx.config.daemon.hooks.debounce_ms, reason: verdict.reason });
        this.metrics.hookRuns.inc({ connection, result: 'fallback' });
        this.ctx.logger.warn({ job: job.id, reason: verdict.reason }, 'webhook run not started: left to the schedule');
        continue;
      }
      this.hookFallback.delete(key);
      this.metrics.hookRuns.inc({ connection, result: 'started' });
      this.ctx.logger.info({ job: job.id, streams: mine }, 'webhook run due');
      this.scheduler.fireSoon(job.id, mine);
    }
  }

  /** An extra incremental run fits only above what the scheduled incremental fires until the reset need. */
  /**
   * Also returns the organization's snapshot it read, so that a worker admitting the run right
   * after passes it to `admit` instead of reading the same state twice.
   */
  async hookAllowed(job: JobSpec, now: number): Promise<{ run: boolean; reason: string; snapshot?: OrgSnapshot }> {
    const limiter = await this.limiterFor(job.connection, job.organizationId!);
    if (!limiter) return { run: false, reason: 'connection no longer configured' };
    if (limiter.blockedUntil()) return { run: false, reason: 'the daily quota is spent (429 code 45)' };
    const { orgJobs, snap } = await this.orgSnapshot(job.connection, job.organizationId!);
    const estimate = await this.estimate(job, snap);
    const scheduled = await Promise.all(
      orgJobs.filter((j) => j.priority === 0).map(async (j) => ({ job: j, estimate: await this.estimate(j, snap) })),
    );
    const held = heldForHigher(1, scheduled, now, limiter.nextReset().getTime(), this.ctx.config.daemon.budget_safety);
    return { ...hookBudget(estimate, limiter.remainingToday(), held), snapshot: snap };
  }

  /** What the daemon is doing now, for the status page and /status.json. */
  liveStatus(): LiveStatus {
    const now = this.ctx.clock.now();
    return {
      startedAt: this.startedAt === null ? null : new Date(this.startedAt).toISOString(),
      running: this.scheduler.runningJobs().map((j) => ({
        job: j.id,
        connection: j.connection,
        organizationId: j.organizationId,
        streams: j.trees,
      })),
      hooks: this.ctx.config.connections.map((c) => ({ connection: c.name, active: Boolean(c.webhook_secret) })),
      hookRunsDue: this.organizations.flatMap((o) => {
        const at = this.hooks.dueAt(`${o.connection}\u0000${o.organizationId}`);
        return at === null ? [] : [{ connection: o.connection, organizationId: o.organizationId, at: new Date(at).toISOString() }];
      }),
      hookFallbacks: [...this.hookFallback.entries()]
        .filter(([, f]) => now - f.at < 24 * 3_600_000)
        .map(([k, f]) => {
          const [connection, organizationId] = k.split('\u0000') as [string, string];
          return { connection, organizationId, at: new Date(f.at).toISOString(), reason: f.reason };
        }),
      nextRuns: this.scheduler
        .nextRuns()
        .filter((r) => r.job.organizationId !== null)
        .map((r) => ({
          job: r.job.id,
          connection: r.job.connection,
          organizationId: r.job.organizationId!,
          at: new Date(r.at).toISOString(),
        })),
    };
  }

  /** Jobs as scheduled now. */
  jobs(): readonly JobSpec[] {
    return this.jobList;
  }

  knownOrganizations(): readonly KnownOrganization[] {
    return this.organizations;
  }

  /** Loads what the warehouse knows, schedules, and discovers organizations at once when none are known. */
  async start(): Promise<void> {
    this.startedAt = this.ctx.clock.now();
    this.startHeapWatch();
    await migrateToLatest(this.ctx.warehouse);
    await this.reloadOrganizations();
    this.scheduler.start();
    const unknown = this.ctx.config.connections.filter((c) => !this.organizations.some((o) => o.connection === c.name));
    for (const c of unknown) {
      const job = this.jobList.find((j) => j.connection === c.name && j.jobClass === 'organizations');
      if (job) await this.runNow(job);
    }
  }

  /**
   * Keeps the process's heap near `sync.heap_budget_mb` until `stop()` (the daemon's jobs share
   * one process; a worker process calls this from its own start).
   */
  startHeapWatch(): void {
    this.unwatchHeap();
    this.unwatchHeap = watchHeap(this.ctx.config.sync.heap_budget_mb).stop;
  }

  /** Stops watching the heap (the daemon's stop; a worker's). */
  stopHeapWatch(): void {
    this.unwatchHeap();
    this.unwatchHeap = () => undefined;
  }

  /** Runs one job outside its schedule (start-up discovery; tests). */
  async runNow(job: JobSpec): Promise<JobOutcome> {
    const soft = new AbortController();
    const hard = new AbortController();
    const outcome = await this.runJob(job, { soft: soft.signal, hard: hard.signal, floor: 0, estimate: 0 });
    this.scheduler.report(job, outcome);
    return outcome;
  }

  /** Graceful stop: no new jobs, running ones end after their page, abandoned at the bound. */
  async stop(graceMs = this.ctx.config.daemon.shutdown_grace_ms): Promise<void> {
    this.stopping = true;
    this.hooks.cancelAll();
    await this.scheduler.stop(graceMs);
    // Every job has returned, and runSync returns only after each branch committed its last page.
    await this.limiters.flush();
    this.stopHeapWatch();
  }

  isStopping(): boolean {
    return this.stopping;
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
    this.scheduler.refresh();
  }

  private readonly finishedBackfills = new Set<string>();

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
    const snap = await loadSnapshot(this.ctx.warehouse, connection, organizationId, { rowsFor: [...new Set(orgJobs.flatMap(rowsNeeded))] });
    return { orgJobs, snap };
  }

  /** Estimated requests of a job (0 for discovery, which no organization is charged for). */
  async estimate(job: JobSpec, snap?: OrgSnapshot): Promise<number> {
    if (job.organizationId === null) return 0;
    const s = snap ?? (await loadSnapshot(this.ctx.warehouse, job.connection, job.organizationId, { rowsFor: rowsNeeded(job) }));
    const fromDb = estimateJob(job, s, this.ctx.config.sync.per_page, this.catalog);
    const last = this.history.get(job.id);
    if (last === undefined || job.mode !== 'incremental') return fromDb;
    const queued = job.streams.reduce((a, n) => a + (s.streams.get(n)?.pending.detail ?? 0) + (s.streams.get(n)?.pending.children ?? 0), 0);
    return Math.max(1, last) + queued;
  }

  /**
   * Whether a job may start now, and on which streams with what floor: the budget rules of
   * docs/daemon.md. The scheduler asks it before each start; `svcsync worker` before each job it takes.
   */
  async admit(job: JobSpec, now: number, snapshot?: OrgSnapshot): Promise<Admission> {
    if (this.stopping) return { run: false, reason: 'busy: stopping' };
    if (job.organizationId === null) return { run: true, job, floor: 0, estimate: 0 };
    const limiter = await this.limiterFor(job.connection, job.organizationId);
    if (!limiter) return { run: false, reason: 'busy: connection no longer configured' };
    const blocked = limiter.blockedUntil();
    if (blocked) {
      this.scheduler.pause(job.connection, job.organizationId, blocked.getTime());
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
      const trees = job.trees.filter((t) => !owned.has(t));
      if (job.trees.length > 0 && trees.length === 0) return { run: false, reason: 'busy: a backfill in progress owns these streams' };
      effective = narrowJob(job, trees, this.catalog);
    }
    const estimate = await this.estimate(effective, snap);
    const withEstimates = await Promise.all(
      orgJobs.filter((j) => j.priority < job.priority).map(async (j) => ({ job: j, estimate: await this.estimate(j, snap) })),
    );
    const reset = limiter.nextReset().getTime();
    const floor = job.priority === 0 ? 0 : heldForHigher(job.priority, withEstimates, now, reset, this.ctx.config.daemon.budget_safety);
    const d = decide(effective, estimate, { remaining: limiter.remainingToday(), nextReset: reset }, floor);
    if (!d.run) return { run: false, reason: d.reason };
    return { run: true, job: effective, floor: d.floor, estimate };
  }

  private finishBackfill(job: JobSpec): void {
    this.finishedBackfills.add(job.id);
    this.jobList = this.jobList.filter((j) => j.id !== job.id);
    this.ctx.logger.info({ job: job.id }, 'backfill complete for this organization');
    this.scheduler.refresh();
  }

  /** One runSync of the job, stopped by `run.soft` between pages and abandoned by `run.hard`; never throws. */
  async runJob(job: JobSpec, run: JobRun): Promise<JobOutcome> {
    const started = this.ctx.clock.now();
    const controller = new AbortController();
    const onHard = (): void => controller.abort(run.hard.reason);
    run.hard.addEventListener('abort', onHard, { once: true });
    const limiter = job.organizationId === null ? null : await this.limiterFor(job.connection, job.organizationId);
    const stop: StopRequest = {
      reason: () => {
        if (run.soft.aborted) return 'shutdown';
        // Jobs after the incremental class stop at the share held for higher priorities; asked
        // before a request is sent, so the floor stays untouched.
        if (limiter && job.priority > 0 && limiter.remainingToday() <= run.floor) return 'budget';
        return null;
      },
    };
    const onRequest = (e: RequestEvent): void => {
      this.metrics.onRequest(e);
      run.onRequest?.();
    };
    let summary: SyncSummary | undefined;
    let outcome: JobOutcome;
    try {
      summary = await runSync({
        config: this.ctx.config,
        warehouse: this.warehouse,
        clock: this.ctx.clock,
        logger: this.ctx.logger.child({ job: job.id }),
        secrets: this.ctx.secrets,
        signal: controller.signal,
        stop,
        command: daemonCommand(job),
        mode: job.mode,
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
      if (controller.signal.aborted) {
        outcome = { status: 'stopped', error: 'stopped (abandoned at the shutdown bound)' };
      } else if (err instanceof StopRequested) {
        outcome = {
          status: 'stopped',
          error:
            err.reason === 'budget' ? 'stopped at its share of the daily budget; continues on a later tick' : `stopped (${err.reason})`,
        };
      } else {
        outcome = { status: 'failed', failed: [job.organizationId], error: err instanceof Error ? err.message : String(err) };
      }
    } finally {
      run.hard.removeEventListener('abort', onHard);
    }
    const written = summary
      ? summary.organizations.flatMap((o) =>
          o.streams.map((s) => ({ organizationId: o.organizationId, stream: s.stream, written: s.written })),
        )
      : [];
    this.metrics.jobFinished(job, outcome, (this.ctx.clock.now() - started) / 1000, written);
    this.reports.set(job.id, { at: this.ctx.clock.now(), outcome, ...(summary ? { summary } : {}) });
    if (job.jobClass === 'organizations' && (outcome.status === 'ok' || outcome.status === 'partial')) await this.reloadOrganizations();
    return outcome;
  }
}

/**
 * A run's status for the scheduler: a failure anywhere makes it failed (partial when some
 * organization still succeeded); then a spent quota; then any partial organization.
 */
function jobStatus(summary: SyncSummary, quotaSpent: boolean): JobStatus {
  if (summary.connectionFailures.length > 0 || summary.organizations.some((o) => o.status === 'failed'))
    return summary.organizations.some((o) => o.status === 'ok') ? 'partial' : 'failed';
  if (quotaSpent) return 'quota';
  // A family skipped for want of a scope is reported, but backs nothing off: the next run can only do the same.
  if (summary.organizations.some((o) => o.status === 'partial') || summary.skippedFamilies.length > 0) return 'partial';
  if (summary.organizations.length > 0 && summary.organizations.every((o) => o.status === 'busy')) return 'busy';
  if (summary.organizations.some((o) => o.status === 'busy')) return 'partial';
  return 'ok';
}

/** The scheduler's view of a run: who failed, whether the quota is gone, whether a backfill ended. */
export function outcomeOf(job: JobSpec, summary: SyncSummary): JobOutcome {
  // A failed connection is `null`: the whole connection backs off.
  const failed: Array<string | null> = summary.connectionFailures.map(() => null);
  let quotaUntil: number | undefined;
  for (const o of summary.organizations) {
    if (o.status === 'failed') failed.push(o.organizationId);
    if (o.status === 'quota' && o.resumeAt) quotaUntil = Math.max(quotaUntil ?? 0, Date.parse(o.resumeAt));
  }
  const requests = summary.organizations.reduce((a, o) => a + o.streams.reduce((b, s) => b + s.requests, 0), 0);
  const errors = [
    ...summary.connectionFailures.map((f) => f.error),
    ...summary.skippedFamilies.map((f) => `${f.connection}: ${f.error}`),
    ...summary.organizations.filter((o) => o.error).map((o) => `${o.organizationId}: ${o.error}`),
  ];
  const status = jobStatus(summary, quotaUntil !== undefined);
  const out: JobOutcome = { status, requests, failed, quotaUntil, error: errors.join('; ') || undefined };
  if (job.jobClass === 'backfill' && status === 'ok') out.complete = true;
  return out;
}
