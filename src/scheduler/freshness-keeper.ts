import { findStream } from '../catalog/index.js';
import { qualifiedName, type StreamSpec } from '../catalog/types.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../core/logger.js';
import { detailIsEnabled } from '../extractors/stream-pass.js';
import { changeTimes } from '../loaders/change-times.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { loadSnapshot, treeCost, treeStreams, type OrgSnapshot, type TreeCost } from './planning/estimate.js';
import { CHANGE_WINDOW_DAYS, freshnessSettings, targetOf } from './planning/fresh-plan.js';
import { changeRates, changesBetween, DAY_MS, HOUR_MS, type ChangeRates } from './timing/change-model.js';
import { afterPoll, FIRST_POLLS, planFreshness } from './timing/freshness.js';
import type { FreshDay, FreshPlan, FreshStream, PollMemory } from './timing/freshness.js';
import type { JobSpec } from './timing/jobs.js';
import type { LiveFreshness } from './surface/live-status.js';

/** A due time within this of now counts as due: one look a minute serves them all. */
const DUE_SLACK_MS = 60_000;
/** Change rates are learned again this often (and at once after a poll that found changes). */
const RELEARN_MS = HOUR_MS;

interface TreeState {
  cost: TreeCost;
  /** Single reads and child lists queued for the tree's streams (each a request, due now). */
  queued: number;
  targetMinutes: number;
  rates: ChangeRates | null;
  lastPolledAt: number | null;
  recent: PollMemory;
}

interface OrgState {
  job: Pick<JobSpec, 'connection' | 'organizationId'>;
  trees: Map<string, TreeState>;
  learnedAt: number;
  plan: FreshPlan | null;
  /** The quota day (its reset) the plan's κ was fitted for. */
  dayOf: number | null;
}

/** Queued single reads and child lists of a tree's streams that are not a backfill's or a reconcile's. */
function queuedOf(tree: string, job: JobSpec, snap: OrgSnapshot): number {
  let n = 0;
  for (const name of treeStreams(tree, job)) {
    const p = snap.streams.get(name)?.pending;
    if (p) n += Math.max(0, p.detail + p.children - p.backfillOrReconcile);
  }
  return n;
}

/**
 * The daemon's memory of each freshness job (one per organization): what each stream costs a
 * poll and a change, how fast it changes (learned from the warehouse, src/loaders/change-times.ts),
 * when it was last polled and what the last polls found, and the plan made from them
 * (src/scheduler/timing/freshness.ts). The scheduler asks it when the job is next due; the
 * runner asks it which streams are due and what they cost, and tells it what each run found.
 */
export class FreshnessKeeper {
  private readonly orgs = new Map<string, OrgState>();
  /** Requests each freshness job's runs spent, and when: what pacing a short day counts. */
  private readonly spent = new Map<string, Array<{ at: number; requests: number }>>();

  constructor(private readonly ctx: { config: Config; warehouse: Warehouse; logger: Logger; catalog: readonly StreamSpec[] }) {}

  /** Plans the job's streams for what is left of the day (learning their rates first when due). */
  async replan(job: JobSpec, day: FreshDay, snap?: OrgSnapshot): Promise<FreshPlan> {
    const org = await this.stateOf(job, day.now, snap);
    if (snap) for (const [tree, t] of org.trees) t.queued = queuedOf(tree, job, snap);
    const streams: FreshStream[] = [...org.trees.entries()].map(([tree, t]) => ({
      tree,
      targetMinutes: t.targetMinutes,
      pollCost: t.cost.poll,
      perChange: t.cost.perChange,
      rates: t.rates,
      lastPolledAt: t.lastPolledAt,
      recent: t.recent,
      queued: t.queued,
    }));
    const kappa = org.dayOf === day.reset ? (org.plan?.kappa ?? null) : null;
    org.plan = planFreshness(streams, day, freshnessSettings(this.ctx.config), kappa);
    org.dayOf = day.reset;
    return org.plan;
  }

  planOf(job: JobSpec): FreshPlan | null {
    return this.orgs.get(job.id)?.plan ?? null;
  }

  /**
   * When the job's first stream is next due (now when it was never planned), and at the latest
   * when the quota day resets: a plan made for a day that ran short must not outlive it.
   */
  dueAt(job: JobSpec, now: number): number {
    const org = this.orgs.get(job.id);
    const plan = org?.plan;
    if (!plan || plan.streams.length === 0) return now;
    return Math.min(org.dayOf ?? Infinity, ...plan.streams.map((s) => s.nextDue));
  }

  /** The trees due now (within a minute). */
  dueTrees(job: JobSpec, now: number): string[] {
    const plan = this.planOf(job);
    if (!plan) return [...job.trees];
    return plan.streams.filter((s) => s.nextDue <= now + DUE_SLACK_MS).map((s) => s.tree);
  }

  /** Requests a poll of `trees` now should cost: a poll each, and each change expected since its last poll. */
  estimate(job: JobSpec, trees: readonly string[], now: number): number {
    const org = this.orgs.get(job.id);
    let total = 0;
    for (const tree of trees) {
      const t = org?.trees.get(tree);
      if (!t) {
        total += 1;
        continue;
      }
      const since = t.lastPolledAt ?? now - DAY_MS;
      total += t.cost.poll + (t.rates ? changesBetween(t.rates, since, now) * t.cost.perChange : 0);
    }
    return Math.max(1, Math.ceil(total));
  }

  /** Every planned organization's streams, for the status document (`LiveStatus.freshness`). */
  live(now: number): LiveFreshness[] {
    const out: LiveFreshness[] = [];
    for (const org of this.orgs.values()) {
      if (!org.plan || org.job.organizationId === null) continue;
      const hour = new Date(now).getUTCHours();
      out.push({
        connection: org.job.connection,
        organizationId: org.job.organizationId,
        short: org.plan.short,
        streams: org.plan.streams.map((v) => {
          const rates = org.trees.get(v.tree)?.rates;
          return {
            stream: v.tree,
            state: v.state,
            changesPerDay: rates ? Math.round(rates.perDay * 10) / 10 : null,
            intervalMinutes: Math.round(v.intervals[hour]! * 10) / 10,
            nextPollAt: new Date(v.nextDue).toISOString(),
            p95Minutes: v.staleness?.p95Minutes ?? null,
          };
        }),
      });
    }
    return out;
  }

  /** A run of the job spent `requests` (whatever its outcome). */
  spend(job: JobSpec, at: number, requests: number): void {
    const list = (this.spent.get(job.id) ?? []).filter((x) => at - x.at < HOUR_MS);
    list.push({ at, requests });
    this.spent.set(job.id, list);
  }

  /**
   * What a run of the job may spend now: all that is left while the day holds the plan (a run
   * cut short would leave the streams after it unpolled); on a short day, twice the next hour's
   * share of what is left, less what the last hour's runs spent. A backlog larger than the day
   * (queued single reads and child lists) is read through the day, newest first, instead of
   * taking the whole day at the first run after the reset.
   */
  allowance(job: JobSpec, now: number): number {
    const plan = this.planOf(job);
    if (!plan || !plan.short) return Number.POSITIVE_INFINITY;
    const share = plan.demand > 0 ? (2 * plan.available * plan.nextHour) / plan.demand : plan.available;
    const recent = (this.spent.get(job.id) ?? []).filter((x) => now - x.at < HOUR_MS).reduce((a, x) => a + x.requests, 0);
    return Math.max(0, Math.floor(share - recent));
  }

  /** Requests the job needs until the reset at its base intervals, as last planned (null before its first plan). */
  demand(job: JobSpec): number | null {
    return this.planOf(job)?.baseDemand ?? null;
  }

  /**
   * What a finished poll found, per tree (rows written): a poll that found changes brings the
   * tree back to its target and relearns the rates at once; an empty one stretches the hours it covered (`afterPoll`).
   */
  polled(job: JobSpec, found: ReadonlyMap<string, number>, at: number): void {
    const org = this.orgs.get(job.id);
    if (!org) return;
    for (const [tree, written] of found) {
      const t = org.trees.get(tree);
      if (!t) continue;
      t.recent = afterPoll(t.recent, written, t.lastPolledAt ?? at, at);
      t.lastPolledAt = Math.max(t.lastPolledAt ?? 0, at);
      // Changes found: the rates are learned again at once, so the next plan sees them.
      if (written > 0) org.learnedAt = 0;
    }
  }

  private async stateOf(job: JobSpec, now: number, snap?: OrgSnapshot): Promise<OrgState> {
    let org = this.orgs.get(job.id);
    const stale = !org || now - org.learnedAt >= RELEARN_MS || job.trees.some((t) => !org!.trees.has(t));
    if (!org || stale) org = await this.learn(job, now, org, snap);
    return org;
  }

  /** Reads each tree's costs, change times and last success from the warehouse; keeps what the runs found. */
  private async learn(job: JobSpec, now: number, before: OrgState | undefined, given?: OrgSnapshot): Promise<OrgState> {
    const { config, warehouse } = this.ctx;
    const connection = config.connections.find((c) => c.name === job.connection)!;
    const snap = given ?? (await loadSnapshot(warehouse, job.connection, job.organizationId!, { rowsFor: job.trees, config }));
    const trees = new Map<string, TreeState>();
    for (const tree of job.trees) {
      const spec = findStream(tree);
      if (!spec) continue;
      const prior = before?.trees.get(tree);
      const state = snap.streams.get(tree)?.state;
      const success = state?.last_success_at ? Date.parse(state.last_success_at) : null;
      const times = spec.cursor ? await changeTimes(warehouse, spec, job.organizationId!, now - CHANGE_WINDOW_DAYS * DAY_MS) : null;
      trees.set(tree, {
        cost: this.costOf(spec, job, snap),
        queued: queuedOf(tree, job, snap),
        targetMinutes: targetOf(config, connection, spec),
        rates: times ? changeRates(times, now, { windowDays: CHANGE_WINDOW_DAYS }) : null,
        lastPolledAt: Math.max(prior?.lastPolledAt ?? 0, success ?? 0) || null,
        recent: prior?.recent ?? FIRST_POLLS,
      });
    }
    const org: OrgState = { job, trees, learnedAt: now, plan: before?.plan ?? null, dayOf: before?.dayOf ?? null };
    this.orgs.set(job.id, org);
    return org;
  }

  private costOf(spec: StreamSpec, job: JobSpec, snap: OrgSnapshot): TreeCost {
    const { config, catalog } = this.ctx;
    const names = new Set(treeStreams(qualifiedName(spec), job));
    const streams = catalog.filter((s) => names.has(qualifiedName(s)));
    const known = (s: StreamSpec): number | null => {
      const st = snap.streams.get(qualifiedName(s));
      return st?.state?.last_finished_at ? (st.rows ?? null) : null;
    };
    return treeCost(
      spec,
      streams,
      { rows: known, state: (s) => snap.streams.get(qualifiedName(s)) },
      {
        perPage: config.sync.per_page,
        catalog,
        detailEnabled: (s) => detailIsEnabled({ config }, s),
      },
    );
  }
}
