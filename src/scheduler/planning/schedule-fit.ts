import type { Config } from '../../config/schema.js';
import { unlimitedDaily, type Plan } from '../../config/plans.js';
import { childrenCycleDays } from '../../config/cycles.js';
import { countFires } from '../timing/cron.js';
import type { TreeCost } from './estimate.js';
import { quotaDaysAhead, reconcileEstimate, type PlanOrganization } from './plan.js';

/**
 * `svcsync plan --fit`: per connection, schedules for each tree (a top-level stream and its
 * child streams) under which every organization's busiest quota day fits its budget. Pure: the
 * trees' costs come in (`loadPlanOrganizations`), schedules and their figures go out, rendered
 * (schedule-fit-render.ts) as the `schedules:` block the daemon reads and as cron lines of
 * `svcsync sync --stream ...`.
 *
 * Start from the most frequent schedule of each kind (incremental lists every 5 minutes,
 * settings hourly, every reconcile nightly), then, while the busiest organization's busiest day
 * needs more than its target, slow down whatever spends most a day in it: the lists read whole
 * with a request per record (projects and their tasks) go first and furthest, cheap lists that
 * cost a page a run stay frequent, and reconciles move from nightly to once a week, each tree
 * on a weekday of its own, when a nightly one costs more than the incremental runs it competes
 * with. Trees of one kind that cost the same move together, so they share a schedule.
 */

/** Minutes between runs, most frequent first. */
export const INCREMENTAL_PERIODS: readonly number[] = [5, 10, 15, 30, 60, 120, 180, 240, 360, 480, 720, 1440];
export const SETTINGS_PERIODS: readonly number[] = [60, 120, 180, 240, 360, 480, 720, 1440];

/** Minute of the hour each kind starts at, so cron processes seldom start together. */
const MINUTE = { incremental: 0, whole: 10, settings: 5, reconcile: 40 } as const;
const RECONCILE_HOUR = 2;
const SCHEDULE_ZONE = 'UTC';

export type FitKind = 'incremental' | 'whole' | 'settings';

/** One tree's schedule in a fit. */
export interface TreeSchedule {
  tree: string;
  streams: string[];
  kind: FitKind;
  /** Minutes between incremental runs. */
  every: number;
  incremental: string;
  /** Its reconcile, or null when it has no change field (a full read finds deletions every run). */
  reconcile: string | null;
}

export interface FitOrganization {
  organizationId: string;
  reference: boolean;
  assumed: boolean;
  budget: number;
  target: number;
  /** The busiest quota day under the fitted schedules, and its requests. */
  day: string;
  total: number;
  fits: boolean;
  /** The daily quota is unlimited in practice (`UNLIMITED_PER_DAY`). */
  unlimited: boolean;
}

export interface ConnectionFit {
  connection: string;
  plan: Plan;
  /** `limits.per_day` when the configuration sets it (it replaces the plan's quota), else null. */
  limitsPerDay: number | null;
  /** The daily quota is unlimited in practice (`UNLIMITED_PER_DAY`). */
  unlimited: boolean;
  trees: TreeSchedule[];
  organizations: FitOrganization[];
  /** Every organization's busiest day fits its budget. */
  fits: boolean;
  /** The `schedules:` block for the connection (what the daemon reads). */
  schedules: ScheduleBlock;
}

export interface ScheduleBlock {
  time_zone: string;
  incremental?: string;
  whole_read?: string;
  settings?: string;
  reconcile?: string;
  streams?: Record<string, { incremental?: string; reconcile?: string }>;
}

/** Requests an organization may plan for: its budget less room for changes (`daemon.budget_safety`). */
export function fitTarget(budget: number, safety: number): number {
  return Math.floor(budget / safety);
}

function cronEvery(period: number, minute: number): string {
  if (period < 60) return `*/${period} * * * *`;
  if (period === 60) return `${minute} * * * *`;
  if (period < 1440) return `${minute} */${period / 60} * * *`;
  return `${minute} ${RECONCILE_HOUR - 1} * * *`;
}

interface Item {
  tree: string;
  streams: string[];
  kind: FitKind;
  rung: number;
  periods: readonly number[];
  /** Reconcile: nightly, or weekly on `weekday` (0 Sunday). */
  weekly: boolean;
  weekday: number;
  reconcilable: boolean;
}

function kindOf(c: TreeCost): FitKind {
  if (c.kind === 'settings') return 'settings';
  return c.wholeRead ? 'whole' : 'incremental';
}

function incrementalCron(item: Item): string {
  return cronEvery(item.periods[item.rung]!, MINUTE[item.kind]);
}

function reconcileCron(item: Item): string {
  return `${MINUTE.reconcile} ${RECONCILE_HOUR} * * ${item.weekly ? String(item.weekday) : '*'}`;
}

/** The trees of the connection (the union over its organizations), in catalog order, each at its most frequent schedule. */
function itemsOf(orgs: readonly PlanOrganization[]): Item[] {
  const items: Item[] = [];
  for (const o of orgs)
    for (const c of o.costs)
      if (!items.some((i) => i.tree === c.tree)) {
        const kind = kindOf(c);
        items.push({
          tree: c.tree,
          streams: c.streams,
          kind,
          rung: 0,
          periods: kind === 'settings' ? SETTINGS_PERIODS : INCREMENTAL_PERIODS,
          weekly: false,
          weekday: 0,
          reconcilable: c.reconcile !== null && !c.appendOnly,
        });
      }
  return items;
}

/** What an item spends on an average day in an organization: its incremental runs, or its reconcile. */
interface Move {
  item: Item;
  what: 'incremental' | 'reconcile';
  spend: number;
  run: number;
}

/** Which kinds get their speed back first: the cheapest runs. */
const GIVE_BACK_ORDER = { incremental: 0, settings: 1, whole: 2 } as const;

/** The search for one connection's schedules: its trees, moved along their rungs until every organization's busiest day fits. */
class ScheduleSearch {
  readonly items: Item[];
  private readonly orgs: readonly PlanOrganization[];
  private readonly safety: number;
  /** The reconcile children's cycle, in days (`svcsync plan` averages a reconcile's day over it). */
  private readonly everyDays: number;
  private readonly days: Array<ReturnType<typeof quotaDaysAhead>>;
  private readonly fireCache = new Map<string, number>();

  constructor(orgs: readonly PlanOrganization[], safety: number, everyDays: number, now: number) {
    this.orgs = orgs;
    this.safety = safety;
    this.everyDays = everyDays;
    this.items = itemsOf(orgs);
    this.days = orgs.map((o) => quotaDaysAhead(now, o.zone, o.serverReset));
  }

  /** While the worst organization's busiest day needs more than its target, slows down whatever spends most a day in it. */
  slowDown(): void {
    for (let step = 0; step < 1000; step++) {
      const o = this.worstOverTarget();
      if (!o) break;
      const [move] = this.moves(o);
      if (!move) break;
      if (move.what === 'reconcile') {
        move.item.weekly = true;
        this.placeWeekly();
        continue;
      }
      // Trees of the same kind, schedule and cost move together: they keep sharing a schedule.
      const run = this.costOf(o, move.item.tree)!.run;
      for (const i of this.items)
        if (i.kind === move.item.kind && i.rung === move.item.rung && this.costOf(o, i.tree)?.run === run && i.rung < i.periods.length - 1)
          i.rung++;
    }
  }

  /**
   * Slowing what spent most may have freed more than needed: gives it back where it still fits,
   * cheapest runs first (lists before settings before whole reads), then nightly reconciles.
   */
  giveBack(): void {
    for (let changed = this.fitsAll(); changed;) changed = this.speedUpOne() || this.nightlyAgainOne();
  }

  /** The organization's busiest quota day under the current schedules, and its requests. */
  busiest(index: number): { day: string; total: number } {
    const o = this.orgs[index]!;
    let best = { day: '', total: -1 };
    for (const d of this.days[index]!) {
      let total = 0;
      for (const i of this.items) {
        const c = this.costOf(o, i.tree);
        if (!c) continue;
        total += this.fires(incrementalCron(i), d.from, d.resetsAt) * c.run;
        const reconcile = this.reconcileOf(c);
        if (i.reconcilable && reconcile !== null) total += this.fires(reconcileCron(i), d.from, d.resetsAt) * reconcile;
      }
      if (total > best.total) best = { day: d.key, total };
    }
    return best;
  }

  target(o: PlanOrganization): number {
    return fitTarget(o.budget, this.safety);
  }

  /** The organization whose busiest day is furthest over its target; undefined when every one fits. */
  private worstOverTarget(): PlanOrganization | undefined {
    let worst = -1;
    let ratio = 0;
    this.orgs.forEach((o, k) => {
      const r = this.busiest(k).total / Math.max(1, this.target(o));
      if (r > ratio) [worst, ratio] = [k, r];
    });
    return worst < 0 || ratio <= 1 ? undefined : this.orgs[worst];
  }

  /** What the organization's day could save, biggest spender first. */
  private moves(o: PlanOrganization): Move[] {
    const out: Move[] = [];
    for (const i of this.items) {
      const c = this.costOf(o, i.tree);
      if (!c) continue;
      if (i.rung < i.periods.length - 1) out.push({ item: i, what: 'incremental', spend: (c.run * 1440) / i.periods[i.rung]!, run: c.run });
      const reconcile = this.reconcileOf(c);
      if (i.reconcilable && !i.weekly && reconcile !== null) out.push({ item: i, what: 'reconcile', spend: reconcile, run: reconcile });
    }
    return out.sort((a, b) => b.spend - a.spend || b.run - a.run || a.item.tree.localeCompare(b.item.tree));
  }

  /** Gives one group of trees (same kind, rung and heaviest run) its next faster rung, if everything still fits. */
  private speedUpOne(): boolean {
    const faster = this.items
      .filter((i) => i.rung > 0)
      .sort(
        (a, b) =>
          GIVE_BACK_ORDER[a.kind] - GIVE_BACK_ORDER[b.kind] || this.heaviestRun(a) - this.heaviestRun(b) || a.tree.localeCompare(b.tree),
      );
    for (const i of faster) {
      const group = this.items.filter((x) => x.kind === i.kind && x.rung === i.rung && this.heaviestRun(x) === this.heaviestRun(i));
      for (const x of group) x.rung--;
      if (this.fitsAll()) return true;
      for (const x of group) x.rung++;
    }
    return false;
  }

  /** Makes one weekly reconcile nightly again, if everything still fits. */
  private nightlyAgainOne(): boolean {
    for (const i of this.items.filter((x) => x.weekly)) {
      i.weekly = false;
      this.placeWeekly();
      if (this.fitsAll()) return true;
      i.weekly = true;
      this.placeWeekly();
    }
    return false;
  }

  /** Spreads the weekly reconciles over the weekdays, heaviest first onto the lightest day. */
  private placeWeekly(): void {
    const load = [0, 0, 0, 0, 0, 0, 0];
    const heaviest = (i: Item): number =>
      Math.max(
        0,
        ...this.orgs.map((o) => {
          const c = this.costOf(o, i.tree);
          return c ? (this.reconcileOf(c) ?? 0) : 0;
        }),
      );
    const weekly = this.items.filter((i) => i.weekly).sort((a, b) => heaviest(b) - heaviest(a) || a.tree.localeCompare(b.tree));
    for (const i of weekly) {
      const day = load.indexOf(Math.min(...load));
      i.weekday = day;
      load[day]! += heaviest(i);
    }
  }

  private fitsAll(): boolean {
    return this.orgs.every((o, k) => this.busiest(k).total <= this.target(o));
  }

  private heaviestRun(i: Item): number {
    return Math.max(0, ...this.orgs.map((o) => this.costOf(o, i.tree)?.run ?? 0));
  }

  private costOf(o: PlanOrganization, tree: string): TreeCost | undefined {
    return o.costs.find((c) => c.tree === tree);
  }

  /** A reconcile's day: its list pages and its children cycle averaged, as `svcsync plan` counts it. */
  private reconcileOf(c: TreeCost): number | null {
    return reconcileEstimate(c, this.everyDays);
  }

  private fires(expression: string, from: number, to: number): number {
    const key = `${expression}|${from}|${to}`;
    let n = this.fireCache.get(key);
    if (n === undefined) this.fireCache.set(key, (n = countFires(expression, SCHEDULE_ZONE, from - 1, to - 1)));
    return n;
  }
}

/** Fits one connection's schedules to its organizations (pure; `now` picks the quota days looked at). */
export function fitConnection(config: Config, connection: string, orgs: readonly PlanOrganization[], now: number): ConnectionFit {
  const conn = config.connections.find((c) => c.name === connection)!;
  const search = new ScheduleSearch(orgs, config.daemon.budget_safety, childrenCycleDays(config, conn.plan), now);
  search.slowDown();
  search.giveBack();
  const trees: TreeSchedule[] = search.items.map((i) => ({
    tree: i.tree,
    streams: i.streams,
    kind: i.kind,
    every: i.periods[i.rung]!,
    incremental: incrementalCron(i),
    reconcile: i.reconcilable ? reconcileCron(i) : null,
  }));
  const organizations: FitOrganization[] = orgs.map((o, k) => {
    const b = search.busiest(k);
    const target = search.target(o);
    return {
      organizationId: o.organizationId,
      reference: o.reference,
      assumed: o.costs.some((c) => c.assumed),
      budget: o.budget,
      target,
      day: b.day,
      total: b.total,
      fits: b.total <= target,
      unlimited: o.unlimited ?? false,
    };
  });
  const limitsPerDay = conn.limits?.per_day ?? null;
  return {
    connection,
    plan: conn.plan,
    limitsPerDay,
    unlimited: limitsPerDay !== null && unlimitedDaily({ per_day: limitsPerDay }),
    trees,
    organizations,
    fits: organizations.every((o) => o.fits),
    schedules: scheduleBlock(trees),
  };
}

/** The most common value (ties: the first seen). */
function mostCommon(values: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: string | undefined;
  for (const [v, n] of counts) if (best === undefined || n > counts.get(best)!) best = v;
  return best;
}

/** The connection's `schedules:` block: a key per kind, and the trees that differ from it under `streams`. */
export function scheduleBlock(trees: readonly TreeSchedule[]): ScheduleBlock {
  const block: ScheduleBlock = { time_zone: SCHEDULE_ZONE };
  const keyOf = { incremental: 'incremental', whole: 'whole_read', settings: 'settings' } as const;
  const common = new Map<FitKind, string | undefined>();
  for (const kind of ['incremental', 'whole', 'settings'] as const) {
    const value = mostCommon(trees.filter((t) => t.kind === kind).map((t) => t.incremental));
    common.set(kind, value);
    if (value !== undefined) block[keyOf[kind]] = value;
  }
  const reconcile = mostCommon(trees.flatMap((t) => (t.reconcile ? [t.reconcile] : [])));
  if (reconcile !== undefined) block.reconcile = reconcile;
  const streams: NonNullable<ScheduleBlock['streams']> = {};
  for (const t of trees) {
    const own: { incremental?: string; reconcile?: string } = {};
    if (t.incremental !== common.get(t.kind)) own.incremental = t.incremental;
    if (t.reconcile !== null && t.reconcile !== reconcile) own.reconcile = t.reconcile;
    if (Object.keys(own).length) streams[t.tree] = own;
  }
  if (Object.keys(streams).length) block.streams = streams;
  return block;
}
