import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { changeInstants, DAY, runWeek, StalenessLedger, type WeekOrganization } from '../../bench/week.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;

// A tiny organization: every stream a handful of records, so a simulated day takes seconds.
const tiny: WeekOrganization = {
  name: 'tiny',
  records: { 'inventory.sales_orders': 20, 'inventory.contacts': 10, 'billing.events': 40 },
  scale: 2,
  changes: { orders: 0, contacts: 0, events: 0 },
};

describe('the simulated week of the daemon (bench/week.ts)', () => {
  it("measures each change's lag to the warehouse on the daemon's own schedule", async () => {
    // The free plan's incremental schedule fires every two hours on the hour: a change at 09:05
    // is read at 10:00, one at 13:30 at 14:00, one at 16:59 at 18:00.
    const f = await runWeek({
      organization: tiny,
      days: 1,
      perPage: 200,
      plan: 'free',
      freshness: false,
      changesAt: [
        { kind: 'orders', offsetMs: 9 * HOUR + 5 * MINUTE },
        { kind: 'events', offsetMs: 13 * HOUR + 30 * MINUTE },
        { kind: 'contacts', offsetMs: 16 * HOUR + 59 * MINUTE },
      ],
    });
    const s = f.steady.staleness;
    expect(Object.keys(s).sort()).toEqual(['billing.events', 'inventory.contacts', 'inventory.sales_orders']);
    // A run takes real milliseconds to seconds on the sandbox's clock (its time scale is 1).
    const near = (got: number | null, minutes: number): void => {
      expect(got).not.toBeNull();
      expect(got!).toBeGreaterThanOrEqual(minutes - 0.1);
      expect(got!).toBeLessThan(minutes + 1);
    };
    near(s['inventory.sales_orders']!.p50Minutes, 55);
    near(s['billing.events']!.p95Minutes, 30);
    near(s['inventory.contacts']!.maxMinutes, 61);
    for (const x of Object.values(s)) expect(x).toMatchObject({ changes: 1, landed: 1, unlanded: 0 });
    // Twelve incremental fires, settings, reconcile and the projects' whole read, each a real sync.
    expect(f.steady.days).toHaveLength(1);
    expect(f.steady.busiestDay).toBe(f.steady.days[0]);
    expect(f.steady.busiestDay).toBeGreaterThan(12);
    expect(f.steady.classes.find((c) => c.jobClass === 'incremental')).toMatchObject({ runs: 12 });
    expect(f.steady.predictedDay).toBeGreaterThan(0);
    expect(f.firstSync.requests).toBeGreaterThan(0);
    expect(f.idsMatch).toBe(true);
  }, 120_000);

  it('with freshness on (the default), every change lands within its 30-minute target, within the budget', async () => {
    const f = await runWeek({
      organization: tiny,
      days: 1,
      perPage: 200,
      plan: 'free',
      changesAt: [
        { kind: 'orders', offsetMs: 9 * HOUR + 5 * MINUTE },
        { kind: 'events', offsetMs: 13 * HOUR + 30 * MINUTE },
        { kind: 'contacts', offsetMs: 16 * HOUR + 59 * MINUTE },
      ],
    });
    for (const x of Object.values(f.steady.staleness)) {
      expect(x).toMatchObject({ changes: 1, landed: 1, unlanded: 0 });
      expect(x.maxMinutes!).toBeLessThanOrEqual(30);
    }
    expect(f.steady.busiestDay).toBeLessThanOrEqual(f.steady.usable);
    expect(f.steady.classes.find((c) => c.jobClass === 'incremental')!.schedule).toBe('* * * * *');
    expect(f.idsMatch).toBe(true);
  }, 120_000);

  it('counts each change of a record made twice before a run, both landing with that run', () => {
    const ledger = new StalenessLedger(['inventory.sales_orders']);
    ledger.changed('inventory.sales_orders', '7', 0);
    ledger.changed('inventory.sales_orders', '7', 30 * MINUTE);
    ledger.changed('inventory.sales_orders', '8', 100 * MINUTE);
    ledger.landed('inventory.sales_orders', '7', 60 * MINUTE);
    // A row written before its change does not hold it.
    ledger.landed('inventory.sales_orders', '8', 90 * MINUTE);
    expect(ledger.waiting()).toBe(1);
    // The change still waiting counts with its lag so far (a lower bound): 100 minutes at 200.
    expect(ledger.figures(200 * MINUTE)['inventory.sales_orders']).toEqual({
      changes: 3,
      landed: 2,
      unlanded: 1,
      p50Minutes: 60,
      p95Minutes: 100,
      maxMinutes: 100,
      p95ByDay: [100],
    });
  });

  it('tells the p95 of each day apart, a change still waiting counted on its own day', () => {
    const ledger = new StalenessLedger(['inventory.sales_orders'], 0);
    ledger.changed('inventory.sales_orders', '1', 60 * MINUTE);
    ledger.landed('inventory.sales_orders', '1', 600 * MINUTE);
    ledger.changed('inventory.sales_orders', '2', DAY + 60 * MINUTE);
    ledger.landed('inventory.sales_orders', '2', DAY + 70 * MINUTE);
    ledger.changed('inventory.sales_orders', '3', 3 * DAY);
    expect(ledger.figures(3 * DAY + 20 * MINUTE)['inventory.sales_orders']!.p95ByDay).toEqual([540, 10, null, 20]);
  });

  it('places the changes in the working hours, the same for the same seed', () => {
    const start = Date.UTC(2026, 10, 21);
    const a = changeInstants({ orders: 25, contacts: 10, events: 100 }, start, 2, 7, [9, 17]);
    expect(a).toHaveLength(270);
    expect(a).toEqual(changeInstants({ orders: 25, contacts: 10, events: 100 }, start, 2, 7, [9, 17]));
    expect(a).not.toEqual(changeInstants({ orders: 25, contacts: 10, events: 100 }, start, 2, 8, [9, 17]));
    for (const c of a) {
      const hour = ((c.at - start) % (24 * HOUR)) / HOUR;
      expect(hour).toBeGreaterThanOrEqual(9);
      expect(hour).toBeLessThan(17);
    }
    expect(a.filter((c) => c.at >= start + 24 * HOUR)).toHaveLength(135);
  });

  it('npm run bench -- --only requests --json prints one JSON object with the figures of each organization', () => {
    const driver = join(process.cwd(), 'dist', 'bench', 'run.js');
    const r = spawnSync(
      process.execPath,
      [driver, '--only', 'requests', '--quick', '--requests-orgs', 'small,reference', '--requests-days', '1', '--json'],
      { encoding: 'utf8', timeout: 110_000 },
    );
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    const n: unknown = expect.any(Number);
    const shape = {
      firstSync: { requests: n },
      steady: {
        busiestDay: n,
        meanDay: n,
        predictedDay: n,
        staleness: {
          'inventory.sales_orders': { p50Minutes: n, p95Minutes: n },
          'inventory.contacts': { p50Minutes: n, p95Minutes: n },
          'billing.events': { p50Minutes: n, p95Minutes: n },
        },
      },
    };
    expect(out).toMatchObject({ name: 'reference', ...shape });
    expect(out['organizations']).toMatchObject({ reference: shape, small: shape });
    // The tables went to stderr.
    expect(r.stderr).toContain('Freshness within the quota');
  }, 120_000);
});
