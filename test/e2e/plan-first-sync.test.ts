import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planNextDay } from '../../src/scheduler/planning/plan.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, type E2E } from '../helpers/e2e.js';

describe.each(DIALECTS)("svcsync plan's first-sync figure against a first sync, on %s", (dialect) => {
  let e: E2E;
  let made = 0;
  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 40, organizations: 1 });
    e.sandbox.resetRequestLog();
    expectExit(await e.sync(), 0);
    // What the organization's quota counted: organization-scoped requests (organization lists and tokens apart).
    made = Object.values(e.sandbox.requestLog().byOrganization).reduce((a, n) => a + n, 0);
  }, 120_000);
  afterAll(async () => e?.close());

  it('estimates from the synced list sizes within a tenth of the requests the first sync made', async () => {
    const [plan] = await planNextDay(e.config, e.warehouse, e.sandbox.now());
    expect(plan!.reference).toBe(false);
    expect(made).toBeGreaterThan(100);
    expect(Math.abs(plan!.firstSync.requests - made)).toBeLessThanOrEqual(made * 0.1);
    expect(plan!.firstSync.days).toBeCloseTo(plan!.firstSync.requests / plan!.budget, 5);
  });
});
