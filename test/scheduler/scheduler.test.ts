import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { Family } from '../../src/catalog/families.js';
import { FakeClock } from '../../src/core/clock.js';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { decide, heldForHigher } from '../../src/scheduler/planning/budget.js';
import { Cron } from '../../src/scheduler/timing/cron.js';
import { PLAN_SCHEDULES, resolveJobs, type JobSpec } from '../../src/scheduler/timing/jobs.js';
import { Holds } from '../../src/scheduler/timing/holds.js';
import { outcomeOf, type JobOutcome, type JobRun } from '../../src/scheduler/timing/job-run.js';
import { Scheduler, type SchedulerEvent } from '../../src/scheduler/timing/scheduler.js';
import type { OrganizationOutcome } from '../../src/extractors/organization-sync.js';
import type { SyncSummary } from '../../src/extractors/sync-run.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

function job(id: string, expression: string, extra: Partial<JobSpec> = {}, timeZone = 'UTC'): JobSpec {
  return {
    id,
    connection: 'c',
    organizationId: 'o1',
    jobClass: 'incremental',
    mode: 'incremental',
    priority: 0,
    trees: [id],
    streams: [id],
    cron: new Cron(expression, timeZone),
    ...extra,
  };
}

function setup(jobs: JobSpec[], runJob: (job: JobSpec, run: JobRun) => Promise<JobOutcome>, start = Date.UTC(2026, 0, 1, 0, 0, 30)) {
  const clock = new FakeClock(start);
  const log = new CapturedLog();
  const logger = createLogger({ level: 'info', secrets: new SecretRegistry(), destination: log });
  const events: SchedulerEvent[] = [];
  const holds = new Holds({ clock, retryBackoffMs: 10 * MIN, retryBackoffMaxMs: 2 * HOUR });
  const scheduler = new Scheduler({
    clock,
    logger,
    jobs: () => jobs,
    runJob,
    onEvent: (e) => events.push(e),
    holds,
  });
  return { clock, log, events, scheduler, holds };
}

/** A job runner whose runs end when the test says so. */
function manualRunner() {
  const runs: Array<{ job: JobSpec; at: number; run: JobRun; finish(o?: JobOutcome): void }> = [];
  return {
    runs,
    runJob: (clock: FakeClock) => (j: JobSpec, run: JobRun) =>
      new Promise<JobOutcome>((resolve) => {
        runs.push({ job: j, at: clock.now(), run, finish: (o = { status: 'ok' }) => resolve(o) });
      }),
  };
}

describe('cron schedules', () => {
  it('fires at the cron times of its zone, strictly after the given instant', () => {
    const c = new Cron('30 2 * * *', 'America/New_York');
    // 02:30 New York in January is 07:30 UTC.
    expect(new Date(c.next(Date.UTC(2026, 0, 1))).toISOString()).toBe('2026-01-01T07:30:00.000Z');
    expect(new Date(c.next(Date.UTC(2026, 0, 1, 7, 30))).toISOString()).toBe('2026-01-02T07:30:00.000Z');
    // In July New York is on daylight time: 06:30 UTC.
    expect(new Date(c.next(Date.UTC(2026, 6, 1))).toISOString()).toBe('2026-07-01T06:30:00.000Z');
    expect(new Cron('*/15 * * * *', 'UTC').between(Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 2))).toHaveLength(96);
  });

  it('the scheduler runs each job at its fire times on the injected clock', async () => {
    const seen: Array<{ id: string; at: string }> = [];
    const jobs = [job('quarter', '*/15 * * * *'), job('berlin', '0 9 * * *', {}, 'Europe/Berlin')];
    const t = setup(jobs, (j) => {
      seen.push({ id: j.id, at: new Date(t.clock.now()).toISOString() });
      return Promise.resolve({ status: 'ok' });
    });
    t.scheduler.start();
    await t.clock.advance(14 * MIN);
    expect(seen).toEqual([]);
    await t.clock.advance(1 * MIN);
    expect(seen).toEqual([{ id: 'quarter', at: '2026-01-01T00:15:00.000Z' }]);
    await t.clock.advance(9 * HOUR);
    // 09:00 Berlin is 08:00 UTC in winter.
    expect(seen.filter((s) => s.id === 'berlin')).toEqual([{ id: 'berlin', at: '2026-01-01T08:00:00.000Z' }]);
    expect(seen.filter((s) => s.id === 'quarter')).toHaveLength(37);
    await t.scheduler.stop(1000);
  });
});

describe('overlap', () => {
  it('skips and logs a fire that finds the job still running; the next free fire runs it', async () => {
    const m = manualRunner();
    const jobs = [job('slow', '*/15 * * * *')];
    const t = setup(jobs, (j, r) => m.runJob(t.clock)(j, r));
    t.scheduler.start();
    await t.clock.advance(15 * MIN);
    expect(m.runs).toHaveLength(1);
    await t.clock.advance(15 * MIN);
    await t.clock.advance(15 * MIN);
    // Still one run: the two fires that came while it ran were skipped, not queued.
    expect(m.runs).toHaveLength(1);
    const skips = t.events.filter((e) => e.type === 'skipped' && e.reason === 'overlap');
    expect(skips).toHaveLength(2);
    expect(
      t.log.records.filter(
        (r) => r['msg'] === 'job skipped: the previous run is still going; this fire is skipped, not queued' && r['job'] === 'slow',
      ),
    ).toHaveLength(2);
    m.runs[0]!.finish();
    await t.clock.advance(1);
    expect(m.runs).toHaveLength(1);
    await t.clock.advance(15 * MIN);
    expect(m.runs).toHaveLength(2);
    m.runs[1]!.finish();
    await t.scheduler.stop(1000);
  });

  it('under a backlog every job gets its turn, the longest waiting first (no organization starves)', async () => {
    // Three organizations due every minute, one slot, each run takes 50 s: only one run a minute fits.
    const jobs = ['a', 'b', 'c'].map((o) => job(`j-${o}`, '* * * * *', { organizationId: o, trees: [`t-${o}`] }));
    const started: string[] = [];
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const scheduler = new Scheduler({
      clock,
      logger: createLogger({ level: 'silent', secrets: new SecretRegistry() }),
      jobs: () => jobs,
      maxConcurrent: 1,
      runJob: (j) => {
        started.push(j.id);
        return new Promise<JobOutcome>((resolve) => clock.setTimeout(() => resolve({ status: 'ok' }), 50_000));
      },
    });
    scheduler.start();
    await clock.advance(9 * MIN);
    // Ordered by id, j-a would have run at every fire and j-c never.
    const counts = ['j-a', 'j-b', 'j-c'].map((id) => started.filter((s) => s === id).length);
    expect(Math.min(...counts), JSON.stringify(started)).toBeGreaterThanOrEqual(2);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    const stopping = scheduler.stop(1000);
    await clock.advance(60_000);
    await stopping;
  });

  it('a job whose streams another job is syncing waits for it instead of running alongside', async () => {
    const m = manualRunner();
    const jobs = [
      job('inc', '*/15 * * * *', { trees: ['s'], streams: ['s'] }),
      job('rec', '*/15 * * * *', { trees: ['s'], streams: ['s'], jobClass: 'reconcile', mode: 'reconcile', priority: 2 }),
    ];
    const t = setup(jobs, (j, r) => m.runJob(t.clock)(j, r));
    t.scheduler.start();
    await t.clock.advance(15 * MIN);
    expect(m.runs.map((r) => r.job.id)).toEqual(['inc']);
    m.runs[0]!.finish();
    await t.clock.advance(1);
    expect(m.runs.map((r) => r.job.id)).toEqual(['inc', 'rec']);
    m.runs[1]!.finish();
    await t.scheduler.stop(1000);
  });
});

describe('failures', () => {
  it('a failing organization backs off (doubling) while another carries on', async () => {
    const calls: string[] = [];
    const jobs = [job('bad', '*/15 * * * *', { organizationId: 'o-bad' }), job('good', '*/15 * * * *', { organizationId: 'o-good' })];
    const t = setup(jobs, (j) => {
      calls.push(`${new Date(t.clock.now()).toISOString().slice(11, 16)} ${j.id}`);
      return Promise.resolve(j.id === 'bad' ? { status: 'failed', failed: ['o-bad'], error: '401 invalid token' } : { status: 'ok' });
    });
    t.scheduler.start();
    await t.clock.advance(2 * HOUR);
    const good = calls.filter((c) => c.endsWith('good'));
    const bad = calls.filter((c) => c.endsWith('bad'));
    expect(good).toHaveLength(8);
    // Fails at 00:15 (wait 10 min -> 00:30 runs), fails (20 min -> 01:00), fails (40 min -> 01:45).
    expect(bad).toEqual(['00:15 bad', '00:30 bad', '01:00 bad', '01:45 bad']);
    const held = t.holds.heldUntil('c', 'o-bad');
    expect(held?.reason).toContain('401 invalid token');
    expect(t.events.some((e) => e.type === 'skipped' && e.reason === 'backoff' && e.job.id === 'bad')).toBe(true);
    await t.scheduler.stop(1000);
  });

  it('a job that found its organization held by another process fires again after 30 s, neither ok nor failed', async () => {
    const calls: string[] = [];
    const jobs = [job('held', '0 * * * *')];
    const t = setup(jobs, () => {
      calls.push(new Date(t.clock.now()).toISOString().slice(11, 19));
      // Held by a hand-run sync for the first two tries.
      return Promise.resolve(calls.length <= 2 ? { status: 'busy', error: 'being synced by another process' } : { status: 'ok' });
    });
    t.scheduler.start();
    await t.clock.advance(2 * HOUR);
    expect(calls).toEqual(['01:00:00', '01:00:30', '01:01:00', '02:00:00']);
    // No backoff and no pause: the organization did not fail.
    expect(t.holds.heldUntil('c', 'o1')).toBeNull();
    const finished = t.events.filter((e) => e.type === 'finished').map((e) => (e as { outcome: JobOutcome }).outcome.status);
    expect(finished).toEqual(['busy', 'busy', 'ok', 'ok']);
    await t.scheduler.stop(1000);
  });

  it('an organization whose quota is gone pauses until the reset', async () => {
    const calls: number[] = [];
    const jobs = [job('q', '0 * * * *')];
    const t = setup(jobs, () => {
      calls.push(t.clock.now());
      return Promise.resolve(calls.length === 1 ? { status: 'quota', quotaUntil: Date.UTC(2026, 0, 2) } : { status: 'ok' });
    });
    t.scheduler.start();
    await t.clock.advance(25 * HOUR);
    expect(calls.map((c) => new Date(c).toISOString())).toEqual([
      '2026-01-01T01:00:00.000Z',
      '2026-01-02T00:00:00.000Z',
      '2026-01-02T01:00:00.000Z',
    ]);
    expect(t.events.filter((e) => e.type === 'skipped' && e.reason === 'paused')).toHaveLength(22);
    await t.scheduler.stop(1000);
  });
});

describe('shutdown', () => {
  it('asks running jobs to stop, abandons them at the bound, starts nothing new', async () => {
    const m = manualRunner();
    const jobs = [job('a', '*/15 * * * *'), job('b', '*/15 * * * *', { organizationId: 'o2' })];
    const t = setup(jobs, (j, r) => m.runJob(t.clock)(j, r));
    t.scheduler.start();
    await t.clock.advance(15 * MIN);
    expect(m.runs).toHaveLength(2);
    // a stops when asked (its page commits); b ignores the soft stop and needs the hard abort.
    m.runs[0]!.run.soft.addEventListener('abort', () => m.runs[0]!.finish({ status: 'stopped' }));
    m.runs[1]!.run.hard.addEventListener('abort', () => m.runs[1]!.finish({ status: 'stopped' }));
    let stopped = false;
    const stopAt = t.clock.now();
    const stopping = t.scheduler.stop(30_000).then(() => (stopped = true));
    await t.clock.advance(1);
    expect(m.runs[0]!.run.soft.aborted).toBe(true);
    expect(m.runs[1]!.run.hard.aborted).toBe(false);
    expect(stopped).toBe(false);
    await t.clock.advance(27_998);
    expect(m.runs[1]!.run.hard.aborted).toBe(false);
    await t.clock.advance(1);
    expect(m.runs[1]!.run.hard.aborted).toBe(true);
    await stopping;
    expect(stopped).toBe(true);
    // Within the bound: the hard abort came 2 s before it.
    expect(t.clock.now() - stopAt).toBe(28_000);
    await t.clock.advance(HOUR);
    expect(m.runs).toHaveLength(2);
  });
});

describe('budget priorities', () => {
  const cfg = parseConfig({ connections: [{ name: 'c', client_id: 'x', client_secret: 'y', refresh_token: 'z' }] }, { env: {} });
  const all = [{ connection: 'c', organizationId: 'o1', families: ['books', 'inventory', 'invoice', 'billing'] as Family[] }];
  // The plan's cron defaults, as they run with freshness off (`daemon.freshness.enabled: false`).
  const cronOnly = parseConfig(
    { connections: [{ name: 'c', client_id: 'x', client_secret: 'y', refresh_token: 'z' }], daemon: { freshness: { enabled: false } } },
    { env: {} },
  );
  const defaults = resolveJobs(cronOnly, all, { backfill: true });
  // The budget arithmetic below counts fires of these schedules.
  const explicit = parseConfig(
    {
      connections: [{ name: 'c', client_id: 'x', client_secret: 'y', refresh_token: 'z' }],
      daemon: { schedules: { incremental: '*/15 * * * *', settings: '0 * * * *', reconcile: '30 2 * * *' } },
    },
    { env: {} },
  );
  const jobs = resolveJobs(explicit, all, { backfill: true });
  const byClass = (k: string) => jobs.find((j) => j.jobClass === k)!;

  it("resolves the free plan's defaults: lists every 2 hours, projects daily, settings every 6 hours, nightly reconcile but events", () => {
    const byClass = (k: string) => defaults.find((j) => j.jobClass === k)!;
    const jobs = defaults;
    expect(byClass('incremental').cron.expression).toBe('0 */2 * * *');
    const whole = jobs.find((j) => j.jobClass === 'incremental' && j.trees.includes('invoice.projects'))!;
    expect(whole.cron.expression).toBe('10 3 * * *');
    expect(whole.trees).toEqual(['invoice.projects']);
    expect(whole.streams).toEqual(['invoice.projects', 'invoice.tasks']);
    expect(byClass('incremental').trees).not.toContain('invoice.projects');
    expect(byClass('settings').cron.expression).toBe('5 */6 * * *');
    expect(byClass('organizations').cron.expression).toBe('5 */6 * * *');
    expect(byClass('reconcile').cron.expression).toBe('30 2 * * *');
    // Events are a log the API never deletes from (A51): incremental runs read them, the nightly reconcile does not.
    expect(byClass('incremental').trees).toContain('billing.events');
    expect(byClass('reconcile').trees).toContain('inventory.sales_orders');
    expect(byClass('reconcile').trees).not.toContain('billing.events');
    expect(byClass('organizations').organizationId).toBeNull();
    expect(byClass('incremental').trees).toContain('inventory.sales_orders');
    expect(byClass('incremental').streams).toContain('inventory.contact_persons');
    expect(byClass('settings').trees).toContain('inventory.currencies');
    expect(byClass('settings').trees).not.toContain('inventory.sales_orders');
  });

  it('keeps every stream fresh by default but the trees read whole: one freshness job an organization, reconcile, projects on cron', () => {
    const jobs = resolveJobs(cfg, all, { backfill: false });
    const fresh = jobs.filter((j) => j.fresh);
    expect(fresh).toHaveLength(1);
    expect(fresh[0]!.id).toBe('c/o1/fresh');
    expect(fresh[0]!.trees).toEqual(expect.arrayContaining(['inventory.sales_orders', 'billing.events', 'inventory.currencies']));
    expect(fresh[0]!.trees).not.toContain('invoice.projects');
    expect(fresh[0]!.streams).toContain('inventory.contact_persons');
    expect(jobs.find((j) => j.trees.includes('invoice.projects'))!.cron.expression).toBe('10 3 * * *');
    expect(jobs.find((j) => j.jobClass === 'reconcile')!.cron.expression).toBe('30 2 * * *');
    // Nothing is left on the settings cron; discovery keeps it.
    expect(jobs.some((j) => j.jobClass === 'settings')).toBe(false);
    expect(jobs.find((j) => j.jobClass === 'organizations')!.cron.expression).toBe('5 */6 * * *');
  });

  it('a cron schedule set for a class or a stream keeps its streams on cron; a target of off does too', () => {
    const withCron = parseConfig(
      {
        connections: [
          {
            name: 'c',
            client_id: 'x',
            client_secret: 'y',
            refresh_token: 'z',
            schedules: { streams: { 'inventory.contacts': { incremental: '*/20 * * * *' } } },
            freshness: { streams: { 'billing.events': 'off' } },
          },
        ],
        daemon: { schedules: { settings: '0 * * * *' } },
      },
      { env: {} },
    );
    const jobs = resolveJobs(withCron, all, { backfill: false });
    const fresh = jobs.find((j) => j.fresh)!;
    expect(fresh.trees).toContain('inventory.sales_orders');
    for (const t of ['inventory.contacts', 'billing.events', 'inventory.currencies']) expect(fresh.trees).not.toContain(t);
    expect(jobs.find((j) => j.jobClass === 'incremental' && j.trees.includes('inventory.contacts'))!.cron.expression).toBe('*/20 * * * *');
    expect(jobs.find((j) => j.jobClass === 'settings' && j.trees.includes('inventory.currencies'))!.cron.expression).toBe('0 * * * *');
    expect(jobs.find((j) => j.jobClass === 'incremental' && j.trees.includes('billing.events'))!.cron.expression).toBe('0 */2 * * *');
  });

  it("reconciles the events too when the connection's stream schedule asks for it (a server that deletes events)", () => {
    const withEvents = parseConfig(
      {
        connections: [
          {
            name: 'c',
            client_id: 'x',
            client_secret: 'y',
            refresh_token: 'z',
            schedules: { streams: { 'billing.events': { reconcile: '45 3 * * 0' } } },
          },
        ],
      },
      { env: {} },
    );
    const reconciles = resolveJobs(withEvents, all, { backfill: false }).filter((j) => j.jobClass === 'reconcile');
    const events = reconciles.find((j) => j.trees.includes('billing.events'))!;
    expect(events.cron.expression).toBe('45 3 * * 0');
    expect(events.trees).toEqual(['billing.events']);
    expect(reconciles.find((j) => j.trees.includes('inventory.sales_orders'))!.cron.expression).toBe('30 2 * * *');
  });

  it('the example configuration documents the daemon keys and parses to the defaults', async () => {
    const { readFileSync } = await import('node:fs');
    const { parse } = await import('yaml');
    const doc = parse(readFileSync(new URL('../../config/svcsync.example.yaml', import.meta.url), 'utf8')) as Record<string, unknown>;
    const parsed = parseConfig(doc, { env: { SVC_CLIENT_ID: 'a', SVC_CLIENT_SECRET: 'b', SVC_REFRESH_TOKEN: 'c' } });
    // The example leaves the schedules to the plan's defaults, which it lists in comments.
    expect(parsed.daemon).toEqual(cfg.daemon);
    const text = readFileSync(new URL('../../config/svcsync.example.yaml', import.meta.url), 'utf8');
    for (const [plan, s] of Object.entries(PLAN_SCHEDULES))
      for (const key of ['incremental', 'whole_read', 'settings', 'reconcile'] as const)
        expect(text, `${plan} ${key}`).toMatch(new RegExp(`#.*\\b${plan}\\b.*${key}: "${s[key].replace(/\*/g, '\\*')}"`));
    expect(parsed.worker).toEqual(cfg.worker);
    expect(parsed.leases).toEqual({ ttl_seconds: 30, heartbeat_seconds: 5 });
    expect(doc['leases']).toEqual(cfg.leases);
  });

  it('lease timings: a heartbeat over a third of the time-to-live is refused, naming the key', () => {
    const base = { connections: [{ name: 'c', client_id: 'x', client_secret: 'y', refresh_token: 'z' }] };
    expect(parseConfig({ ...base, leases: { ttl_seconds: 6, heartbeat_seconds: 2 } }).leases).toEqual({
      ttl_seconds: 6,
      heartbeat_seconds: 2,
    });
    expect(() => parseConfig({ ...base, leases: { ttl_seconds: 6, heartbeat_seconds: 3 } })).toThrow(
      /leases\.heartbeat_seconds.*a third of ttl_seconds/,
    );
    expect(() => parseConfig({ ...base, leases: { ttl_seconds: 1 } })).toThrow(/leases\.ttl_seconds/);
  });

  it('per-stream overrides make their own job; bad cron expressions name the key', () => {
    const c2 = parseConfig(
      {
        connections: [
          {
            name: 'c',
            client_id: 'x',
            client_secret: 'y',
            refresh_token: 'z',
            schedules: { time_zone: 'Europe/Berlin', streams: { 'inventory.sales_orders': { incremental: '*/5 * * * *' } } },
          },
        ],
      },
      { env: {} },
    );
    const j2 = resolveJobs(c2, [{ connection: 'c', organizationId: 'o1', families: ['inventory'] }], { backfill: false });
    const so = j2.find((j) => j.trees.includes('inventory.sales_orders') && j.jobClass === 'incremental')!;
    expect(so.trees).toEqual(['inventory.sales_orders']);
    expect(so.cron.toString()).toBe('*/5 * * * * (Europe/Berlin)');
    expect(() =>
      parseConfig(
        {
          daemon: { schedules: { reconcile: '61 2 * * *' } },
          connections: [{ name: 'c', client_id: 'x', client_secret: 'y', refresh_token: 'z' }],
        },
        { env: {} },
      ),
    ).toThrow(/daemon\.schedules\.reconcile/);
    expect(() =>
      parseConfig(
        {
          connections: [
            {
              name: 'c',
              client_id: 'x',
              client_secret: 'y',
              refresh_token: 'z',
              schedules: { streams: { 'books.users': { incremental: 'often' } } },
            },
          ],
        },
        { env: {} },
      ),
    ).toThrow(/connections\[0\]\.schedules\.streams\.books\.users\.incremental/);
  });

  it('when the budget is short, incremental runs while reconcile and backfill wait', () => {
    const now = Date.UTC(2026, 0, 1, 12, 0);
    const reset = Date.UTC(2026, 0, 2);
    const estimates = [
      { job: byClass('incremental'), estimate: 5 },
      { job: byClass('settings'), estimate: 3 },
    ];
    // 47 incremental fires (5 each) and 11 settings fires (3 each) remain before midnight.
    expect(heldForHigher(1, estimates, now, reset, 1)).toBe(235);
    expect(heldForHigher(3, estimates, now, reset, 1)).toBe(268);
    expect(heldForHigher(3, estimates, now, reset, 1.25)).toBe(335);
    const view = { remaining: 250, nextReset: reset };
    expect(decide(byClass('incremental'), 5, view, 0).run).toBe(true);
    const rec = decide(byClass('reconcile'), 40, view, heldForHigher(2, estimates, now, reset, 1));
    expect(rec.run).toBe(false);
    expect(rec.reason).toMatch(/held for higher priorities/);
    expect(decide(byClass('backfill'), 1000, view, heldForHigher(3, estimates, now, reset, 1)).run).toBe(false);
    // Late in the day little higher-priority demand remains and the backfill takes the rest.
    const late = Date.UTC(2026, 0, 1, 23, 10);
    const floor = heldForHigher(3, estimates, late, reset, 1);
    expect(floor).toBe(15);
    const b = decide(byClass('backfill'), 1000, view, floor);
    expect(b).toMatchObject({ run: true, floor: 15 });
  });
});

describe("a run's outcome for the scheduler", () => {
  const summary = (statuses: Array<OrganizationOutcome['status']>, skipped: Family[] = []): SyncSummary => ({
    runId: 'r',
    command: 'daemon',
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:00:01.000Z',
    organizations: statuses.map((status, i) => ({ connection: 'c', organizationId: `o${i}`, families: [], status, streams: [] })),
    connectionFailures: [],
    skippedFamilies: skipped.map((family) => ({ connection: 'c', family, error: `${family} skipped` })),
    requests: 0,
    usage: [],
    exitCode: 0,
  });
  it.each([
    [['busy'], 'busy'],
    [['busy', 'busy'], 'busy'],
    [['ok', 'busy'], 'partial'],
    [['ok'], 'ok'],
    [['failed', 'busy'], 'failed'],
    [['ok', 'failed'], 'partial'],
    [[], 'ok'],
  ] as Array<[Array<OrganizationOutcome['status']>, string]>)('%j → %s', (statuses, want) => {
    expect(outcomeOf(job('j', '0 * * * *'), summary(statuses)).status).toBe(want);
  });
  it('a family skipped for want of a scope makes the run partial, reported, and backs no organization or connection off', () => {
    const outcome = outcomeOf(job('j', '0 * * * *'), summary(['ok'], ['billing']));
    expect(outcome.status).toBe('partial');
    expect(outcome.failed).toEqual([]);
    expect(outcome.error).toBe('c: billing skipped');
  });
});

describe('early fires (webhooks)', () => {
  it('fireSoon runs the named trees now and leaves the scheduled fire where it was', async () => {
    const jobs = [job('j', '*/15 * * * *', { trees: ['a', 'b'], streams: ['a', 'b'] })];
    const r = manualRunner();
    const t = setup(jobs, r.runJob(new FakeClock()));
    const runs: Array<{ trees: string[]; at: number }> = [];
    const s = new Scheduler({
      clock: t.clock,
      logger: createLogger({ level: 'silent', secrets: new SecretRegistry() }),
      jobs: () => jobs,
      runJob: (j) => {
        runs.push({ trees: j.trees, at: t.clock.now() });
        return Promise.resolve({ status: 'ok' });
      },
    });
    s.start();
    await t.clock.advance(MIN);
    s.fireSoon('j', ['b', 'not-a-tree-of-this-job']);
    await t.clock.advance(0);
    expect(runs).toEqual([{ trees: ['b'], at: t.clock.now() }]);
    // The quarter-hour fire still comes, whole.
    await t.clock.advanceTo(Date.UTC(2026, 0, 1, 0, 15));
    expect(runs.map((x) => x.trees)).toEqual([['b'], ['a', 'b']]);
    expect(runs[1]!.at).toBe(Date.UTC(2026, 0, 1, 0, 15));
    // No name: the whole job.
    s.fireSoon('j');
    await t.clock.advance(0);
    expect(runs.map((x) => x.trees)).toEqual([['b'], ['a', 'b'], ['a', 'b']]);
    expect(s.firingSoon()).toEqual([]);
  });

  it('an early fire while the job runs becomes one follow-up run when it finishes', async () => {
    const jobs = [job('j', '*/15 * * * *', { trees: ['a', 'b'], streams: ['a', 'b'] })];
    const r = manualRunner();
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const s = new Scheduler({
      clock,
      logger: createLogger({ level: 'silent', secrets: new SecretRegistry() }),
      jobs: () => jobs,
      runJob: r.runJob(clock),
    });
    s.start();
    s.fireSoon('j', ['a']);
    await clock.advance(0);
    expect(r.runs.map((x) => x.job.trees)).toEqual([['a']]);
    // Three hooks while it runs: one follow-up, on the union of their trees.
    s.fireSoon('j', ['a']);
    s.fireSoon('j', ['b']);
    s.fireSoon('j', ['a']);
    expect(s.firingSoon()).toEqual(['j']);
    await clock.advance(1_000);
    expect(r.runs).toHaveLength(1);
    r.runs[0]!.finish();
    await clock.advance(0);
    expect(r.runs.map((x) => x.job.trees)).toEqual([['a'], ['a', 'b']]);
    r.runs[1]!.finish();
    await clock.advance(MIN);
    expect(r.runs).toHaveLength(2);
  });
});
