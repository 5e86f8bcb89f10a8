import type { Clock, Timer } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import { Holds } from './holds.js';
import type { Admission, JobOutcome, JobRun } from './job-run.js';
import { narrowJob, type JobSpec } from './jobs.js';

export type SchedulerEvent =
  | { type: 'started'; job: JobSpec; at: number; estimate: number; floor: number }
  | { type: 'finished'; job: JobSpec; at: number; startedAt: number; outcome: JobOutcome }
  | { type: 'skipped'; job: JobSpec; at: number; reason: 'overlap' | 'paused' | 'backoff' | 'budget' | 'busy' | 'stopping'; detail: string }
  | { type: 'waiting'; job: JobSpec; at: number; reason: 'capacity' | 'busy' };

export interface SchedulerOptions {
  clock: Clock;
  logger: Logger;
  /** The current jobs (the list may change, e.g. after organization discovery). */
  jobs: () => readonly JobSpec[];
  runJob: (job: JobSpec, run: JobRun) => Promise<JobOutcome>;
  /** Budget and ownership check before a job starts; the default admits everything. */
  admit?: (job: JobSpec, now: number) => Promise<Admission>;
  maxConcurrent?: number;
  /** Backoffs and quota pauses, shared with the job runner's admission; by default the scheduler's own. */
  holds?: Holds;
  /** A job that found its organization held by another process fires again this soon (default 30 s). */
  busyRetryMs?: number;
  onEvent?: (e: SchedulerEvent) => void;
  /**
   * When a freshness job (`job.fresh`) is next due: the earliest due time of its streams
   * (src/scheduler/freshness-keeper.ts). Without it, such a job fires on its cron like any other.
   */
  dueAt?: (job: JobSpec, now: number) => number;
}

/** A freshness job looks at its due times at most this often. */
const FRESH_GAP_MS = 60_000;
/** A freshness job the budget turned away asks again this much later. */
const FRESH_BUDGET_RETRY_MS = 15 * 60_000;

interface Running {
  job: JobSpec;
  startedAt: number;
  soft: AbortController;
  hard: AbortController;
  done: Promise<void>;
}

/**
 * Fires jobs on their cron schedules, on an injected clock. A job never runs twice at once:
 * a fire that finds it running is skipped and logged. Jobs whose streams another job is
 * syncing, or that find every slot taken, wait for the next job to finish instead. Each
 * outcome goes to the holds (`holds.ts`): a failed organization (or connection) backs off,
 * doubling, while the others carry on; one whose quota is gone pauses until the reset.
 */
export class Scheduler {
  private readonly running = new Map<string, Running>();
  private readonly waiting = new Map<string, JobSpec>();
  private readonly nextFire = new Map<string, number>();
  private readonly holds: Holds;
  /**
   * Early fires asked for by webhooks: the trees to run (null: the whole job) and the job's own
   * next cron fire, which an early fire does not consume.
   */
  private readonly soon = new Map<string, { trees: Set<string> | null; cronAt: number }>();
  /** Early fires that came while the job ran: it fires again when it finishes (one follow-up pass). */
  private readonly followUp = new Map<string, Set<string> | null>();
  private timer: Timer | null = null;
  private stopping = false;
  private started = false;
  private ticking: Promise<void> = Promise.resolve();
  /** When the tick (or the start of waiting jobs) in progress began; null between them. */
  private tickStartedAt: number | null = null;

  constructor(private readonly opts: SchedulerOptions) {
    this.holds = opts.holds ?? new Holds({ clock: opts.clock });
  }

  /** Arms the timer for the first fires (from now on; missed fires are not replayed). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.refresh();
    this.arm();
  }

  /** Whether start() armed the timer: jobs fire on their own. */
  isStarted(): boolean {
    return this.started;
  }

  /** Since when (epoch ms) the tick in progress has run, or null: a tick that never ends starts no job again (`/healthz`). */
  tickingSince(): number | null {
    return this.tickStartedAt;
  }

  /** Runs jobs whose fire time has come. Serialized, so budget checks see each other's starts. */
  tick(): Promise<void> {
    return this.serial(() => this.doTick());
  }

  private serial(fn: () => Promise<void>): Promise<void> {
    const timed = async (): Promise<void> => {
      this.tickStartedAt = this.opts.clock.now();
      try {
        await fn();
      } finally {
        this.tickStartedAt = null;
      }
    };
    this.ticking = this.ticking.then(timed).catch((err: unknown) => {
      this.opts.logger.error({ err }, 'scheduler tick failed');
    });
    return this.ticking;
  }

  /**
   * Starts no more jobs; asks running ones to stop after their page in flight; after
   * `graceMs` (less a margin) abandons what is still running. Resolves when all ended.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.timer?.cancel();
    this.timer = null;
    this.waiting.clear();
    const all = [...this.running.values()];
    for (const r of all) r.soft.abort(new Error('shutting down'));
    const margin = Math.min(2_000, Math.floor(graceMs / 10));
    const hardTimer = this.opts.clock.setTimeout(
      () => {
        for (const r of this.running.values()) r.hard.abort(new Error('shutdown grace period over'));
      },
      Math.max(0, graceMs - margin),
    );
    try {
      await Promise.all(all.map((r) => r.done));
      await this.ticking;
    } finally {
      hardTimer.cancel();
    }
  }

  /** Abandons running jobs' pages in flight at once (a second signal). */
  abortAll(): void {
    for (const r of this.running.values()) r.hard.abort(new Error('aborted'));
  }

  isRunning(jobId: string): boolean {
    return this.running.has(jobId);
  }

  runningJobs(): JobSpec[] {
    return [...this.running.values()].map((r) => r.job);
  }

  /** Resolves when no job is running or waiting to start and no tick is in progress. */
  async idle(): Promise<void> {
    for (;;) {
      await this.ticking;
      if (this.running.size === 0) {
        await this.ticking;
        if (this.running.size === 0 && (this.waiting.size === 0 || this.stopping)) return;
        continue;
      }
      await Promise.all([...this.running.values()].map((r) => r.done));
    }
  }

  /** Next fire per job id (epoch ms). */
  nextRuns(): Array<{ job: JobSpec; at: number }> {
    return this.opts.jobs().map((job) => ({ job, at: this.nextFire.get(job.id) ?? this.fireAfter(job, this.opts.clock.now(), 0) }));
  }

  /**
   * A job's next fire after `now`: its cron's, or for a freshness job when its first stream is
   * due, no sooner than `gap` from now.
   */
  private fireAfter(job: JobSpec, now: number, gap: number): number {
    if (job.fresh && this.opts.dueAt) return Math.max(now + gap, this.opts.dueAt(job, now));
    return job.cron.next(now);
  }

  /**
   * Fires a job now, outside its schedule, on `trees` only (all of them when none are named):
   * a webhook said something changed. A job running now fires once more when it finishes,
   * so the change is read in a follow-up pass. Its scheduled fires are unchanged.
   */
  fireSoon(jobId: string, trees: readonly string[] = []): void {
    if (this.stopping) return;
    const job = this.opts.jobs().find((j) => j.id === jobId);
    if (!job) return;
    const merge = (into: Set<string> | null | undefined): Set<string> | null => {
      if (into === null || trees.length === 0) return null;
      const out = new Set(into ?? []);
      for (const t of trees) if (job.trees.includes(t)) out.add(t);
      return out;
    };
    if (this.running.has(jobId)) {
      this.followUp.set(jobId, merge(this.followUp.has(jobId) ? this.followUp.get(jobId) : undefined));
      return;
    }
    const prev = this.soon.get(jobId);
    const cronAt = prev?.cronAt ?? this.nextFire.get(jobId) ?? this.fireAfter(job, this.opts.clock.now(), 0);
    this.soon.set(jobId, { trees: merge(prev ? prev.trees : undefined), cronAt });
    this.nextFire.set(jobId, this.opts.clock.now());
    if (this.started) this.arm();
  }

  /** Jobs with an early fire waiting (webhooks), for status. */
  firingSoon(): string[] {
    return [...new Set([...this.soon.keys(), ...this.followUp.keys()])];
  }

  /** Picks up added or removed jobs (after discovery); new jobs fire from now on. */
  refresh(): void {
    const now = this.opts.clock.now();
    const ids = new Set<string>();
    for (const job of this.opts.jobs()) {
      ids.add(job.id);
      const at = this.nextFire.get(job.id);
      // A changed schedule shows as a different cron: recompute its next fire.
      if (at === undefined || this.cronOf.get(job.id) !== job.cron.toString()) {
        this.nextFire.set(job.id, this.fireAfter(job, now, 0));
        this.cronOf.set(job.id, job.cron.toString());
      }
    }
    for (const id of [...this.nextFire.keys()]) if (!ids.has(id)) this.nextFire.delete(id);
    if (this.started && !this.stopping) this.arm();
  }

  private readonly cronOf = new Map<string, string>();

  private arm(): void {
    this.timer?.cancel();
    this.timer = null;
    // Before start() the owner drives tick() by hand (tests stepping a sandbox's clock).
    if (this.stopping || !this.started) return;
    let earliest = Infinity;
    for (const at of this.nextFire.values()) earliest = Math.min(earliest, at);
    if (!Number.isFinite(earliest)) return;
    const delay = Math.max(0, earliest - this.opts.clock.now());
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = null;
      void this.tick();
    }, delay);
  }

  private async doTick(): Promise<void> {
    if (this.stopping) return;
    const now = this.opts.clock.now();
    const due: JobSpec[] = [];
    for (const job of this.opts.jobs()) {
      const at = this.nextFire.get(job.id);
      if (at === undefined) {
        this.nextFire.set(job.id, this.fireAfter(job, now, 0));
        this.cronOf.set(job.id, job.cron.toString());
        continue;
      }
      if (at > now) continue;
      const early = this.soon.get(job.id);
      this.soon.delete(job.id);
      if (early && early.cronAt > now) {
        // A webhook's early fire: its trees only, and the scheduled fire stays where it was.
        this.nextFire.set(job.id, early.cronAt);
        const trees = early.trees ? job.trees.filter((t) => early.trees!.has(t)) : job.trees;
        due.push({ ...(trees.length === job.trees.length ? job : narrowJob(job, trees)), early: true });
        continue;
      }
      // One run per fire that came due, however many were missed (no catch-up storm).
      this.nextFire.set(job.id, this.fireAfter(job, now, FRESH_GAP_MS));
      due.push(job);
    }
    due.sort((a, b) => a.priority - b.priority || a.id.localeCompare(b.id));
    for (const job of due) {
      if (this.stopping) break;
      if (this.running.has(job.id)) {
        this.skip(job, 'overlap', 'the previous run is still going; this fire is skipped, not queued');
        continue;
      }
      if (this.waiting.has(job.id)) {
        this.skip(job, 'overlap', 'the previous fire is still waiting to start; this fire is skipped');
        continue;
      }
      await this.tryStart(job, now);
    }
    this.arm();
  }

  private skip(job: JobSpec, reason: Extract<SchedulerEvent, { type: 'skipped' }>['reason'], detail: string): void {
    const at = this.opts.clock.now();
    const level = reason === 'overlap' || reason === 'budget' ? 'warn' : 'info';
    this.opts.logger[level]({ job: job.id, reason }, `job skipped: ${detail}`);
    this.opts.onEvent?.({ type: 'skipped', job, at, reason, detail });
  }

  /** Busy trees: top-level streams of the same organization that a running job syncs. */
  private busyTrees(job: JobSpec): Set<string> {
    const busy = new Set<string>();
    for (const r of this.running.values()) {
      if (r.job.connection !== job.connection || r.job.organizationId !== job.organizationId) continue;
      // Discovery writes the organization list; it shares nothing with stream jobs.
      for (const t of r.job.trees) busy.add(t);
    }
    return busy;
  }

  private async tryStart(job: JobSpec, now: number): Promise<void> {
    const held = this.holds.heldUntil(job.connection, job.organizationId);
    if (held) {
      this.skip(job, held.kind, `${held.reason}; resumes at ${new Date(held.until).toISOString()}`);
      return;
    }
    const busy = this.busyTrees(job);
    const free = job.trees.filter((t) => !busy.has(t));
    if (job.trees.length > 0 && free.length < job.trees.length) {
      // Another job is syncing these streams right now; start when it ends.
      this.waiting.set(job.id, job);
      this.opts.onEvent?.({ type: 'waiting', job, at: now, reason: 'busy' });
      this.opts.logger.info({ job: job.id, busy: [...busy] }, 'job waits: another job is syncing its streams');
      return;
    }
    if (this.running.size >= (this.opts.maxConcurrent ?? 4)) {
      this.waiting.set(job.id, job);
      this.opts.onEvent?.({ type: 'waiting', job, at: now, reason: 'capacity' });
      this.opts.logger.info({ job: job.id }, 'job waits for a free slot');
      return;
    }
    const admission = this.opts.admit ? await this.opts.admit(job, now) : ({ run: true, job, floor: 0, estimate: 0 } as const);
    if (this.stopping) return;
    if (!admission.run) {
      const busy = admission.reason.startsWith('busy');
      if (job.fresh && !busy) this.nextFire.set(job.id, now + FRESH_BUDGET_RETRY_MS);
      this.skip(job, busy ? 'busy' : 'budget', admission.reason);
      return;
    }
    this.launch(admission.job, job.id, admission.floor, admission.estimate);
  }

  private launch(job: JobSpec, id: string, floor: number, estimate: number): void {
    const soft = new AbortController();
    const hard = new AbortController();
    const startedAt = this.opts.clock.now();
    // Keyed by the scheduled job's id, so a narrowed run still blocks its own next fire.
    const entry: Running = { job: { ...job, id }, startedAt, soft, hard, done: Promise.resolve() };
    this.running.set(id, entry);
    this.opts.logger.info({ job: id, estimate, floor }, 'job started');
    this.opts.onEvent?.({ type: 'started', job: entry.job, at: startedAt, estimate, floor });
    entry.done = (async () => {
      let outcome: JobOutcome;
      try {
        outcome = await this.opts.runJob(entry.job, { soft: soft.signal, hard: hard.signal, floor, estimate });
      } catch (err) {
        outcome = { status: 'failed', failed: [job.organizationId], error: err instanceof Error ? err.message : String(err) };
      }
      this.running.delete(id);
      // A freshness run moved its streams' due times: its next fire follows them.
      if (job.fresh && !this.stopping) this.nextFire.set(id, this.fireAfter(job, this.opts.clock.now(), FRESH_GAP_MS));
      this.settle(entry.job, outcome);
      if (this.followUp.has(id) && !this.stopping) {
        const trees = this.followUp.get(id);
        this.followUp.delete(id);
        this.fireSoon(id, trees ? [...trees] : []);
      }
      this.opts.onEvent?.({ type: 'finished', job: entry.job, at: this.opts.clock.now(), startedAt, outcome });
      const level = outcome.status === 'ok' || outcome.status === 'stopped' || outcome.status === 'busy' ? 'info' : 'warn';
      this.opts.logger[level]({ job: id, status: outcome.status, requests: outcome.requests, error: outcome.error }, 'job finished');
      if (!this.stopping) void this.serial(() => this.startWaiting());
    })();
  }

  /** Feeds the outcome of a job run outside the schedule (start-up discovery) into backoff and pauses. */
  report(job: JobSpec, outcome: JobOutcome): void {
    this.settle(job, outcome);
  }

  private settle(job: JobSpec, outcome: JobOutcome): void {
    this.holds.settle(job, outcome);
    if (outcome.status === 'busy') {
      // Nothing ran, and nothing failed: try again soon rather than wait for the next cron fire.
      const retry = this.opts.clock.now() + (this.opts.busyRetryMs ?? 30_000);
      this.nextFire.set(job.id, Math.min(this.nextFire.get(job.id) ?? retry, retry));
      if (this.started && !this.stopping) this.arm();
    }
  }

  private async startWaiting(): Promise<void> {
    // The longest waiting first within a priority (a Map iterates in the order jobs began to wait;
    // the sort is stable). Ordered by id, a backlog ran the same organizations at every fire and
    // never reached the others: 1,000 organizations on one daemon synced 722, some five times.
    const waiting = [...this.waiting.values()].sort((a, b) => a.priority - b.priority);
    for (const job of waiting) {
      if (this.stopping) return;
      // No free slot: the rest keep their place in the line.
      if (this.running.size >= (this.opts.maxConcurrent ?? 4)) return;
      if (this.running.has(job.id)) continue;
      this.waiting.delete(job.id);
      await this.tryStart(job, this.opts.clock.now());
    }
  }
}
