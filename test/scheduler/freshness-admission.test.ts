import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { FakeClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { JobRunner } from '../../src/scheduler/job-runner.js';
import type { JobSpec } from '../../src/scheduler/timing/jobs.js';
import { DIALECTS, migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { knownOrganization } from '../helpers/organizations.js';

const MIN = 60_000;
const NOON = Date.UTC(2026, 0, 1, 12, 0);

describe.each(DIALECTS)('the freshness job’s admission (%s)', (dialect) => {
  let tw: TestWarehouse | undefined;
  let warehouse: Warehouse | undefined;
  let runner: JobRunner | undefined;
  afterEach(async () => {
    await runner?.stop();
    await warehouse?.close();
    await tw?.drop();
    runner = undefined;
    warehouse = undefined;
  });

  /** A runner with freshness on (the defaults) that knows one inventory organization, `o1`, at noon UTC. */
  async function started(): Promise<{ r: JobRunner; fresh: JobSpec; clock: FakeClock }> {
    tw = await migratedWarehouse(dialect);
    warehouse = await tw.open();
    const config = parseConfig(
      {
        connections: [
          {
            name: 'c',
            client_id: 'client-id-1000.ABCDEF',
            client_secret: 'client-secret-9f8e7d6c5b4a',
            refresh_token: '1000.refresh-token-5a5a5a5a',
            accounts_url: 'https://accounts.example.test',
            families: ['inventory'],
            limits: { per_day: 1000 },
          },
        ],
      },
      { env: {} },
    );
    const clock = new FakeClock(NOON);
    const secrets = new SecretRegistry();
    runner = new JobRunner({ config, warehouse, clock, logger: createLogger({ level: 'silent', secrets }), secrets });
    await runner.start();
    await knownOrganization(warehouse, { connection: 'c', family: 'inventory', organizationId: 'o1', at: NOON });
    await runner.reloadOrganizations();
    const fresh = runner.jobs().find((j) => j.fresh)!;
    return { r: runner, fresh, clock };
  }

  it('runs the streams that are due, and says when none is; a poll that found changes keeps its stream at the target', async () => {
    const { r, fresh, clock } = await started();
    expect(fresh.id).toBe('c/o1/fresh');
    // Never polled: every stream is due.
    const first = await r.admit(fresh, clock.now());
    expect(first.run).toBe(true);
    if (!first.run) return;
    expect(first.job.trees).toEqual(fresh.trees);
    expect(first.estimate).toBeGreaterThanOrEqual(fresh.trees.length);
    r.freshness.polled(fresh, new Map(fresh.trees.map((t) => [t, t === 'inventory.sales_orders' ? 3 : 0])), clock.now());
    // A minute later nothing is due; the scheduler is told when the first stream is.
    await clock.advance(MIN);
    expect(await r.admit(fresh, clock.now())).toEqual({ run: false, reason: 'busy: no stream is due yet' });
    const due = r.freshness.dueAt(fresh, clock.now());
    expect(due).toBeGreaterThan(clock.now());
    expect(due).toBeLessThanOrEqual(NOON + 30 * MIN);
    // The orders found changes: at most their 30-minute target; the settings list waits about a day.
    await clock.advanceTo(NOON + 30 * MIN + MIN);
    const next = await r.admit(fresh, clock.now());
    expect(next.run && next.job.trees).toContain('inventory.sales_orders');
    expect(next.run && next.job.trees).not.toContain('inventory.currencies');
  });

  it('a day the other integrations spent from stretches the quietest streams first and holds the rest for the reconcile', async () => {
    const { r, fresh, clock } = await started();
    await r.admit(fresh, clock.now());
    r.freshness.polled(fresh, new Map(fresh.trees.map((t) => [t, 0])), clock.now());
    await clock.advance(MIN);
    await r.admit(fresh, clock.now());
    const roomy = r.freshness.planOf(fresh)!;
    expect(roomy.short).toBe(false);
    // The server counts 990 of its 1,000 spent: 0 of svcsync's 900 left (A15).
    const limiter = (await r.limiterFor('c', 'o1'))!;
    limiter.observeServerQuota({ limit: 1000, remaining: 10 });
    await clock.advance(MIN);
    await r.admit(fresh, clock.now());
    const squeezed = r.freshness.planOf(fresh)!;
    expect(squeezed.short).toBe(true);
    expect(squeezed.streams.some((s) => s.state === 'budget')).toBe(true);
    const polls = (p: typeof roomy): number => p.streams.reduce((a, s) => a + s.polls, 0);
    expect(polls(squeezed)).toBeLessThan(polls(roomy));
    // The reconcile is held for by the freshness job's need at its base intervals, not by its spare polls.
    expect(r.freshness.demand(fresh)).toBeLessThanOrEqual(squeezed.demand);
  });
});
