import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { TreeCost } from '../../src/scheduler/planning/estimate.js';
import { fitFreshness, renderFreshnessFit } from '../../src/scheduler/planning/freshness-fit.js';
import { planOrganization, type PlanOrganization } from '../../src/scheduler/planning/plan.js';
import type { ChangeRates } from '../../src/scheduler/timing/change-model.js';

const NOW = Date.UTC(2026, 10, 2, 6);
const config = parseConfig(
  {
    connections: [
      { name: 'c', client_id: 'x', client_secret: 'y', refresh_token: 'z', families: ['inventory'], streams: ['inventory.sales_orders'] },
    ],
  },
  { env: {} },
);

/** `perDay` changes spread over 09:00–17:00 UTC. */
function working(perDay: number): ChangeRates {
  const perHour = Array.from({ length: 24 }, (_, h) => (h >= 9 && h < 17 ? perDay / 8 : 0));
  return { perHour, perDay };
}

function org(changesPerDay: number): PlanOrganization {
  const cost: TreeCost = {
    tree: 'inventory.sales_orders',
    streams: ['inventory.sales_orders'],
    kind: 'transaction',
    wholeRead: false,
    appendOnly: false,
    run: 1,
    poll: 1,
    perChange: 1,
    reconcile: 5,
    reconcileChildren: 0,
    whole: 1000,
    assumed: false,
  };
  return {
    connection: 'c',
    organizationId: 'o1',
    families: ['inventory'],
    reference: false,
    budget: 900,
    zone: 'UTC',
    serverReset: null,
    costs: [cost],
    rates: new Map([['inventory.sales_orders', working(changesPerDay)]]),
  };
}

describe('plan --fit for freshness targets', () => {
  it('proposes the freshest target the day holds and the plan keeps, with its predicted staleness', () => {
    const fit = fitFreshness(config, org(250), NOW);
    expect(fit.targetMinutes).not.toBeNull();
    const orders = fit.plan.freshness.find((s) => s.tree === 'inventory.sales_orders')!;
    expect(orders.p95Minutes!).toBeLessThanOrEqual(fit.targetMinutes!);
    expect(fit.plan.need).toBeLessThanOrEqual(900);
    // The plan under the proposed target fits; the next freshest candidate does not keep its own target or does not fit.
    expect(planOrganization(config, org(250), NOW).fits).toBe(true);
    const text = renderFreshnessFit([fit]);
    expect(text).toContain(`c / o1: transaction streams every ${fit.targetMinutes} min at the most fits`);
    expect(text).toContain(`    transaction: ${fit.targetMinutes}m`);
  });

  it('says plainly when the changes alone exceed the budget, and which plan would hold them', () => {
    const fit = fitFreshness(config, org(5000), NOW);
    expect(fit.targetMinutes).toBeNull();
    expect(fit.floor).toBeGreaterThan(900);
    expect(fit.enoughPlan).not.toBeNull();
    expect(fit.enoughPlan).not.toBe('free');
    const text = renderFreshnessFit([fit]);
    expect(text).toMatch(/c \/ o1: no target fits\. Its changes alone need at least \d+ requests a day/);
    expect(text).toContain('The daemon never spends more than the budget');
    expect(text).not.toContain('transaction: ');
  });
});
