/**
 * A simulated week of `svcsync daemon` for one organization, on the sandbox's clock: what the
 * requests scenario of `npm run bench` measures (bench/requests.ts).
 *
 * 1. The first sync: one `svcsync sync` of the whole catalog on an empty warehouse, its gates
 *    lifted (counted, not timed).
 * 2. `svcsync plan` for the week's configuration, read before the week starts: what it predicts
 *    the busiest day costs.
 * 3. The week: the real `Daemon` (its scheduler, its budget admission, its job runner) on the
 *    free plan's daily budget, with the sandbox's clock injected. The clock moves to the next
 *    instant that matters (a change, or the daemon's next fire), never minute by minute; at a
 *    fire the daemon ticks and every job it starts is a real sync over HTTP into a SQLite
 *    warehouse. Changes happen at seeded random instants of the working hours.
 * 4. Staleness: the sandbox logs each change (stream, id, instant); after each tick the rows the
 *    daemon wrote since the last one (`_synced_at`, stamped from the same injected clock) tell
 *    when each change landed. A change lands with the first write of its row at or after it.
 *
 * Another scheduler plugs in through `Daemon`: whatever decides its next fires
 * (`scheduler.nextRuns()`) and what a tick starts is what this measures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery } from 'kysely';
import { findStream } from '../src/catalog/index.js';
import { parseConfig } from '../src/config/load.js';
import { PLANS, dailyBudget, planLimits, type Plan } from '../src/config/plans.js';
import type { Config } from '../src/config/schema.js';
import { createLogger, type Logger } from '../src/core/logger.js';
import { SecretRegistry } from '../src/core/secrets.js';
import { runSync } from '../src/extractors/sync-run.js';
import { migrateToLatest } from '../src/loaders/migrate.js';
import { openWarehouse, type Warehouse } from '../src/loaders/warehouse.js';
import { Daemon } from '../src/scheduler/daemon.js';
import { loadPlanOrganizations, planNextDay } from '../src/scheduler/planning/plan.js';
import { renderPlan } from '../src/scheduler/planning/plan-render.js';
import { fitFreshness, renderFreshnessFit } from '../src/scheduler/planning/freshness-fit.js';
import { readsWhole, type JobSpec, type Schedules } from '../src/scheduler/timing/jobs.js';
import type { SchedulerEvent } from '../src/scheduler/timing/scheduler.js';
import { startSandbox, type Family, type RequestLog, type Sandbox } from '../sandbox/index.js';

export const DAY = 86_400_000;
const MINUTE = 60_000;

/** Changes a day: sales orders and contacts modified, events created. */
export interface ChangeRate {
  orders: number;
  contacts: number;
  events: number;
}
export type ChangeKind = keyof ChangeRate;

/** The stream each kind of change touches. */
export const CHANGED_STREAMS: Readonly<Record<ChangeKind, string>> = {
  orders: 'inventory.sales_orders',
  contacts: 'inventory.contacts',
  events: 'billing.events',
};

export interface WeekOrganization {
  /** `reference`, `ten-times-faster`, `small`: the key of its figures. */
  name: string;
  /** Records per top-level stream; the other streams hold `scale` records. */
  records: Record<string, number>;
  scale: number;
  changes: ChangeRate;
}

export interface WeekOptions {
  organization: WeekOrganization;
  /** Simulated days of the daemon (7 for a week). */
  days: number;
  perPage: number;
  plan: Plan;
  /** Seeds the sandbox's data and the change instants: the same seed, the same week. */
  seed?: number;
  /** Working hours (UTC, [from, to) in hours) in which the changes happen; default 9 to 17. */
  workHours?: readonly [number, number];
  /** Changes at these offsets (ms from the first day's midnight) instead of random ones: a test's known instants. */
  changesAt?: ReadonlyArray<{ kind: ChangeKind; offsetMs: number }>;
  /** The daemon's schedules, where the plan's defaults should not hold (tests). */
  schedules?: Partial<Schedules>;
  /** Keep streams fresh by their targets (`daemon.freshness`, the default); false: the cron schedules alone. */
  freshness?: boolean;
}

export interface RequestKinds {
  listPages: number;
  singleReads: number;
  childLists: number;
  /** Organization lists: not organization-scoped, so not charged to its quota. */
  organizationLists: number;
}

export interface JobClassWeek {
  /** The job class, `incremental (read whole)` for the trees read whole on every run. */
  jobClass: string;
  /** The cron expression(s) of the class's jobs. */
  schedule: string;
  runs: number;
  requests: number;
}

export interface Staleness {
  /** Changes made in the week, and those that reached the warehouse. */
  changes: number;
  landed: number;
  /**
   * Changes still not in the warehouse when the measurement ended (two days after the week):
   * each counts in the percentiles with its lag so far, so a figure they reach is a lower bound.
   */
  unlanded: number;
  p50Minutes: number | null;
  p95Minutes: number | null;
  maxMinutes: number | null;
  /** The p95 of the changes made on each day of the week (UTC): whether the tail is the first day's or every day's. */
  p95ByDay: Array<number | null>;
}

export interface WeekFigures {
  name: string;
  records: Record<string, number>;
  changes: ChangeRate;
  firstSync: { requests: number; kinds: RequestKinds; byEndpoint: Record<string, number> };
  /** Days of each plan's usable quota the first sync needs. */
  firstSyncDays: Array<{ plan: Plan; usable: number; days: number }>;
  steady: {
    plan: Plan;
    usable: number;
    busiestDay: number;
    meanDay: number;
    /** What `svcsync plan` said, before the week, the busiest day would cost. */
    predictedDay: number;
    /** Requests of each simulated day (quota days, UTC). */
    days: number[];
    /** Per stream changed: how long from the change to its row in the warehouse. */
    staleness: Record<string, Staleness>;
    classes: JobClassWeek[];
    /** Fires the daemon skipped, by reason (budget, overlap, …). */
    skipped: Record<string, number>;
    /** The first few distinct explanations the daemon gave for a skip (job class: detail). */
    skipDetails: string[];
  };
  /** svcsync's warehouse equals the sandbox after the week (live ids of every top-level stream). */
  idsMatch: boolean;
  mismatches: string[];
  /** Wall-clock seconds the organization's first sync and week took. */
  elapsedS: number;
  /** `svcsync plan` and `svcsync plan --fit` for the organization after its week (what they say once the daemon learned its changes). */
  planAfter: string;
  fitAfter: string;
}

/** Organization-scoped requests of a log: what an organization's daily quota counts. */
export function charged(log: RequestLog): number {
  return Object.values(log.byOrganization).reduce((a, n) => a + n, 0);
}

export function kindsOf(byEndpoint: Record<string, number>): RequestKinds {
  const k: RequestKinds = { listPages: 0, singleReads: 0, childLists: 0, organizationLists: 0 };
  for (const [endpoint, n] of Object.entries(byEndpoint)) {
    if (endpoint.startsWith('POST /oauth')) continue;
    if (/\/organizations$/.test(endpoint)) k.organizationLists += n;
    else if (/\{[a-z_]+\}$/.test(endpoint)) k.singleReads += n;
    else if (/\{[a-z_]+\}\//.test(endpoint)) k.childLists += n;
    else k.listPages += n;
  }
  return k;
}

/** mulberry32: the change instants, reproducible from the seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface PlannedChange {
  kind: ChangeKind;
  at: number;
}

/** Each day's changes at random instants of its working hours, in time order. */
export function changeInstants(
  rate: ChangeRate,
  weekStart: number,
  days: number,
  seed: number,
  workHours: readonly [number, number],
): PlannedChange[] {
  const random = seeded(seed);
  const out: PlannedChange[] = [];
  const span = (workHours[1] - workHours[0]) * 3_600_000;
  for (let d = 0; d < days; d++) {
    const from = weekStart + d * DAY + workHours[0] * 3_600_000;
    for (const kind of Object.keys(CHANGED_STREAMS) as ChangeKind[])
      for (let i = 0; i < rate[kind]; i++) out.push({ kind, at: from + Math.floor(random() * span) });
  }
  return out.sort((a, b) => a.at - b.at);
}

/** The nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const round1 = (n: number | null): number | null => (n === null ? null : Math.round(n * 10) / 10);

/**
 * The changes not yet in the warehouse, per stream and record id, and the lag of each that
 * landed. A row written at or after a change holds it: the daemon reads a record whole.
 */
export class StalenessLedger {
  private readonly pending = new Map<string, Map<string, number[]>>();
  private readonly made = new Map<string, number>();
  /** Each landed change's instant and lag (ms). */
  private readonly lags = new Map<string, Array<{ at: number; ms: number }>>();

  constructor(
    readonly streams: readonly string[],
    private readonly weekStart = 0,
  ) {
    for (const s of streams) {
      this.pending.set(s, new Map());
      this.lags.set(s, []);
      this.made.set(s, 0);
    }
  }

  changed(stream: string, id: string, at: number): void {
    const byId = this.pending.get(stream);
    if (!byId) return;
    const list = byId.get(id) ?? [];
    list.push(at);
    byId.set(id, list);
    this.made.set(stream, this.made.get(stream)! + 1);
  }

  landed(stream: string, id: string, at: number): void {
    const list = this.pending.get(stream)?.get(id);
    if (!list) return;
    const lags = this.lags.get(stream)!;
    const left = list.filter((t) => {
      if (t > at) return true;
      lags.push({ at: t, ms: at - t });
      return false;
    });
    if (left.length) this.pending.get(stream)!.set(id, left);
    else this.pending.get(stream)!.delete(id);
  }

  waiting(): number {
    let n = 0;
    for (const byId of this.pending.values()) for (const list of byId.values()) n += list.length;
    return n;
  }

  private p95ByDay(all: ReadonlyArray<{ at: number; ms: number }>): Array<number | null> {
    const days: number[][] = [];
    for (const { at, ms } of all) (days[Math.floor((at - this.weekStart) / DAY)] ??= []).push(ms / MINUTE);
    const p95 = (lags: number[]): number | null =>
      percentile(
        lags.sort((x, y) => x - y),
        95,
      );
    return Array.from(days, (lags = []) => round1(p95(lags)));
  }

  /** Per stream changed; a change still waiting at `end` counts with its lag so far. */
  figures(end: number): Record<string, Staleness> {
    const out: Record<string, Staleness> = {};
    for (const s of this.streams) {
      const made = this.made.get(s)!;
      if (made === 0) continue;
      const landed = this.lags.get(s)!.length;
      const waiting = [...this.pending.get(s)!.values()].flat().map((at) => ({ at, ms: Math.max(0, end - at) }));
      const all = [...this.lags.get(s)!, ...waiting];
      const minutes = all.map((l) => l.ms / MINUTE).sort((a, b) => a - b);
      out[s] = {
        changes: made,
        landed,
        unlanded: waiting.length,
        p50Minutes: round1(percentile(minutes, 50)),
        p95Minutes: round1(percentile(minutes, 95)),
        maxMinutes: round1(minutes.at(-1) ?? null),
        p95ByDay: this.p95ByDay(all),
      };
    }
    return out;
  }
}

/** The bench's configuration: the first sync's gates lifted; the week's on the plan's daily budget. */
function benchConfig(sandbox: Sandbox, warehouse: string, opts: WeekOptions, week: boolean, secrets: SecretRegistry): Config {
  const plan = planLimits(opts.plan);
  // Counted, not timed: the per-minute window and concurrency are lifted; in the week the daily
  // quota and its reserve are the plan's, so the daemon's budget decisions are its own.
  const perDay = week ? plan.per_day : 1_000_000_000;
  return parseConfig(
    {
      warehouse,
      log_level: 'error',
      sync: { per_page: opts.perPage },
      daemon: { ...(opts.schedules ? { schedules: opts.schedules } : {}), freshness: { enabled: opts.freshness ?? true } },
      connections: [
        {
          name: 'bench',
          accounts_url: sandbox.url,
          ...sandbox.credentials,
          plan: opts.plan,
          limits: { per_minute: 1_000_000_000, per_day: perDay, concurrency: 10, reserve: week ? plan.reserve : 0 },
        },
      ],
    },
    { env: {}, secrets },
  );
}

function classLabel(job: JobSpec): string {
  const whole = job.jobClass === 'incremental' && job.trees.length > 0 && job.trees.every((t) => readsWhole(findStream(t)!));
  return whole ? 'incremental (read whole)' : job.jobClass;
}

interface Harness {
  sandbox: Sandbox;
  warehouse: Warehouse;
  url: string;
  secrets: SecretRegistry;
  logger: Logger;
  organizationId: string;
}

/**
 * The first sync in one run, its gates lifted; then one incremental sync with nothing changed,
 * not counted. The daemon estimates an incremental run by the streams' last incremental run, and
 * a first sync done in one run would stand as that (thousands of requests, more than the free
 * plan's day): on the free plan a first sync spreads over days and ends in runs the size of a day.
 */
async function firstSync(h: Harness, opts: WeekOptions): Promise<WeekFigures['firstSync']> {
  const config = benchConfig(h.sandbox, h.url, opts, false, h.secrets);
  const sync = (): Promise<unknown> =>
    runSync({
      config,
      warehouse: h.warehouse,
      clock: h.sandbox.clock,
      logger: h.logger,
      secrets: h.secrets,
      signal: new AbortController().signal,
      command: 'sync',
      mode: 'incremental',
    });
  h.sandbox.resetRequestLog();
  await sync();
  const log = h.sandbox.requestLog();
  h.sandbox.advanceClock(60 * MINUTE);
  await sync();
  return { requests: charged(log), kinds: kindsOf(log.byEndpoint), byEndpoint: { ...log.byEndpoint } };
}

/**
 * Rows of the changed streams written after `since` (ISO text, the form svcsync writes
 * `_synced_at` in, so the text comparison is the instants'): landings. Returns the latest seen.
 */
async function harvest(h: Harness, ledger: StalenessLedger, since: string): Promise<number> {
  let latest = Date.parse(since);
  for (const name of ledger.streams) {
    const spec = findStream(name)!;
    const table = name.replace('.', '_');
    const rows = await h.warehouse.db.executeQuery<{ id: unknown; at: unknown }>(
      CompiledQuery.raw(`SELECT "${spec.primaryKey}" AS id, "_synced_at" AS at FROM "${table}" WHERE "_synced_at" > ?`, [since]),
    );
    for (const r of rows.rows) {
      const at = Date.parse(String(r.at));
      ledger.landed(name, String(r.id), at);
      latest = Math.max(latest, at);
    }
  }
  return latest;
}

/** Applies one planned change to the sandbox and logs what changed. */
function applyChange(h: Harness, change: PlannedChange, ledger: StalenessLedger): void {
  const [family, stream] = CHANGED_STREAMS[change.kind].split('.') as [Family, string];
  const amount = change.kind === 'events' ? { create: 1 } : { modify: 1 };
  h.sandbox.mutate({ organizationId: h.organizationId, families: [family], streams: [stream], ...amount });
  for (const c of h.sandbox.changeLog()) ledger.changed(c.stream, c.id, c.at);
  h.sandbox.resetChangeLog();
}

/** The daemon's week: changes at their instants, fires at theirs, requests per quota day, landings after each tick. */
class WeekRun {
  readonly perDay: number[];
  readonly classes = new Map<string, JobClassWeek>();
  readonly skipped: Record<string, number> = {};
  readonly skipDetails: string[] = [];
  /** Off once the week is over: the runs that land its last changes are not the week's. */
  private counting = true;
  private lastHarvest: string;

  constructor(
    private readonly h: Harness,
    private readonly daemon: Daemon,
    private readonly ledger: StalenessLedger,
    private readonly weekStart: number,
    days: number,
  ) {
    this.perDay = new Array<number>(days).fill(0);
    this.lastHarvest = new Date(h.sandbox.now()).toISOString();
  }

  onEvent(e: SchedulerEvent): void {
    if (!this.counting) return;
    if (e.type === 'skipped') {
      this.skipped[e.reason] = (this.skipped[e.reason] ?? 0) + 1;
      const detail = `${e.job.jobClass}: ${e.detail}`;
      if (this.skipDetails.length < 5 && !this.skipDetails.includes(detail)) this.skipDetails.push(detail);
    }
    if (e.type !== 'finished' || e.job.organizationId === null) return;
    const label = classLabel(e.job);
    const c = this.classes.get(label) ?? { jobClass: label, schedule: '', runs: 0, requests: 0 };
    if (!c.schedule.split(', ').includes(e.job.cron.expression))
      c.schedule = [c.schedule, e.job.cron.expression].filter(Boolean).join(', ');
    c.runs++;
    c.requests += e.outcome.requests ?? 0;
    this.classes.set(label, c);
  }

  private advanceTo(at: number): void {
    const now = this.h.sandbox.now();
    if (at > now) this.h.sandbox.advanceClock(at - now);
  }

  /** Fires what is due at the daemon's next fire (before `until`); false when none is. */
  async fireNext(until: number, counted: boolean): Promise<boolean> {
    const at = Math.min(...this.daemon.scheduler.nextRuns().map((r) => r.at));
    if (!(at < until)) return false;
    this.advanceTo(at);
    const before = charged(this.h.sandbox.requestLog());
    await this.daemon.scheduler.tick();
    await this.daemon.scheduler.idle();
    const spent = charged(this.h.sandbox.requestLog()) - before;
    const day = Math.floor((at - this.weekStart) / DAY);
    if (counted && day >= 0 && day < this.perDay.length) this.perDay[day]! += spent;
    const latest = await harvest(this.h, this.ledger, this.lastHarvest);
    // A stamp may run a few ms ahead of the clock (it is strictly increasing): the next harvest starts after both.
    this.lastHarvest = new Date(Math.max(latest, this.h.sandbox.now())).toISOString();
    return true;
  }

  /** The week: each change at its instant, each fire at its own, in time order. */
  async run(changes: readonly PlannedChange[], weekEnd: number): Promise<void> {
    let i = 0;
    for (;;) {
      const fire = Math.min(...this.daemon.scheduler.nextRuns().map((r) => r.at));
      const change = changes[i];
      if (change && change.at <= fire && change.at < weekEnd) {
        this.advanceTo(change.at);
        applyChange(this.h, change, this.ledger);
        i++;
        continue;
      }
      if (!(await this.fireNext(weekEnd, true))) break;
    }
    this.advanceTo(weekEnd);
    this.counting = false;
    // Changes of the last hours land after the week: their lag counts, their requests are the next day's.
    for (let n = 0; n < 1_000 && this.ledger.waiting() > 0; n++) if (!(await this.fireNext(weekEnd + 2 * DAY, false))) break;
  }
}

async function idsCheck(h: Harness, records: Record<string, number>): Promise<string[]> {
  const mismatches: string[] = [];
  const org = h.sandbox.organizations()[0]!;
  for (const name of Object.keys(records)) {
    const [family, stream] = name.split('.') as [Family, string];
    const got = await h.warehouse.db.executeQuery<{ n: number }>(
      CompiledQuery.raw(`SELECT COUNT(*) AS n FROM "${family}_${stream}" WHERE "_deleted_at" IS NULL`),
    );
    const live = Number(got.rows[0]?.n ?? -1);
    const want = h.sandbox.count(org.ids[family], family, stream);
    if (live !== want) mismatches.push(`${family}_${stream}: ${live} live rows, sandbox ${want}`);
  }
  return mismatches;
}

/** What `svcsync plan` and `plan --fit` print for the organization at the end of its week. */
async function planTexts(h: Harness, opts: WeekOptions): Promise<{ planAfter: string; fitAfter: string }> {
  const config = benchConfig(h.sandbox, h.url, opts, true, h.secrets);
  const now = h.sandbox.now();
  const plans = await planNextDay(config, h.warehouse, now);
  const orgs = await loadPlanOrganizations(config, h.warehouse, { now });
  return { planAfter: renderPlan(plans), fitAfter: renderFreshnessFit(orgs.map((o) => fitFreshness(config, o, now))) };
}

/** The predicted busiest day of `svcsync plan` for the week's configuration, read at `now`. */
async function predictedDay(h: Harness, config: Config, now: number): Promise<number> {
  const plans = await planNextDay(config, h.warehouse, now);
  return plans.find((p) => p.organizationId === h.organizationId)?.total ?? 0;
}

async function theWeek(h: Harness, opts: WeekOptions): Promise<WeekFigures['steady']> {
  const config = benchConfig(h.sandbox, h.url, opts, true, h.secrets);
  // The week starts at the next quota day (midnight UTC), after the first sync's day.
  const weekStart = Math.floor(h.sandbox.now() / DAY) * DAY + DAY;
  const weekEnd = weekStart + opts.days * DAY;
  h.sandbox.advanceClock(weekStart - 1_000 - h.sandbox.now());
  const predicted = await predictedDay(h, config, h.sandbox.now());
  const ledger = new StalenessLedger(Object.values(CHANGED_STREAMS), weekStart);
  let week: WeekRun | null = null;
  const daemon = new Daemon({
    config,
    warehouse: h.warehouse,
    clock: h.sandbox.clock,
    logger: h.logger,
    secrets: h.secrets,
    onEvent: (e) => week?.onEvent(e),
  });
  week = new WeekRun(h, daemon, ledger, weekStart, opts.days);
  await daemon.runner.start();
  // Known organizations, and the scheduler's next fires counted from now (what `daemon` does at start).
  await daemon.runner.reloadOrganizations();
  const changes = opts.changesAt
    ? opts.changesAt.map((c) => ({ kind: c.kind, at: weekStart + c.offsetMs })).sort((a, b) => a.at - b.at)
    : changeInstants(opts.organization.changes, weekStart, opts.days, opts.seed ?? 42, opts.workHours ?? [9, 17]);
  h.sandbox.resetChangeLog();
  await week.run(changes, weekEnd);
  await daemon.stop(1_000);
  const usable = dailyBudget(planLimits(opts.plan));
  return {
    plan: opts.plan,
    usable,
    busiestDay: Math.max(...week.perDay),
    meanDay: Math.round(week.perDay.reduce((a, n) => a + n, 0) / week.perDay.length),
    predictedDay: predicted,
    days: week.perDay,
    staleness: ledger.figures(h.sandbox.now()),
    classes: [...week.classes.values()],
    skipped: week.skipped,
    skipDetails: week.skipDetails,
  };
}

/** One organization's first sync and simulated week. */
export async function runWeek(opts: WeekOptions): Promise<WeekFigures> {
  const started = performance.now();
  const org = opts.organization;
  const sandbox = await startSandbox({
    seed: opts.seed ?? 42,
    organizations: 1,
    scale: org.scale,
    streamScale: org.records,
    unlimited: true,
    recordChanges: true,
  });
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-bench-week-'));
  let warehouse: Warehouse | null = null;
  try {
    const url = `sqlite:${join(dir, 'warehouse.db')}`;
    warehouse = await openWarehouse(url);
    await migrateToLatest(warehouse);
    const secrets = new SecretRegistry();
    const h: Harness = {
      sandbox,
      warehouse,
      url,
      secrets,
      // The daemon's own errors (a run stopped at the spent budget) are its decisions, counted in the figures.
      logger: createLogger({ level: 'fatal', secrets }),
      organizationId: sandbox.organizations()[0]!.organization_id,
    };
    const first = await firstSync(h, opts);
    const firstSyncDays = PLANS.map((plan) => {
      const usable = dailyBudget(planLimits(plan));
      return { plan, usable, days: first.requests / usable };
    });
    const steady = await theWeek(h, opts);
    const mismatches = await idsCheck(h, org.records);
    const after = await planTexts(h, opts);
    return {
      name: org.name,
      records: org.records,
      changes: org.changes,
      firstSync: first,
      firstSyncDays,
      steady,
      idsMatch: mismatches.length === 0,
      mismatches,
      elapsedS: Math.round((performance.now() - started) / 100) / 10,
      ...after,
    };
  } finally {
    await warehouse?.close();
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
