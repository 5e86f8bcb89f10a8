import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { main } from '../../src/cli/main.js';
import { parseConfig } from '../../src/config/load.js';
import { PLANS, type Plan } from '../../src/config/plans.js';
import type { Config } from '../../src/config/schema.js';
import { FakeClock } from '../../src/core/clock.js';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { Cron, countFires } from '../../src/scheduler/timing/cron.js';
import { Daemon } from '../../src/scheduler/daemon.js';
import { PLAN_SCHEDULES } from '../../src/scheduler/timing/jobs.js';
import { loadPlanOrganizations, planOrganization, type PlanOrganization } from '../../src/scheduler/planning/plan.js';
import { fitConnection, fitTarget, INCREMENTAL_PERIODS, type ConnectionFit } from '../../src/scheduler/planning/schedule-fit.js';
import { renderFitConfig, renderFitCron } from '../../src/scheduler/planning/schedule-fit-render.js';
import { wholeReadCycleDays } from '../../src/config/cycles.js';
import { stateDb } from '../../src/state/tables.js';

const NOW = Date.parse('2026-11-20T08:00:00Z');
const FAMILIES = ['books', 'inventory', 'invoice', 'billing'];

function config(plan: Plan, extra: Record<string, unknown> = {}): Config {
  return parseConfig(
    { connections: [{ name: 'acme', client_id: 'x', client_secret: 'y', refresh_token: 'z', plan, families: FAMILIES, ...extra }] },
    { env: {} },
  );
}

/** The fitted schedules as the daemon would read them: the YAML `plan --fit` prints, parsed into the connection. */
function applied(plan: Plan, fit: ConnectionFit): Config {
  const doc = parse(renderFitConfig([fit])) as { connections: Array<{ name: string; schedules: Record<string, unknown> }> };
  expect(doc.connections[0]!.name).toBe('acme');
  return config(plan, { schedules: doc.connections[0]!.schedules });
}

let dir: string;
let empty: Warehouse;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svcsync-fit-'));
  empty = await openWarehouse(`sqlite:${join(dir, 'empty.db')}`);
  await migrateToLatest(empty);
});
afterAll(async () => empty?.close());

async function referenceOrganization(cfg: Config, records: number): Promise<PlanOrganization> {
  const orgs = await loadPlanOrganizations(cfg, empty, { referenceRecords: records });
  expect(orgs).toHaveLength(1);
  expect(orgs[0]!.reference).toBe(true);
  return orgs[0]!;
}

describe('plan --fit: schedules that fit the budget', () => {
  const cases = PLANS.flatMap((plan) => [5, 50, 200, 1000].map((records) => ({ plan, records })));

  it.each(cases)(
    '$plan plan, lists of $records records: the planned requests of the fitted schedule fit the budget',
    async ({ plan, records }) => {
      const cfg = config(plan);
      const org = await referenceOrganization(cfg, records);
      const fit = fitConnection(cfg, 'acme', [org], NOW);
      const target = fitTarget(org.budget, cfg.daemon.budget_safety);
      const fitted = fit.organizations[0]!;
      // Whether it fits is the planner's verdict on the printed schedules, not only the fitter's.
      const planned = planOrganization(applied(plan, fit), org, NOW);
      expect(planned.total).toBe(fitted.total);
      expect(fitted.fits).toBe(planned.total <= target);
      // Up to 200 records a list every plan fits; beyond, a reconcile of every parent's child lists
      // (1000 contacts: 2000 requests) can outgrow a day's budget whatever the schedule.
      if (records <= 200) expect(fitted.fits).toBe(true);
      if (!fitted.fits) {
        expect(fit.trees.every((t) => t.kind === 'settings' || t.every === 1440)).toBe(true);
        return;
      }
      expect(planned.total).toBeLessThanOrEqual(planned.budget);
      const whole = fit.trees.find((t) => t.tree === 'invoice.projects')!;
      const lists = fit.trees.filter((t) => t.kind === 'incremental');
      // The tree read whole with a request per project runs no more often than any cheap list,
      // unless it reads a share of its projects a day (its later runs that day cost a page).
      if (wholeReadCycleDays(cfg, plan) === 0) for (const t of lists) expect(whole.every, t.tree).toBeGreaterThanOrEqual(t.every);
      else expect(renderFitCron([fit], { command: 'svcsync' }).filter((l) => l.includes('--cycle'))).toHaveLength(1);
      // As often as the budget allows: the cheap lists one step more often would not fit.
      const fastest = Math.min(...lists.map((t) => t.every));
      const faster = INCREMENTAL_PERIODS[INCREMENTAL_PERIODS.indexOf(fastest) - 1];
      if (faster !== undefined) {
        const quicker = { ...fit, schedules: { ...fit.schedules, incremental: `*/${faster} * * * *`.replace('*/60', '0') } };
        expect(planOrganization(applied(plan, quicker), org, NOW).total).toBeGreaterThan(target);
      }
    },
  );

  it('says when even the slowest schedules do not fit', async () => {
    const cfg = config('free');
    const fit = fitConnection(cfg, 'acme', [await referenceOrganization(cfg, 5000)], NOW);
    expect(fit.fits).toBe(false);
    expect(fit.trees.every((t) => t.kind === 'settings' || t.every === 1440)).toBe(true);
  });

  it('fits every organization of a connection: the largest sets the pace', async () => {
    const cfg = config('standard');
    const small = { ...(await referenceOrganization(cfg, 20)), organizationId: 'small' };
    const large = { ...(await referenceOrganization(cfg, 400)), organizationId: 'large' };
    const fit = fitConnection(cfg, 'acme', [small, large], NOW);
    expect(fit.fits).toBe(true);
    const alone = fitConnection(cfg, 'acme', [small], NOW);
    const every = (f: ConnectionFit, tree: string): number => f.trees.find((t) => t.tree === tree)!.every;
    expect(every(fit, 'invoice.projects')).toBeGreaterThan(every(alone, 'invoice.projects'));
    for (const o of [small, large]) expect(planOrganization(applied('standard', fit), o, NOW).total).toBeLessThanOrEqual(o.budget);
  });
});

describe("the daemon's default schedules", () => {
  it.each(PLANS)('fit the %s plan for an organization of 50 records a list', async (plan) => {
    const cfg = config(plan);
    const planned = planOrganization(cfg, await referenceOrganization(cfg, 50), NOW);
    expect(planned.jobs.map((j) => j.schedule)).toContain(`${PLAN_SCHEDULES[plan].whole_read} (UTC)`);
    expect(planned.total).toBeLessThanOrEqual(fitTarget(planned.budget, cfg.daemon.budget_safety));
  });
});

/** Runs the command line in this process: its exit code and stdout. */
async function run(args: string[]): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  try {
    const code = await main(['node', 'svcsync', '--log-level', 'silent', ...args]);
    return { code, stdout };
  } finally {
    spy.mockRestore();
  }
}

describe("the README's cron recipe", () => {
  it('is what `svcsync plan --fit` prints for the free plan and the reference organization', async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = /```cron\n(# svcsync plan --fit[^\n]*\n)([\s\S]*?)```/.exec(readme);
    expect(block, 'README.md has a ```cron block starting with # svcsync plan --fit').not.toBeNull();
    const command = /--cron-command "([^"]+)"/.exec(block![1]!)?.[1];
    expect(command).toBeDefined();
    const documented = block![2]!.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    const path = join(dir, 'readme.yaml');
    writeFileSync(
      path,
      [
        `warehouse: sqlite:${join(dir, 'readme.db')}`,
        'connections:',
        '  - name: acme',
        '    client_id: x',
        '    client_secret: y',
        '    refresh_token: z',
        '    plan: free',
        '',
      ].join('\n'),
    );
    const r = await run(['plan', '--fit', '--cron-command', command!, '--config', path]);
    expect(r.code).toBe(0);
    const printed = r.stdout.split('# For cron (crontab -e): the same schedules as single syncs\n')[1]!.split('\n').filter(Boolean);
    expect(printed.length).toBeGreaterThan(2);
    expect(documented).toEqual(printed);
    expect(r.stdout).toContain('planned for lists of 50 records each');
  });
});

describe("plan: a reconcile's two parts", () => {
  it("prints its list pages a run and its night's share of every parent's child lists, in its estimate", async () => {
    const path = join(dir, 'cycle.yaml');
    const lines = (days: number): string =>
      [
        `warehouse: sqlite:${join(dir, 'cycle.db')}`,
        `sync: { reconcile_children_every_days: ${days} }`,
        'connections:',
        '  - name: acme',
        '    client_id: x',
        '    client_secret: y',
        '    refresh_token: z',
        '    plan: free',
        '',
      ].join('\n');
    writeFileSync(path, lines(7));
    const weekly = await run(['plan', '--config', path]);
    expect(weekly.code).toBe(0);
    const part = /list pages ~(\d+) a run \+ a 7-day rolling re-read of every parent's child lists \(~(\d+) in all\): ~(\d+) a night/.exec(
      weekly.stdout,
    );
    expect(part, weekly.stdout).not.toBeNull();
    const [lists, children, perDay] = part!.slice(1).map(Number) as [number, number, number];
    expect(children).toBeGreaterThan(lists);
    expect(perDay).toBeLessThan(children);
    expect(weekly.stdout).toMatch(new RegExp(`reconcile .* 1 × ~${lists + perDay} = ${lists + perDay}`));
    writeFileSync(path, lines(0));
    const every = await run(['plan', '--config', path]);
    expect(every.stdout).toMatch(new RegExp(`reconcile .* 1 × ~${lists + children} = ${lists + children}`));
  });
});

describe('a daemon whose schedule does not fit', () => {
  async function start(cfg: Config): Promise<CapturedLog> {
    const w = await openWarehouse(`sqlite:${join(mkdtempSync(join(tmpdir(), 'svcsync-fit-daemon-')), 'w.db')}`);
    await migrateToLatest(w);
    // An organization found earlier: the daemon starts without calling the API.
    for (const family of FAMILIES)
      await stateDb(w.db)
        .insertInto('_svcsync_organizations')
        .values({
          connection: 'acme',
          family,
          organization_id: '10234695',
          name: 'Acme',
          is_active: 1,
          time_zone: 'UTC',
          discovered_at: new Date(NOW).toISOString(),
        })
        .execute();
    const log = new CapturedLog();
    const secrets = new SecretRegistry();
    const daemon = new Daemon({
      config: { ...cfg, warehouse: { ...cfg.warehouse, url: `sqlite:unused` } },
      warehouse: w,
      clock: new FakeClock(NOW),
      logger: createLogger({ level: 'info', secrets, destination: log }),
      secrets,
    });
    try {
      await daemon.start();
      await daemon.stop(0);
    } finally {
      await w.close();
    }
    return log;
  }
  const warnings = (log: CapturedLog): Array<Record<string, unknown>> =>
    log.records.filter((r) => r['level'] === 'warn' && String(r['msg']).includes('svcsync plan --fit'));

  it('warns at start-up with the figures', async () => {
    const log = await start(config('free', { schedules: { incremental: '* * * * *' } }));
    const [w] = warnings(log);
    expect(w).toMatchObject({ connection: 'acme', organization_id: '10234695', budget: 900 });
    expect(Number(w!['planned'])).toBeGreaterThan(900);
    expect(String(w!['msg'])).toMatch(/needs about \d+ requests on quota day \d{4}-\d\d-\d\d but its budget is 900 \(/);
    expect(String(w!['msg'])).toContain('incremental * * * * * (UTC): 1440 × ~');
  });

  it("says nothing with the plan's defaults", async () => {
    expect(warnings(await start(config('free')))).toEqual([]);
  });
});

describe('countFires', () => {
  const days = [
    [Date.parse('2026-03-28T00:00:00Z'), Date.parse('2026-03-29T00:00:00Z')],
    // Europe/Berlin moves from +01:00 to +02:00 at 02:00 local on 2026-03-29.
    [Date.parse('2026-03-29T00:00:00Z'), Date.parse('2026-03-30T00:00:00Z')],
    [Date.parse('2026-11-13T00:00:00Z'), Date.parse('2026-11-14T00:00:00Z')],
  ] as const;
  const expressions = [
    '*/15 * * * *',
    '10 */8 * * *',
    '5 * * * *',
    '40 2 * * 0',
    '30 2 * * *',
    '0 1-5/2 * * 1-5',
    '15,45 * 29 3 *',
    '0 0 * * 7',
    '0 12 * * MON',
    '0 9 * NOV fri',
    '0 0 13 * 5',
    '30 */20 * * * *',
  ];

  it('counts what the cron package fires, day by day', () => {
    for (const zone of ['UTC', 'Europe/Berlin', 'Asia/Kolkata'])
      for (const e of expressions)
        for (const [from, to] of days) {
          const expected = new Cron(e, zone).between(from - 1, to - 1).length;
          const counted = countFires(e, zone, from - 1, to - 1);
          // Around a clock change the cron package moves a fire out of the skipped hour.
          if (zone === 'Europe/Berlin' && from === days[1][0]) expect(Math.abs(counted - expected), e).toBeLessThanOrEqual(3);
          else expect(counted, `${e} in ${zone} from ${new Date(from).toISOString()}`).toBe(expected);
        }
  });

  it('counts a schedule of every second without asking the cron package for each', () => {
    expect(countFires('* * * * * *', 'UTC', days[0][0] - 1, days[0][1] - 1)).toBe(86_400);
    expect(countFires('*/10 * * * * *', 'Asia/Kolkata', days[0][0], days[0][0] + 60_000)).toBe(6);
  });
});
