import { findStream } from '../../catalog/index.js';
import { qualifiedName, type StreamSpec } from '../../catalog/types.js';
import { freshnessTarget } from '../../config/freshness.js';
import type { Config, ConnectionConfig } from '../../config/schema.js';
import { changeTimes } from '../../loaders/change-times.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { changeRates, DAY_MS, type ChangeRates } from '../timing/change-model.js';
import { planFreshness, type FreshPlan, type FreshSettings, type FreshState, type FreshStream } from '../timing/freshness.js';
import type { JobSpec, KnownOrganization } from '../timing/jobs.js';
import type { TreeCost } from './estimate.js';

/** How far back the change model looks (days). */
export const CHANGE_WINDOW_DAYS = 14;

/** One kept-fresh stream on a planned quota day. */
export interface FreshStreamPlan {
  tree: string;
  targetMinutes: number;
  state: FreshState;
  /** Changes a day the model expects (null: no change field to learn from). */
  changesPerDay: number | null;
  polls: number;
  requests: number;
  /** Predicted lag from a change to its read (null: not expected to change). */
  p50Minutes: number | null;
  p95Minutes: number | null;
  /** What the day would cost with this stream's target halved and doubled. */
  tighter: number;
  looser: number;
}

/** The freshness settings (`daemon.freshness`, `daemon.budget_safety`). */
export function freshnessSettings(config: Config): FreshSettings {
  const f = config.daemon.freshness;
  const minutes = (v: number | 'off', fallback: number): number => (typeof v === 'number' ? v : fallback);
  return {
    minMinutes: minutes(f.min_interval, 5),
    quietMinutes: minutes(f.quiet, 1440),
    maxMinutes: 1440,
    safety: config.daemon.budget_safety,
  };
}

/** A kept-fresh tree's target in minutes (its `freshness:` entry, or its kind's default). */
export function targetOf(config: Config, connection: ConnectionConfig, spec: StreamSpec): number {
  const t = freshnessTarget(config.daemon.freshness, connection.freshness, spec);
  return typeof t === 'number' ? t : 1440;
}

/** Each top-level stream's change rates from its records' change times in the warehouse (streams with a change field). */
export async function loadChangeRates(
  warehouse: Warehouse,
  org: KnownOrganization,
  tops: readonly StreamSpec[],
  now: number,
): Promise<Map<string, ChangeRates>> {
  const out = new Map<string, ChangeRates>();
  for (const s of tops) {
    if (!s.cursor || !org.families.includes(s.family)) continue;
    const times = await changeTimes(warehouse, s, org.organizationId, now - CHANGE_WINDOW_DAYS * DAY_MS);
    out.set(qualifiedName(s), changeRates(times, now, { windowDays: CHANGE_WINDOW_DAYS }));
  }
  return out;
}

interface FreshOrg {
  connection: string;
  budget: number;
  costs: readonly TreeCost[];
  rates?: ReadonlyMap<string, ChangeRates>;
}

/** The freshness job's streams as the plan sees them: polled at the day's start, rates as learned. */
export function freshStreams(
  config: Config,
  org: FreshOrg,
  job: Pick<JobSpec, 'trees'>,
  from: number,
  targets?: ReadonlyMap<string, number>,
): FreshStream[] {
  const connection = config.connections.find((c) => c.name === org.connection)!;
  const out: FreshStream[] = [];
  for (const tree of job.trees) {
    const cost = org.costs.find((c) => c.tree === tree);
    const spec = findStream(tree);
    if (!cost || !spec) continue;
    out.push({
      tree,
      targetMinutes: targets?.get(tree) ?? targetOf(config, connection, spec),
      pollCost: cost.poll,
      perChange: cost.perChange,
      rates: org.rates?.get(tree) ?? null,
      lastPolledAt: from,
    });
  }
  return out;
}

/**
 * What the freshness job costs on one quota day, `reserved` being the other jobs' need that
 * day; per stream its polls, requests and predicted staleness, and what halving or doubling its
 * target would cost the day.
 */
export function freshJobPlan(
  config: Config,
  org: FreshOrg,
  job: Pick<JobSpec, 'trees'>,
  day: { from: number; reset: number; reserved: number },
): { streams: FreshStreamPlan[]; demand: number; baseDemand: number; polls: number; short: boolean } {
  const settings = freshnessSettings(config);
  const at = (targets?: ReadonlyMap<string, number>): FreshPlan =>
    planFreshness(
      freshStreams(config, org, job, day.from, targets),
      { now: day.from, reset: day.reset, remaining: org.budget, reserved: day.reserved },
      settings,
    );
  const inputs = freshStreams(config, org, job, day.from);
  const plan = at();
  const streams = plan.streams.map((v, i) => {
    const s = inputs[i]!;
    const other = (factor: number): number => at(new Map([[s.tree, Math.max(1, s.targetMinutes * factor)]])).demand;
    return {
      tree: v.tree,
      targetMinutes: s.targetMinutes,
      state: v.state,
      changesPerDay: s.rates ? Math.round(s.rates.perDay * 10) / 10 : null,
      polls: Math.round(v.polls),
      requests: v.requests,
      p50Minutes: v.staleness?.p50Minutes ?? null,
      p95Minutes: v.staleness?.p95Minutes ?? null,
      tighter: other(0.5),
      looser: other(2),
    };
  });
  return { streams, demand: plan.demand, baseDemand: plan.baseDemand, polls: streams.reduce((a, s) => a + s.polls, 0), short: plan.short };
}

function mins(n: number | null): string {
  if (n === null) return '–';
  return n >= 120 ? `${Math.round(n / 6) / 10} h` : `${Math.round(n)} min`;
}

const NOTES: Partial<Record<FreshState, string>> = { budget: ', DELAYED: the budget is short', quiet: ', quiet' };

/** The freshness lines of one organization's plan. */
export function freshLines(p: { freshness: readonly FreshStreamPlan[]; freshShort: boolean; budget: number }): string[] {
  if (p.freshness.length === 0) return [];
  const lines = [
    '  kept fresh (target → predicted staleness p50 / p95; polls and requests a day; the day with the target halved / doubled):',
  ];
  for (const s of p.freshness) {
    const rate = s.changesPerDay === null ? 'no change field' : `~${s.changesPerDay} changes a day`;
    const note = NOTES[s.state] ?? '';
    lines.push(
      `    ${s.tree.padEnd(28)} ${mins(s.targetMinutes).padStart(7)} → ${mins(s.p50Minutes)} / ${mins(s.p95Minutes)}; ` +
        `${s.polls} poll${s.polls === 1 ? '' : 's'}, ${s.requests} requests (${rate}${note}); ${s.tighter} / ${s.looser}`,
    );
  }
  if (p.freshShort)
    lines.push(
      `  WARNING: the kept-fresh streams' changes alone need more than the budget of ${p.budget} leaves: ` +
        'the quietest streams are polled less often than their targets (state budget); `svcsync plan --fit` says what fits.',
    );
  return lines;
}
