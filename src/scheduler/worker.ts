import PgBoss from 'pg-boss';
import pg from 'pg';
import { PLAIN_SCHEMA_NAME } from '../config/schema.js';
import type { Timer } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import type { OrgSnapshot } from './planning/estimate.js';
import type { JobLoopState } from './surface/health.js';
import type { HookResult, HookTarget } from './surface/hooks.js';
import { backoffMs } from './timing/holds.js';
import type { JobOutcome } from './timing/job-run.js';
import { JobRunner, type RunnerContext } from './job-runner.js';
import type { JobSpec } from './timing/jobs.js';
import { queueDepth, SYNC_QUEUE } from './surface/queue-depth.js';
import { warnScheduleMisfits } from './planning/plan.js';

/** The schedule tick: one a minute, fired by whichever worker's pg-boss wins its cron lock. */
export const TICK_QUEUE = 'svcsync-tick';
export { SYNC_QUEUE };

/** A tick covers the fires since the last tick, but never more than this far back (missed fires are not replayed). */
export const TICK_LOOKBACK_MS = 5 * 60_000;

export interface SyncJobData {
  /** The daemon's job id: connection/organization/class[/group]. */
  id: string;
  /** Queued by a run that stopped at its slice or at shutdown, to go on where it stopped. */
  continuation?: boolean;
  /** Failures in a row before this job: it is the retry of a failed one, queued after its backoff. */
  failures?: number;
  /** Queued by a webhook: an extra incremental run, started only if the budget allows one. */
  hook?: boolean;
}

export interface WorkerContext extends RunnerContext {
  /** Register the pg-boss cron schedule of the tick (default true; tests drive `tick()` themselves). */
  schedule?: boolean;
  /** How often idle pg-boss workers poll for jobs (default 2 s). */
  pollingIntervalSeconds?: number;
  /** A label for this process in logs and job outputs (default host/pid). */
  name?: string;
  /** Test seam: every job this worker finished. */
  onJob?: (e: { worker: string; job: string; outcome: JobOutcome | { status: 'skipped'; reason: string } }) => void;
}

interface RunningJob {
  soft: AbortController;
  hard: AbortController;
  done: Promise<unknown>;
  /** connection/organization, or null for discovery. */
  org: string | null;
}

/** Seconds before a job that found its organization busy (here or in another process) is tried again. */
export const BUSY_RETRY_SECONDS = 5;

function orgKey(job: JobSpec): string | null {
  return job.organizationId === null ? null : `${job.connection}/${job.organizationId}`;
}

/** Refuses a warehouse pg-boss cannot live in (exit 2). */
export function assertWorkerWarehouse(url: string, dialect?: string): void {
  if (!/^postgres(ql)?:\/\//.test(url) || (dialect !== undefined && dialect !== 'postgres'))
    throw new ConfigError(
      'svcsync worker needs a Postgres warehouse: its job queue (pg-boss) lives in that database, and a SQLite file ' +
        'cannot be shared by processes on several machines. Use `svcsync daemon` for a SQLite warehouse.',
      ['warehouse: expected postgres://USER@HOST:PORT/DB for svcsync worker'],
    );
}

/** The schema as a quoted identifier; worker.schema is validated by the config, this guards the class's own callers. */
function quoteSchema(schema: string): string {
  if (!PLAIN_SCHEMA_NAME.test(schema)) throw new ConfigError(`worker.schema: "${schema}" is not a plain Postgres name`);
  return `"${schema}"`;
}

/**
 * `svcsync worker`: the job runner driven by pg-boss, one of N equal processes against one
 * Postgres warehouse. Each registers the minute tick with pg-boss (its schedule lock makes one
 * fire); the tick queues a job per due (connection, organization, class) with the daemon's
 * schedules; any worker takes such a job, admits it with the runner's budget rules and runs it,
 * for at most `worker.slice_minutes`, then queues its continuation if it was stopped there.
 */
export class Worker {
  /** The job list, estimates, admission and run, as the daemon has them. */
  readonly runner: JobRunner;
  readonly name: string;
  private boss: PgBoss | null = null;
  private readonly running = new Map<string, RunningJob>();
  /** Every handler in progress, admitted or not, so a stop waits for all of them. */
  private readonly inflight = new Set<Promise<unknown>>();
  private stopping = false;
  /** Subscribed to the queues: jobs are taken. */
  private taking = false;
  /** When the schedule tick this worker runs began; null when it runs none. */
  private tickStartedAt: number | null = null;
  private readonly schema: string;

  constructor(private readonly ctx: WorkerContext) {
    assertWorkerWarehouse(ctx.config.warehouse.url, ctx.warehouse.dialect);
    this.schema = ctx.config.worker.schema;
    this.name = ctx.name ?? `${process.env['HOSTNAME'] ?? 'worker'}/${process.pid}`;
    this.runner = new JobRunner(ctx);
    this.runner.metrics.watchQueue(() => queueDepth(ctx.warehouse.db, this.schema, SYNC_QUEUE).catch(() => null));
  }

  private get log() {
    return this.ctx.logger;
  }

  private sliceMs(): number {
    return Math.round(this.ctx.config.worker.slice_minutes * 60_000);
  }

  /** Installs pg-boss (once, whichever worker comes first), its queues, and starts taking jobs. */
  async start(): Promise<void> {
    await this.runner.start();
    const boss = new PgBoss({
      connectionString: this.ctx.config.warehouse.url,
      schema: this.schema,
      max: Math.max(2, Math.min(10, this.ctx.config.worker.concurrency + 2)),
      application_name: `svcsync worker ${this.name}`,
    });
    boss.on('error', (err) => this.log.error({ err }, 'pg-boss error'));
    // Expiry marks a job failed (and retried) after a crash; a live handler is never cancelled by it, so
    // it must be well above one slice plus the shutdown bound.
    const expireInSeconds = Math.ceil(this.sliceMs() / 1000 + this.ctx.config.daemon.shutdown_grace_ms / 1000 + 300);
    const s = quoteSchema(this.schema);
    await this.installed(async () => {
      await boss.start();
      await boss.createQueue(TICK_QUEUE, { name: TICK_QUEUE, policy: 'short', expireInSeconds: 300, retryLimit: 0 });
      await boss.createQueue(SYNC_QUEUE, { name: SYNC_QUEUE, policy: 'short', expireInSeconds, retryLimit: 2, retryDelay: 30 });
      await boss.getDb().executeSql(
        `CREATE TABLE IF NOT EXISTS ${s}.svcsync_tick (id int PRIMARY KEY, covered_until bigint NOT NULL);
         INSERT INTO ${s}.svcsync_tick (id, covered_until) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`,
        [],
      );
    });
    this.boss = boss;
    await this.runner.reloadOrganizations();
    const polling = { pollingIntervalSeconds: this.ctx.pollingIntervalSeconds ?? 2, batchSize: 1 };
    for (let i = 0; i < this.ctx.config.worker.concurrency; i++) {
      let slot = '';
      slot = await boss.work<SyncJobData>(SYNC_QUEUE, polling, async ([job]) => {
        if (!job) return null;
        try {
          return await this.handle(job);
        } finally {
          // pg-boss waits a whole polling interval after every fetch, even one that found a job: a
          // slot that just finished asks again at once, so a queue of short jobs drains at the
          // speed of the jobs rather than one job per slot per interval. An empty fetch still waits.
          if (slot && !this.stopping) boss.notifyWorker(slot);
        }
      });
    }
    await boss.work(TICK_QUEUE, polling, async () => {
      this.tickStartedAt = this.ctx.clock.now();
      try {
        return { queued: await this.tick() };
      } finally {
        this.tickStartedAt = null;
      }
    });
    this.taking = true;
    if (this.ctx.schedule ?? true) await boss.schedule(TICK_QUEUE, '* * * * *', {}, { tz: 'UTC' });
    // Discovery for connections no run has discovered yet, on whichever worker takes it.
    for (const c of this.ctx.config.connections) {
      if (this.runner.knownOrganizations().some((o) => o.connection === c.name)) continue;
      const job = this.runner.jobs().find((j) => j.connection === c.name && j.jobClass === 'organizations');
      if (job) await this.send(job);
    }
    this.log.info({ worker: this.name, schema: this.schema, concurrency: this.ctx.config.worker.concurrency }, 'worker started');
    // Last, so that workers starting together queue their first discovery as before.
    await warnScheduleMisfits({ ...this.ctx, now: this.ctx.clock.now(), backfill: this.ctx.backfill });
  }

  /**
   * pg-boss's install and queue creation are not safe against concurrent ones (two workers creating
   * the same queue's partition deadlock): workers starting at once take turns.
   */
  private async installed(start: () => Promise<unknown>): Promise<void> {
    const client = new pg.Client({ connectionString: this.ctx.config.warehouse.url });
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [`svcsync pg-boss install ${this.schema}`]);
      await start();
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  private requireBoss(): PgBoss {
    if (!this.boss) throw new Error('the worker is not started');
    return this.boss;
  }

  /** Queues one job; null when the same job is already waiting (policy short, singletonKey = job id). */
  async send(job: JobSpec, continuation = false, afterSeconds = 0, failures = 0): Promise<string | null> {
    const data: SyncJobData = { id: job.id, ...(continuation ? { continuation } : {}), ...(failures > 0 ? { failures } : {}) };
    return this.enqueue(job, data, job.id, afterSeconds);
  }

  private enqueue(job: JobSpec, data: SyncJobData, singletonKey: string, afterSeconds: number, db?: PgBoss.Db): Promise<string | null> {
    // pg-boss fetches the highest priority first; the daemon's priority 0 (incremental) is the most urgent.
    const options = {
      singletonKey,
      priority: 10 - job.priority,
      ...(afterSeconds > 0 ? { startAfter: afterSeconds } : {}),
      ...(db ? { db } : {}),
    };
    return this.requireBoss().send(SYNC_QUEUE, data, options);
  }

  /**
   * A webhook with a valid secret, on a worker: queues an extra incremental run of each of the
   * organization's incremental jobs the hook's streams belong to, due after the debounce delay,
   * under its own singleton key (`<job id>#hook`), so hooks until it starts coalesce into it and
   * the scheduled fires are not affected. Any worker takes it; it runs the whole job (hooks that
   * name other streams of the same job join it).
   */
  async receiveHook(target: HookTarget): Promise<HookResult> {
    const resolved = this.runner.resolveHook(target);
    if (resolved.kind !== 'ok') return resolved;
    const delay = Math.ceil(this.ctx.config.daemon.hooks.debounce_ms / 1000);
    let coalesced = true;
    for (const job of resolved.jobs) if ((await this.sendHook(job, delay)) !== null) coalesced = false;
    this.runner.metrics.hookReceived(target.connection, coalesced);
    return { kind: 'accepted', runAt: this.ctx.clock.now() + delay * 1000, coalesced };
  }

  private sendHook(job: JobSpec, afterSeconds: number): Promise<string | null> {
    return this.enqueue(job, { id: job.id, hook: true }, `${job.id}#hook`, afterSeconds);
  }

  /**
   * The schedule tick: claims the span since the last tick (any worker's) in Postgres, so each
   * fire is queued once however many ticks run, and queues each job whose cron fires in it.
   * The claim and the jobs it queues commit in one transaction: a tick whose COMMIT's reply is
   * lost has queued them (a retry finds the span claimed and queues nothing), and a tick that
   * fails before its COMMIT has claimed nothing (the next tick covers its span). Returns the ids queued.
   */
  async tick(now = this.ctx.clock.now()): Promise<string[]> {
    if (this.stopping) return [];
    await this.runner.reloadOrganizations();
    const client = new pg.Client({ connectionString: this.ctx.config.warehouse.url });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await client.query('BEGIN');
      const queued = await this.queueDue(client, now);
      await client.query('COMMIT');
      return queued;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Inside the tick's transaction: claims the span up to `now` and queues the jobs due in it. */
  private async queueDue(client: pg.Client, now: number): Promise<string[]> {
    const s = quoteSchema(this.schema);
    const { rows } = await client.query<{ prev: string | number }>(
      // The old value comes from a locking subquery in FROM, read before the update: a CTE read
      // from RETURNING ran after it and saw no row (so every tick looked back the full lookback).
      `UPDATE ${s}.svcsync_tick AS t SET covered_until = $1
       FROM (SELECT covered_until FROM ${s}.svcsync_tick WHERE id = 1 FOR UPDATE) AS old
       WHERE t.id = 1 AND t.covered_until < $1
       RETURNING old.covered_until AS prev`,
      [now],
    );
    const prev = rows[0];
    if (!prev) return [];
    const from = Math.max(Number(prev.prev), now - TICK_LOOKBACK_MS);
    const due = this.runner
      .jobs()
      // A freshness job is due when its first stream is (as this process last planned it; unplanned, the admission decides).
      .filter((j) => (j.fresh ? this.runner.freshness.dueAt(j, now) <= now : j.cron.next(from) <= now))
      .sort((a, b) => a.priority - b.priority || a.id.localeCompare(b.id));
    // pg-boss writes the jobs through the tick's own connection, inside its transaction.
    const db = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
    const queued: string[] = [];
    for (const job of due) if (await this.enqueue(job, { id: job.id }, job.id, 0, db)) queued.push(job.id);
    this.log.info({ from: new Date(from).toISOString(), to: new Date(now).toISOString(), due: due.length, queued: queued.length }, 'tick');
    return queued;
  }

  /** Jobs this process is running now. */
  runningJobs(): string[] {
    return [...this.running.keys()];
  }

  private async handle(job: PgBoss.Job<SyncJobData>): Promise<unknown> {
    const pending = this.runOne(job.data);
    this.inflight.add(pending);
    let result: Record<string, unknown>;
    try {
      result = await pending;
    } finally {
      this.inflight.delete(pending);
    }
    // Completed here, awaited, so a shutdown right after cannot race pg-boss's own (unawaited) completion.
    await this.boss?.complete(SYNC_QUEUE, job.id, { worker: this.name, ...result });
    return result;
  }

  private async findJob(id: string): Promise<JobSpec | undefined> {
    let spec = this.runner.jobs().find((j) => j.id === id);
    if (!spec) {
      await this.runner.reloadOrganizations();
      spec = this.runner.jobs().find((j) => j.id === id);
    }
    return spec;
  }

  private skipped(id: string, reason: string): { status: 'skipped'; reason: string } {
    this.log.info({ job: id, reason }, `job skipped: ${reason}`);
    const out = { status: 'skipped' as const, reason };
    this.ctx.onJob?.({ worker: this.name, job: id, outcome: out });
    return out;
  }

  /** Admits and runs one queued job; queues its continuation when it stopped at its slice or at shutdown. */
  private async runOne(data: SyncJobData): Promise<Record<string, unknown>> {
    if (this.stopping) return this.skipped(data.id, 'busy: stopping');
    const spec = await this.findJob(data.id);
    if (!spec) return this.skipped(data.id, 'busy: the job is no longer configured');
    if (this.running.has(spec.id)) {
      if (!data.hook) return this.skipped(spec.id, 'overlap: this process is running it');
      // The change a hook announced may have come after that run read the stream: run again after it.
      await this.sendHook(spec, BUSY_RETRY_SECONDS);
      return this.skipped(spec.id, 'busy: a run of this job is going here; the hook run is queued again');
    }
    const held = this.runner.holds.heldUntil(spec.connection, spec.organizationId);
    if (held) return this.skipped(spec.id, `${held.reason}; resumes at ${new Date(held.until).toISOString()}`);
    let snapshot: OrgSnapshot | undefined;
    if (data.hook) {
      // An extra run: only above what the scheduled incremental fires until the reset need.
      const verdict = await this.runner.admitHook(spec, this.ctx.clock.now());
      this.runner.metrics.hookRun(spec.connection, verdict.run ? 'started' : 'fallback');
      if (!verdict.run) return this.skipped(spec.id, `fallback: ${verdict.reason}`);
      snapshot = verdict.snapshot;
    }
    const admission = await this.runner.admit(spec, this.ctx.clock.now(), snapshot);
    if (!admission.run) return this.skipped(spec.id, admission.reason);
    if (this.stopping) {
      // Admitted while the stop began: a peer takes it.
      await this.send(spec, true);
      return this.skipped(spec.id, 'busy: stopping; queued for another worker');
    }
    if (spec.organizationId !== null && [...this.running.values()].some((r) => r.org === orgKey(spec))) {
      // One organization, one run at a time (its lease is per organization): try again shortly. Checked with
      // no await before `running` is set, so two handlers of this process cannot both pass.
      await (data.hook ? this.sendHook(spec, BUSY_RETRY_SECONDS) : this.send(spec, true, BUSY_RETRY_SECONDS));
      return this.skipped(spec.id, 'busy: another job of this organization runs here; queued again');
    }
    const soft = new AbortController();
    const hard = new AbortController();
    let sliced = false;
    let requests = 0;
    let timer: Timer;
    const endSlice = (): void => {
      // A slice that has not sent a request yet (a slow start: token, lease, migrations on a
      // loaded database) gets another: cut there, its continuation would start over, and a job
      // could be cut again and again without moving.
      if (requests === 0) {
        timer = this.ctx.clock.setTimeout(endSlice, this.sliceMs());
        return;
      }
      sliced = true;
      soft.abort(new Error('slice over'));
    };
    timer = this.ctx.clock.setTimeout(endSlice, this.sliceMs());
    const knownBefore = new Set(this.runner.knownOrganizations().map((o) => `${o.connection}\u0000${o.organizationId}`));
    const entry: RunningJob = { soft, hard, done: Promise.resolve(), org: orgKey(spec) };
    this.running.set(spec.id, entry);
    this.log.info({ job: spec.id, worker: this.name, estimate: admission.estimate, floor: admission.floor }, 'job started');
    const run = this.runner.runJob(
      { ...admission.job, id: spec.id },
      {
        soft: soft.signal,
        hard: hard.signal,
        floor: admission.floor,
        estimate: admission.estimate,
        onRequest: () => {
          requests++;
        },
      },
    );
    entry.done = run.catch(() => undefined);
    let outcome: JobOutcome;
    try {
      outcome = await run;
    } finally {
      timer.cancel();
      this.running.delete(spec.id);
    }
    this.runner.holds.settle(spec, outcome);
    // Stopped between pages at its slice or at a graceful shutdown: the rest goes on in a new job,
    // on whichever worker is free. A run abandoned at the bound or stopped for the budget is not continued.
    const cut = (sliced || this.stopping) && outcome.status === 'stopped' && !hard.signal.aborted;
    // Another process held the organization's lease, so runSync left it alone: try again shortly.
    const busy = outcome.status === 'busy';
    let continued = false;
    if (cut) continued = (await this.send(spec, true)) !== null;
    else if (busy && !this.stopping)
      continued = (await (data.hook ? this.sendHook(spec, BUSY_RETRY_SECONDS) : this.send(spec, true, BUSY_RETRY_SECONDS))) !== null;
    else if ((outcome.failed?.length ?? 0) > 0 && !this.stopping) continued = await this.queueRetry(spec, data.failures ?? 0);
    if (spec.jobClass === 'organizations' && !this.stopping) await this.queueFirstSyncs(knownBefore);
    const level = outcome.status === 'ok' || outcome.status === 'stopped' || outcome.status === 'busy' ? 'info' : 'warn';
    this.log[level]({ job: spec.id, status: outcome.status, requests: outcome.requests, error: outcome.error, continued }, 'job finished');
    this.ctx.onJob?.({ worker: this.name, job: spec.id, outcome });
    return { status: outcome.status, requests: outcome.requests ?? 0, continued, ...(outcome.error ? { error: outcome.error } : {}) };
  }

  /**
   * A failed job's backoff, shared by every worker: its retry waits in the queue until the first
   * fire of its schedule after the backoff, carrying the count of failures in a row. While it
   * waits, the tick cannot queue the same job (one waiting job per id), so no other worker runs
   * it sooner; a success ends the chain. Each worker's own holds (the runner's backoff) would
   * only stop that worker.
   */
  private async queueRetry(spec: JobSpec, failuresBefore: number): Promise<boolean> {
    const failures = failuresBefore + 1;
    const { retry_backoff_ms, retry_backoff_max_ms } = this.ctx.config.daemon;
    const now = this.ctx.clock.now();
    const at = spec.cron.next(now + backoffMs(failures, retry_backoff_ms, retry_backoff_max_ms));
    // pg-boss counts in real seconds; with a scaled test clock the wait is only longer.
    const afterSeconds = Math.max(1, Math.ceil((at - now) / 1000));
    const queued = (await this.send(spec, false, afterSeconds, failures)) !== null;
    this.log.info({ job: spec.id, failures, retryAt: new Date(at).toISOString(), queued }, 'failed job queued for retry after its backoff');
    return queued;
  }

  /**
   * Organizations that discovery just found get their first sync now rather than at their next
   * cron fire: onboarding a few hundred client organizations should not wait a quarter of an hour.
   */
  private async queueFirstSyncs(knownBefore: ReadonlySet<string>): Promise<void> {
    const fresh = this.runner
      .jobs()
      .filter(
        (j) =>
          j.organizationId !== null &&
          (j.jobClass === 'incremental' || j.jobClass === 'settings') &&
          !knownBefore.has(`${j.connection}\u0000${j.organizationId}`),
      );
    let queued = 0;
    for (const job of fresh.sort((a, b) => a.priority - b.priority || a.id.localeCompare(b.id))) if (await this.send(job)) queued++;
    if (fresh.length > 0) this.log.info({ jobs: fresh.length, queued }, 'first syncs queued for newly discovered organizations');
  }

  isStopping(): boolean {
    return this.stopping;
  }

  /** The job loop for `/healthz`: starting until subscribed to the queues, stopping once shutdown began. */
  jobLoop(): JobLoopState {
    if (this.stopping) return { state: 'stopping', tickSince: null };
    return { state: this.taking ? 'running' : 'starting', tickSince: this.tickStartedAt };
  }

  /**
   * Graceful stop within `graceMs`: takes no more jobs, asks running ones to stop after their
   * page (their continuation is queued for a peer), abandons what still runs at the bound less
   * a margin, then stops pg-boss.
   */
  async stop(graceMs = this.ctx.config.daemon.shutdown_grace_ms): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const boss = this.boss;
    if (boss) {
      await boss.offWork(SYNC_QUEUE);
      await boss.offWork(TICK_QUEUE);
    }
    const all = [...this.running.values()];
    for (const r of all) r.soft.abort(new Error('shutting down'));
    const margin = Math.min(2_000, Math.floor(graceMs / 10));
    // Real time: the bound is the operator's (systemd's TimeoutStopSec), whatever clock the runs use.
    const hardTimer = setTimeout(
      () => {
        for (const r of this.running.values()) r.hard.abort(new Error('shutdown grace period over'));
      },
      Math.max(0, graceMs - margin),
    );
    try {
      await Promise.all(all.map((r) => r.done));
      await Promise.all([...this.inflight].map((p) => p.catch(() => undefined)));
    } finally {
      clearTimeout(hardTimer);
    }
    await this.runner.stop();
    await boss?.stop({ graceful: true, timeout: 1_000, wait: true });
    this.boss = null;
    this.log.info({ worker: this.name }, 'worker stopped');
  }
}
