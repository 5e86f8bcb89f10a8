import { narrowJob, type JobSpec } from './timing/jobs.js';
import { warnScheduleMisfits } from './planning/plan.js';
import type { JobLoopState } from './surface/health.js';
import { HookDebouncer, type HookResult, type HookTarget } from './surface/hooks.js';
import type { JobOutcome } from './timing/job-run.js';
import { JobRunner, type RunnerContext } from './job-runner.js';
import { Scheduler, type SchedulerEvent } from './timing/scheduler.js';
import type { LiveStatus } from './surface/live-status.js';

/** Everything the daemon needs, passed in; nothing global. */
export interface DaemonContext extends RunnerContext {
  /** Test seam: every scheduler event. */
  onEvent?: (e: SchedulerEvent) => void;
}

/**
 * `svcsync daemon`: the job runner driven by a cron `Scheduler` on one warehouse, webhooks that
 * make an organization's incremental run due early, and the live state for `/status.json`. The
 * runner estimates each job's cost against what is left of the organization's day before it
 * starts; the scheduler stops jobs between pages on shutdown.
 */
export class Daemon {
  readonly runner: JobRunner;
  readonly scheduler: Scheduler;
  /** Webhooks: coalesced per organization, and where the budget made them fall back to the schedule. */
  private readonly hooks: HookDebouncer;
  private readonly hookFallback = new Map<string, { at: number; until: number; reason: string }>();
  private startedAt: number | null = null;
  private stopping = false;

  constructor(private readonly ctx: DaemonContext) {
    this.runner = new JobRunner(ctx, () => this.scheduler.refresh());
    const settings = ctx.config.daemon;
    this.scheduler = new Scheduler({
      clock: ctx.clock,
      logger: ctx.logger.child({ component: 'scheduler' }),
      jobs: () => this.runner.jobs(),
      runJob: (job, run) => this.runner.runJob(job, run),
      admit: (job, now) => this.runner.admit(job, now),
      dueAt: (job, now) => this.runner.freshness.dueAt(job, now),
      holds: this.runner.holds,
      maxConcurrent: settings.max_concurrent_jobs,
      onEvent: (e) => {
        if (e.type === 'skipped') this.runner.metrics.jobSkipped(e.job, e.reason);
        ctx.onEvent?.(e);
      },
    });
    this.hooks = new HookDebouncer(ctx.clock, settings.hooks.debounce_ms, (key, trees) => {
      this.fireHook(key, trees).catch((err: unknown) => ctx.logger.error({ err }, 'webhook run failed to start'));
    });
  }

  /**
   * A webhook with a valid secret: makes the organization's incremental run of the family's
   * streams (or the named ones) due after the debounce delay. Never reads or trusts a payload.
   */
  receiveHook(target: HookTarget): Promise<HookResult> {
    return Promise.resolve(this.hookResult(target));
  }

  private hookResult(target: HookTarget): HookResult {
    const resolved = this.runner.resolveHook(target);
    if (resolved.kind !== 'ok') return resolved;
    const { key, trees } = resolved;
    const fallback = this.hookFallback.get(key);
    if (fallback && fallback.until > this.ctx.clock.now()) {
      this.runner.metrics.hookReceived(target.connection, false);
      return { kind: 'fallback', reason: fallback.reason };
    }
    const r = this.hooks.add(key, trees);
    this.runner.metrics.hookReceived(target.connection, r.kind === 'coalesced');
    return { kind: 'accepted', runAt: r.at, coalesced: r.kind === 'coalesced' };
  }

  /** The debounce delay is over: fire the organization's incremental job on the trees the hooks named, if the budget allows. */
  private async fireHook(key: string, trees: string[]): Promise<void> {
    const [connection, organizationId] = key.split('\u0000') as [string, string];
    const now = this.ctx.clock.now();
    for (const job of this.runner.jobs()) {
      if (job.connection !== connection || job.organizationId !== organizationId || job.jobClass !== 'incremental') continue;
      const mine = job.trees.filter((t) => trees.includes(t));
      if (mine.length === 0) continue;
      const verdict = await this.runner.admitHook(narrowJob(job, mine, this.ctx.catalog), now);
      if (!verdict.run) {
        this.hookFallback.set(key, { at: now, until: now + this.ctx.config.daemon.hooks.debounce_ms, reason: verdict.reason });
        this.runner.metrics.hookRun(connection, 'fallback');
        this.ctx.logger.warn({ job: job.id, reason: verdict.reason }, 'webhook run not started: left to the schedule');
        continue;
      }
      this.hookFallback.delete(key);
      this.runner.metrics.hookRun(connection, 'started');
      this.ctx.logger.info({ job: job.id, streams: mine }, 'webhook run due');
      this.scheduler.fireSoon(job.id, mine);
    }
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
      hookRunsDue: this.runner.knownOrganizations().flatMap((o) => {
        const at = this.hooks.dueAt(`${o.connection}\u0000${o.organizationId}`);
        return at === null ? [] : [{ connection: o.connection, organizationId: o.organizationId, at: new Date(at).toISOString() }];
      }),
      hookFallbacks: [...this.hookFallback.entries()]
        .filter(([, f]) => now - f.at < 24 * 3_600_000)
        .map(([k, f]) => {
          const [connection, organizationId] = k.split('\u0000') as [string, string];
          return { connection, organizationId, at: new Date(f.at).toISOString(), reason: f.reason };
        }),
      freshness: this.runner.freshness.live(now),
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

  /** Loads what the warehouse knows, schedules, and discovers organizations at once when none are known. */
  async start(): Promise<void> {
    this.startedAt = this.ctx.clock.now();
    await this.runner.start();
    await this.runner.reloadOrganizations();
    this.scheduler.start();
    const known = this.runner.knownOrganizations();
    const unknown = this.ctx.config.connections.filter((c) => !known.some((o) => o.connection === c.name));
    for (const c of unknown) {
      const job = this.runner.jobs().find((j) => j.connection === c.name && j.jobClass === 'organizations');
      if (job) await this.runNow(job);
    }
    await warnScheduleMisfits({ ...this.ctx, now: this.ctx.clock.now(), backfill: this.ctx.backfill });
  }

  /** Runs one job outside its schedule (start-up discovery; tests). */
  async runNow(job: JobSpec): Promise<JobOutcome> {
    const soft = new AbortController();
    const hard = new AbortController();
    const outcome = await this.runner.runJob(job, { soft: soft.signal, hard: hard.signal, floor: 0, estimate: 0 });
    this.scheduler.report(job, outcome);
    return outcome;
  }

  /** Graceful stop: no new jobs, running ones end after their page, abandoned at the bound. */
  async stop(graceMs = this.ctx.config.daemon.shutdown_grace_ms): Promise<void> {
    this.stopping = true;
    this.hooks.cancelAll();
    await this.scheduler.stop(graceMs);
    await this.runner.stop();
  }

  isStopping(): boolean {
    return this.stopping;
  }

  /** The job loop for `/healthz`: starting until the scheduler is armed, stopping once shutdown began. */
  jobLoop(): JobLoopState {
    if (this.stopping) return { state: 'stopping', tickSince: null };
    return { state: this.scheduler.isStarted() ? 'running' : 'starting', tickSince: this.scheduler.tickingSince() };
  }
}
