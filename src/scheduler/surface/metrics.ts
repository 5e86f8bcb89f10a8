import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestEvent } from '../../api/client.js';
import { svcsyncVersion } from '../../api/user-agent.js';
import type { LimiterRegistry, OrgLimiter } from '../../api/limiter.js';
import type { Clock } from '../../core/clock.js';
import type { RecordBudget } from '../../extractors/record-budget.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { listAuthorizations } from '../../state/connection-auth.js';
import { listDrift } from '../../state/drift.js';
import { listStreamStates } from '../../state/stream-state.js';
import type { JobOutcome } from '../timing/job-run.js';
import type { JobSpec } from '../timing/jobs.js';
import type { QueueDepth } from './queue-depth.js';

export interface QuotaSource {
  /** Organizations the process knows (discovered, or named in the configuration). */
  organizations(): Array<{ connection: string; organizationId: string }>;
  /** The organization's limiter, made (from the warehouse's count) when no job of it ran yet. */
  limiter(connection: string, organizationId: string): Promise<OrgLimiter | null>;
  /** The jobs as scheduled now: how often each stream is due. */
  jobs(): readonly JobSpec[];
}

type StreamLabels = 'connection' | 'organization' | 'stream';

/** svcsync_build_info, and the records held in flight when the process caps them. */
function registerProcessGauges(registers: Registry[], records: RecordBudget | undefined): void {
  const info = new Gauge({
    name: 'svcsync_build_info',
    help: 'Always 1; the labels say which svcsync and Node run',
    labelNames: ['version', 'node'],
    registers,
  });
  info.set({ version: svcsyncVersion(), node: process.versions.node }, 1);
  if (!records) return;
  new Gauge({
    name: 'svcsync_records_in_flight',
    help: 'Records held between their response and their commit, whole process (at most sync.max_records_in_flight)',
    registers,
    collect(this: Gauge) {
      this.set(records.inFlight);
    },
  }).set(0);
  new Gauge({
    name: 'svcsync_records_in_flight_limit',
    help: 'sync.max_records_in_flight: the cap on records held between response and commit',
    registers,
  }).set(records.limit);
}

/**
 * Each organization's quota: used, left, budget, blocked until. Every known organization has them
 * from start-up, not only after its first job: a scrape makes the limiters no job has made yet,
 * from the day's count in the warehouse.
 */
function registerQuotaGauges(registers: Registry[], limiters: LimiterRegistry, quota: QuotaSource): void {
  const byOrg = (fn: (l: OrgLimiter) => number) =>
    async function (this: Gauge<'organization'>): Promise<void> {
      this.reset();
      for (const o of quota.organizations()) {
        const l = limiters.peek(o.organizationId) ?? (await quota.limiter(o.connection, o.organizationId).catch(() => null));
        if (l) this.set({ organization: o.organizationId }, fn(l));
      }
    };
  const gauges: Array<[name: string, help: string, read: (l: OrgLimiter) => number]> = [
    ['svcsync_quota_used', 'Requests counted today per organization (the quota day of its reset zone)', (l) => l.usedToday()],
    ['svcsync_quota_left', "Requests left today per organization within svcsync's budget (quota less reserve)", (l) => l.remainingToday()],
    ['svcsync_quota_budget', "svcsync's daily budget per organization (quota less reserve)", (l) => l.budget()],
    [
      'svcsync_quota_blocked_until_seconds',
      'When a spent quota (429 code 45) lets calls resume, epoch seconds; 0 when not blocked',
      (l) => (l.blockedUntil()?.getTime() ?? 0) / 1000,
    ],
  ];
  for (const [name, help, read] of gauges) new Gauge({ name, help, labelNames: ['organization'], registers, collect: byOrg(read) });
}

/** Each stream's cursor lag and last success, read from the warehouse at each scrape. */
function registerStreamStateGauges(registers: Registry[], clock: Clock, warehouse: Warehouse): void {
  new Gauge({
    name: 'svcsync_cursor_lag_seconds',
    help:
      'Now minus the cursor, per incremental stream. Grows in a quiet organization with nothing to change: ' +
      'alert on svcsync_stream_last_success_timestamp_seconds instead',
    labelNames: ['connection', 'organization', 'stream'],
    registers,
    async collect(this: Gauge<StreamLabels>) {
      this.reset();
      const now = clock.now();
      for (const s of await listStreamStates(warehouse.db)) {
        if (!s.cursor) continue;
        const at = Date.parse(s.cursor);
        if (Number.isFinite(at))
          this.set({ connection: s.connection, organization: s.organization_id, stream: s.stream }, Math.max(0, (now - at) / 1000));
      }
    },
  });
  new Gauge({
    name: 'svcsync_stream_last_success_timestamp_seconds',
    help: 'When each stream last finished a run successfully, epoch seconds (alert on time() minus this)',
    labelNames: ['connection', 'organization', 'stream'],
    registers,
    async collect(this: Gauge<StreamLabels>) {
      this.reset();
      for (const s of await listStreamStates(warehouse.db)) {
        const at = s.last_success_at ? Date.parse(s.last_success_at) : NaN;
        if (Number.isFinite(at)) this.set({ connection: s.connection, organization: s.organization_id, stream: s.stream }, at / 1000);
      }
    },
  });
}

/** Each stream's scheduled interval, from the jobs as scheduled now. */
function registerScheduleGauge(registers: Registry[], clock: Clock, quota: QuotaSource): void {
  new Gauge({
    name: 'svcsync_stream_schedule_interval_seconds',
    help:
      'Seconds between two scheduled runs of each stream (its incremental or settings job): ' +
      'a stream is stale when time() minus its last success passes 3 of these plus a minute',
    labelNames: ['connection', 'organization', 'stream'],
    registers,
    collect(this: Gauge<StreamLabels>) {
      this.reset();
      const now = clock.now();
      // One cron walk per schedule, however many organizations share it.
      const every = new Map<string, number>();
      for (const job of quota.jobs()) {
        if (job.organizationId === null || (job.jobClass !== 'incremental' && job.jobClass !== 'settings')) continue;
        const key = job.cron.toString();
        let seconds = every.get(key);
        if (seconds === undefined) {
          const next = job.cron.next(now);
          every.set(key, (seconds = Math.round((job.cron.next(next) - next) / 1000)));
        }
        for (const stream of job.streams) this.set({ connection: job.connection, organization: job.organizationId, stream }, seconds);
      }
    },
  });
}

/** Whether each connection's token was accepted, and the fields the catalog does not know, read from the warehouse at each scrape. */
function registerWarehouseGauges(registers: Registry[], warehouse: Warehouse): void {
  new Gauge({
    name: 'svcsync_connection_authorized',
    help:
      "1 when the service accepted the connection's token the last time a run used it, " +
      '0 when it refused it (nothing of the connection syncs); absent before any run',
    labelNames: ['connection'],
    registers,
    async collect(this: Gauge<'connection'>) {
      this.reset();
      // Before the first migration (a scrape while the daemon starts) there is nothing to show.
      for (const r of await listAuthorizations(warehouse.db).catch(() => []))
        this.set({ connection: r.connection }, r.result === 'ok' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'svcsync_drift_fields',
    help: 'Fields the API sent that the catalog does not know (_svcsync_drift), per stream; see svcsync schema --drift',
    labelNames: ['connection', 'organization', 'stream'],
    registers,
    async collect(this: Gauge<StreamLabels>) {
      this.reset();
      for (const d of await listDrift(warehouse.db))
        this.inc({ connection: d.connection, organization: d.organization_id, stream: d.stream });
    },
  });
}

/**
 * The Prometheus metrics of a daemon or a worker (its job runner's), in a registry of its own
 * (never prom-client's global one, so two in one process, as in tests, do not share counters).
 * The metrics the process counts into are its fields; the gauges read at each scrape are
 * registered by the constructor, in the order /metrics lists them.
 */
export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly registers = [this.registry];
  readonly requests: Counter<'family' | 'outcome'> = new Counter({
    name: 'svcsync_requests_total',
    help: 'HTTP attempts to the API by family and outcome (ok, retried, rate_limited, failed)',
    labelNames: ['family', 'outcome'],
    registers: this.registers,
  });
  readonly rateLimited: Counter<'family' | 'code'> = new Counter({
    name: 'svcsync_rate_limited_total',
    help: '429 answers by family and API code (44 per-minute, 45 daily quota, 1070 concurrency)',
    labelNames: ['family', 'code'],
    registers: this.registers,
  });
  readonly records: Counter<StreamLabels> = new Counter({
    name: 'svcsync_records_written_total',
    help: 'Rows written per stream',
    labelNames: ['connection', 'organization', 'stream'],
    registers: this.registers,
  });
  readonly deleted: Counter<StreamLabels | 'table'> = new Counter({
    name: 'svcsync_rows_deleted_total',
    help: 'Rows marked deleted per table (child tables included), by the stream whose run marked them',
    labelNames: ['connection', 'organization', 'stream', 'table'],
    registers: this.registers,
  });
  readonly runs: Counter<'connection' | 'job_class' | 'status'> = new Counter({
    name: 'svcsync_job_runs_total',
    help: 'Jobs finished by class and status',
    labelNames: ['connection', 'job_class', 'status'],
    registers: this.registers,
  });
  readonly skipped: Counter<'connection' | 'job_class' | 'reason'> = new Counter({
    name: 'svcsync_job_skipped_total',
    help: 'Scheduled fires not run, by reason (overlap, paused, backoff, budget, busy)',
    labelNames: ['connection', 'job_class', 'reason'],
    registers: this.registers,
  });
  readonly duration: Histogram<'connection' | 'job_class' | 'status'> = new Histogram({
    name: 'svcsync_job_duration_seconds',
    help: 'Run durations of jobs',
    labelNames: ['connection', 'job_class', 'status'],
    buckets: [1, 5, 15, 60, 300, 900, 3600, 4 * 3600],
    registers: this.registers,
  });
  readonly running: Gauge<'job_class'> = new Gauge({
    name: 'svcsync_jobs_running',
    help: 'Jobs running now',
    labelNames: ['job_class'],
    registers: this.registers,
  });
  /** Webhooks: accepted (each hook), coalesced into a pending run, rejected (by reason), and what they started. */
  readonly hooksReceived: Counter<'connection'> = new Counter({
    name: 'svcsync_hooks_received_total',
    help: 'Webhooks accepted (valid secret, known organization)',
    labelNames: ['connection'],
    registers: this.registers,
  });
  readonly hooksCoalesced: Counter<'connection'> = new Counter({
    name: 'svcsync_hooks_coalesced_total',
    help: 'Accepted webhooks that joined a run already pending for their organization',
    labelNames: ['connection'],
    registers: this.registers,
  });
  readonly hooksRejected: Counter<'reason'> = new Counter({
    name: 'svcsync_hooks_rejected_total',
    help: 'Webhooks refused, by reason (unauthorized, too_large, rate_limited, unknown_organization, bad_request)',
    labelNames: ['reason'],
    registers: this.registers,
  });
  readonly hookRuns: Counter<'connection' | 'result'> = new Counter({
    name: 'svcsync_hook_runs_total',
    help: 'Debounced webhook runs by result: started (an early run), fallback (the budget is low: left to the schedule)',
    labelNames: ['connection', 'result'],
    registers: this.registers,
  });

  constructor(deps: { clock: Clock; limiters: LimiterRegistry; warehouse: Warehouse; quota: QuotaSource; records?: RecordBudget }) {
    const { clock, limiters, warehouse, quota } = deps;
    registerProcessGauges(this.registers, deps.records);
    registerQuotaGauges(this.registers, limiters, quota);
    registerStreamStateGauges(this.registers, clock, warehouse);
    registerScheduleGauge(this.registers, clock, quota);
    registerWarehouseGauges(this.registers, warehouse);
  }

  onRequest = (e: RequestEvent): void => {
    this.requests.inc({ family: e.family, outcome: e.outcome });
    if (e.status === 429) this.rateLimited.inc({ family: e.family, code: String(e.code ?? 'none') });
  };

  jobStarted(job: JobSpec): void {
    this.running.inc({ job_class: job.jobClass });
  }

  jobFinished(
    job: JobSpec,
    outcome: JobOutcome,
    seconds: number,
    written: Array<{ organizationId: string; stream: string; written: number; deletedTables?: Readonly<Record<string, number>> }>,
  ): void {
    this.running.dec({ job_class: job.jobClass });
    this.runs.inc({ connection: job.connection, job_class: job.jobClass, status: outcome.status });
    this.duration.observe({ connection: job.connection, job_class: job.jobClass, status: outcome.status }, seconds);
    for (const w of written) {
      const labels = { connection: job.connection, organization: w.organizationId, stream: w.stream };
      if (w.written > 0) this.records.inc(labels, w.written);
      for (const [table, rows] of Object.entries(w.deletedTables ?? {})) if (rows > 0) this.deleted.inc({ ...labels, table }, rows);
    }
  }

  jobSkipped(job: JobSpec, reason: string): void {
    this.skipped.inc({ connection: job.connection, job_class: job.jobClass, reason });
  }

  /** An accepted hook (valid secret, known organization); `coalesced` when it joined a run already pending. */
  hookReceived(connection: string, coalesced: boolean): void {
    this.hooksReceived.inc({ connection });
    if (coalesced) this.hooksCoalesced.inc({ connection });
  }

  /** A debounced hook run: started, or left to the schedule because the budget is low. */
  hookRun(connection: string, result: 'started' | 'fallback'): void {
    this.hookRuns.inc({ connection, result });
  }

  /** The worker queue's depth on /metrics (the same for every worker: the queue is shared), read at each scrape. */
  watchQueue(read: () => Promise<QueueDepth | null>): void {
    const registers = this.registers;
    new Gauge({
      name: 'svcsync_queue_jobs',
      help: 'Sync jobs in the worker queue (all workers), by state: waiting, running, retrying',
      labelNames: ['state'],
      registers,
      async collect(this: Gauge<'state'>) {
        const q = await read();
        this.reset();
        if (!q) return;
        this.set({ state: 'waiting' }, q.waiting);
        this.set({ state: 'running' }, q.running);
        this.set({ state: 'retrying' }, q.retrying);
      },
    });
    new Gauge({
      name: 'svcsync_queue_oldest_waiting_seconds',
      help: 'How long the oldest sync job that may start now has waited in the worker queue (0 when none waits)',
      registers,
      async collect(this: Gauge) {
        this.set((await read())?.oldestWaitingSeconds ?? 0);
      },
    });
  }
}
