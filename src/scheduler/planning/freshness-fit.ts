import { dailyBudget, planLimits, PLANS, type Plan } from '../../config/plans.js';
import type { Config } from '../../config/schema.js';
import { planOrganization, type OrganizationPlan, type PlanOrganization } from './plan.js';

/**
 * `svcsync plan --fit` for the freshness job: the freshest uniform target for the transaction
 * streams that each organization's day holds, and, where none does, what the changes alone cost
 * and which plan's quota would hold them.
 */

/** Targets tried, freshest first (minutes). */
export const FIT_TARGETS: readonly number[] = [5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 480, 720, 1440];

export interface FreshnessFit {
  connection: string;
  organizationId: string;
  budget: number;
  /** The freshest target that fits, in minutes; null when even the longest does not. */
  targetMinutes: number | null;
  /** The plan at that target (or at the longest, when none fits). */
  plan: OrganizationPlan;
  /** What the other jobs and the expected changes' own reads need a day, however rarely the lists are polled. */
  floor: number;
  /** The cheapest plan whose usable quota holds that floor with the safety margin (null: none). */
  enoughPlan: Plan | null;
}

/** The configuration with every transaction stream's target set to `minutes` (per-stream and per-family entries dropped). */
function uniform(config: Config, minutes: number): Config {
  const daemon = {
    ...config.daemon,
    freshness: { ...config.daemon.freshness, transaction: minutes, families: undefined, streams: undefined },
  };
  const connections = config.connections.map((c) => ({
    ...c,
    freshness: c.freshness ? { ...c.freshness, transaction: undefined, families: undefined, streams: undefined } : undefined,
  }));
  return { ...config, daemon, connections };
}

/** Whether a plan keeps the target: it fits, and every stream that changes is predicted no staler than the target at p95. */
function keeps(plan: OrganizationPlan, target: number): boolean {
  if (!plan.fits) return false;
  return plan.freshness.every((s) => s.changesPerDay === null || s.changesPerDay < 1 || s.p95Minutes === null || s.p95Minutes <= target);
}

/** The freshest target that fits one organization and that the plan keeps (pure). */
export function fitFreshness(config: Config, org: PlanOrganization, now: number): FreshnessFit {
  let fitted: { target: number; plan: OrganizationPlan } | null = null;
  let longest: OrganizationPlan | null = null;
  for (const target of FIT_TARGETS) {
    const plan = planOrganization(uniform(config, target), org, now);
    longest = plan;
    if (keeps(plan, target)) {
      fitted = { target, plan };
      break;
    }
  }
  const plan = fitted?.plan ?? longest!;
  const polls = plan.freshness.reduce((a, s) => a + s.polls, 0);
  const floor = Math.max(0, plan.need - polls);
  const safety = config.daemon.budget_safety;
  const enoughPlan = PLANS.find((p) => dailyBudget(planLimits(p)) >= floor * safety) ?? null;
  return {
    connection: org.connection,
    organizationId: org.organizationId,
    budget: org.budget,
    targetMinutes: fitted?.target ?? null,
    plan,
    floor,
    enoughPlan,
  };
}

const p95 = (fit: FreshnessFit): string =>
  fit.plan.freshness
    .filter((s) => s.p95Minutes !== null && s.changesPerDay !== null && s.changesPerDay >= 1)
    .map((s) => `${s.tree} ${Math.round(s.p95Minutes!)} min`)
    .join(', ');

/** The fits in words, with the configuration that applies them. */
export function renderFreshnessFit(fits: readonly FreshnessFit[]): string {
  const lines = ['Freshness targets that fit each organization’s daily budget (daemon.freshness; docs/daemon.md, "Freshness")', ''];
  for (const f of fits) {
    const who = `${f.connection} / ${f.organizationId}`;
    if (f.targetMinutes !== null) {
      const of = f.plan.unlimited ? 'the daily quota is unlimited' : `of ${f.budget}`;
      lines.push(`${who}: transaction streams every ${f.targetMinutes} min at the most fits (${f.plan.total} requests a day, ${of}).`);
      const stale = p95(f);
      if (stale) lines.push(`  predicted staleness p95: ${stale}`);
      continue;
    }
    lines.push(
      `${who}: no target fits. Its changes alone need at least ${f.floor} requests a day, as far as the warehouse has seen them ` +
        `(each changed record's own reads, the reconcile, the trees read whole; a day it cannot read whole hides the rest), ` +
        `and the budget is ${f.budget}: however rarely the lists are polled, ` +
        'the changes of a day cannot all be read that day. The daemon never spends more than the budget: it reads the ' +
        'busiest streams first and the rest wait, later each day.',
    );
    const fewer = 'sync fewer streams (streams:), or turn single-record reads off where you can.';
    const quota = f.enoughPlan ? `the ${f.enoughPlan} plan's ${dailyBudget(planLimits(f.enoughPlan))} a day, or more` : '';
    lines.push(
      f.enoughPlan
        ? `  A plan whose quota holds that many with room (${quota}) would; or ${fewer}`
        : `  No plan’s quota holds them: ${fewer}`,
    );
  }
  const fitting = fits.filter((f) => f.targetMinutes !== null);
  if (fitting.length > 0) {
    const target = Math.max(...fitting.map((f) => f.targetMinutes!));
    lines.push(
      '',
      '# For svcsync daemon (svcsync.yaml): a target every organization above holds',
      'daemon:',
      '  freshness:',
      `    transaction: ${target}m`,
    );
  }
  return lines.join('\n') + '\n';
}
