import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { qualifiedName } from '../../src/catalog/types.js';
import { parseConfig } from '../../src/config/load.js';
import { FakeClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { heldForHigher } from '../../src/scheduler/planning/budget.js';
import { Holds } from '../../src/scheduler/timing/holds.js';
import { JobRunner } from '../../src/scheduler/job-runner.js';
import type { JobSpec } from '../../src/scheduler/timing/jobs.js';
import { DIALECTS, migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { knownOrganization } from '../helpers/organizations.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const NOON = Date.UTC(2026, 0, 1, 12, 0);
const MIDNIGHT = Date.UTC(2026, 0, 2);

describe('holds: backoffs and quota pauses', () => {
  const job = (organizationId: string | null) => ({ connection: 'c', organizationId });

  it('a failing organization backs off, doubling up to the maximum, while another is not held; a success starts it over', () => {
    const clock = new FakeClock(NOON);
    const holds = new Holds({ clock, retryBackoffMs: 10 * MIN, retryBackoffMaxMs: 30 * MIN });
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      holds.settle(job('o1'), { status: 'failed', failed: ['o1'], error: '401 invalid token' });
      const held = holds.heldUntil('c', 'o1')!;
      expect(held).toMatchObject({ kind: 'backoff', reason: `backing off after ${i + 1} failure(s): 401 invalid token` });
      waits.push(held.until - clock.now());
    }
    expect(waits).toEqual([10 * MIN, 20 * MIN, 30 * MIN, 30 * MIN]);
    expect(holds.heldUntil('c', 'o2')).toBeNull();
    holds.settle(job('o1'), { status: 'ok' });
    expect(holds.heldUntil('c', 'o1')).toBeNull();
    // Counted from one again.
    holds.settle(job('o1'), { status: 'failed', failed: ['o1'] });
    expect(holds.heldUntil('c', 'o1')!.until - clock.now()).toBe(10 * MIN);
  });

  it("a failed connection holds all its organizations; the connection's success clears theirs, except those failing in that run", () => {
    const clock = new FakeClock(NOON);
    const holds = new Holds({ clock, retryBackoffMs: 10 * MIN });
    holds.settle(job(null), { status: 'failed', failed: [null], error: 'token refused' });
    expect(holds.heldUntil('c', 'o1')?.reason).toMatch(/token refused/);
    expect(holds.heldUntil('other', 'o1')).toBeNull();
    holds.settle(job('o1'), { status: 'failed', failed: ['o1'] });
    holds.settle(job('o2'), { status: 'failed', failed: ['o2'] });
    // Discovery works again, but o2 failed in the same run.
    holds.settle(job(null), { status: 'partial', failed: ['o2'] });
    expect(holds.heldUntil('c', null)).toBeNull();
    expect(holds.heldUntil('c', 'o1')).toBeNull();
    expect(holds.heldUntil('c', 'o2')).toMatchObject({ kind: 'backoff', until: NOON + 20 * MIN });
  });

  it('a spent quota pauses its organization until the reset, never shortened; a busy run changes no backoff', async () => {
    const clock = new FakeClock(NOON);
    const holds = new Holds({ clock, retryBackoffMs: 10 * MIN });
    holds.settle(job('o1'), { status: 'quota', quotaUntil: MIDNIGHT });
    expect(holds.heldUntil('c', 'o1')).toEqual({ kind: 'paused', until: MIDNIGHT, reason: 'daily quota spent' });
    holds.pause('c', 'o1', MIDNIGHT - HOUR);
    expect(holds.heldUntil('c', 'o1')?.until).toBe(MIDNIGHT);
    holds.settle(job('o2'), { status: 'failed', failed: ['o2'] });
    holds.settle(job('o2'), { status: 'busy', error: 'being synced by another process' });
    // Still the first failure's backoff: busy neither failed nor worked.
    expect(holds.heldUntil('c', 'o2')).toMatchObject({ kind: 'backoff', until: NOON + 10 * MIN });
    // Of a pause and a backoff, the later one tells when the organization runs again.
    holds.settle(job('o1'), { status: 'failed', failed: ['o1'] });
    expect(holds.heldUntil('c', 'o1')?.kind).toBe('paused');
    await clock.advanceTo(MIDNIGHT);
    expect(holds.heldUntil('c', 'o1')).toBeNull();
  });
});

describe.each(DIALECTS)('the job runner decides (%s)', (dialect) => {
  const ACCOUNTS = 'https://accounts.example.test';
  let tw: TestWarehouse | undefined;
  let warehouse: Warehouse | undefined;
  let runner: JobRunner | undefined;
  afterEach(async () => {
    await runner?.stop();
    await warehouse?.close();
    await tw?.drop();
    runner = undefined;
    warehouse = undefined;
    const pending = nock.pendingMocks();
    nock.cleanAll();
    nock.enableNetConnect();
    expect(pending).toEqual([]);
  });

  /** A started runner on a fresh warehouse that knows one inventory organization, `o1`, at noon UTC. */
  async function started(): Promise<{ runner: JobRunner; safety: number; jobsChanged: () => number }> {
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
            accounts_url: ACCOUNTS,
            families: ['inventory'],
            limits: { per_day: 1000 },
          },
        ],
        // The cron path's admission rules; the freshness job's have their own tests (freshness-admission.test.ts).
        daemon: { freshness: { enabled: false } },
      },
      { env: {} },
    );
    const clock = new FakeClock(NOON);
    const secrets = new SecretRegistry();
    let changes = 0;
    runner = new JobRunner({ config, warehouse, clock, logger: createLogger({ level: 'silent', secrets }), secrets }, () => changes++);
    await runner.start();
    await knownOrganization(warehouse, { connection: 'c', family: 'inventory', organizationId: 'o1', at: NOON });
    await runner.reloadOrganizations();
    return { runner, safety: config.daemon.budget_safety, jobsChanged: () => changes };
  }

  const jobOf = (r: JobRunner, jobClass: JobSpec['jobClass']): JobSpec => r.jobs().find((j) => j.jobClass === jobClass)!;

  /** Makes the organization's day have `left` requests of its budget (900: 1,000 less the 10 % reserve), as another integration would. */
  async function leaveToday(r: JobRunner, left: number): Promise<void> {
    const limiter = (await r.limiterFor('c', 'o1'))!;
    limiter.observeServerQuota({ limit: 1000, remaining: 1000 - (900 - left) });
    expect(limiter.remainingToday()).toBe(left);
  }

  it('builds the job list from the organizations discovered, and tells its driver when it changes', async () => {
    const { runner: r, jobsChanged } = await started();
    expect(r.knownOrganizations()).toEqual([{ connection: 'c', organizationId: 'o1', families: ['inventory'] }]);
    expect(new Set(r.jobs().map((j) => j.id))).toEqual(
      new Set(['c/*/organizations', 'c/o1/incremental', 'c/o1/settings', 'c/o1/reconcile']),
    );
    expect(jobsChanged()).toBe(1);
  });

  it('admits discovery at no cost, and a later class only above what the earlier classes need until the reset', async () => {
    const { runner: r, safety } = await started();
    expect(await r.admit(jobOf(r, 'organizations'), NOON)).toMatchObject({ run: true, floor: 0, estimate: 0 });
    const reconcile = jobOf(r, 'reconcile');
    const higher = await Promise.all(
      [jobOf(r, 'incremental'), jobOf(r, 'settings')].map(async (job) => ({ job, estimate: await r.estimate(job) })),
    );
    const held = heldForHigher(reconcile.priority, higher, NOON, MIDNIGHT, safety);
    const estimate = await r.estimate(reconcile);
    expect(held).toBeGreaterThan(0);
    expect(held + estimate).toBeLessThan(900);
    // Exactly enough above the floor: it runs, and stops at the floor.
    await leaveToday(r, held + estimate);
    expect(await r.admit(reconcile, NOON)).toEqual({ run: true, job: reconcile, floor: held, estimate });
    // One request short: it waits, while the incremental job still runs.
    await leaveToday(r, held + estimate - 1);
    const refused = await r.admit(reconcile, NOON);
    expect(refused).toEqual({
      run: false,
      reason: `budget: needs about ${estimate} requests; ${held + estimate - 1} left today, ${held} of them held for higher priorities`,
    });
    expect(await r.admit(jobOf(r, 'incremental'), NOON)).toMatchObject({ run: true, floor: 0 });
  });

  it("refuses a job whose organization's quota is spent and holds the organization until the reset", async () => {
    const { runner: r } = await started();
    const limiter = (await r.limiterFor('c', 'o1'))!;
    limiter.block(new Date(MIDNIGHT));
    expect(r.holds.heldUntil('c', 'o1')).toBeNull();
    const admission = await r.admit(jobOf(r, 'incremental'), NOON);
    expect(admission).toEqual({
      run: false,
      reason: `paused: the daily quota is spent (429 code 45); resumes at ${new Date(MIDNIGHT).toISOString()}`,
    });
    expect(r.holds.heldUntil('c', 'o1')).toEqual({ kind: 'paused', until: MIDNIGHT, reason: 'daily quota spent' });
    // Discovery is charged to no organization, so it still runs.
    expect((await r.admit(jobOf(r, 'organizations'), NOON)).run).toBe(true);
  });

  it('resolves a hook to the incremental job and tree it names, and admits the extra run only above what the schedule needs', async () => {
    const { runner: r, safety } = await started();
    const incremental = jobOf(r, 'incremental');
    const child = CATALOG.find((s) => s.family === 'inventory' && s.parent && incremental.streams.includes(qualifiedName(s)))!;
    const parent = `inventory.${child.parent!.stream}`;
    const settingsStream = CATALOG.find((s) => s.family === 'inventory' && s.kind === 'settings')!;
    const target = { connection: 'c', family: 'inventory', organizationId: 'o1', streams: [child.name] };
    // A child stream is synced with its parent's tree.
    expect(r.resolveHook(target)).toEqual({ kind: 'ok', key: 'c\u0000o1', trees: [parent], jobs: [incremental] });
    expect(r.resolveHook({ ...target, streams: [] })).toMatchObject({ kind: 'ok', trees: incremental.trees });
    expect(r.resolveHook({ ...target, organizationId: 'o9' })).toMatchObject({ kind: 'unknown' });
    expect(r.resolveHook({ ...target, family: 'books' })).toMatchObject({ kind: 'unknown' });
    const notIncremental = r.resolveHook({ ...target, streams: [settingsStream.name] });
    expect(notIncremental.kind).toBe('invalid');
    expect('message' in notIncremental && notIncremental.message).toMatch(
      `stream "${settingsStream.name}" is not an incremental stream of inventory`,
    );

    const estimate = await r.estimate(incremental);
    const held = heldForHigher(1, [{ job: incremental, estimate }], NOON, MIDNIGHT, safety);
    await leaveToday(r, held + estimate);
    expect(await r.admitHook(incremental, NOON)).toMatchObject({ run: true });
    await leaveToday(r, held + estimate - 1);
    const verdict = await r.admitHook(incremental, NOON);
    expect(verdict.run).toBe(false);
    expect(verdict.reason).toMatch(new RegExp(`^budget low: a hook run needs about ${estimate} requests; .* ${held} are held`));
  });

  it('runJob: a refused refresh token fails the connection, counted once, and no job is left counted as running', async () => {
    const { runner: r } = await started();
    nock.disableNetConnect();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, { error: 'invalid_code' });
    const soft = new AbortController();
    const hard = new AbortController();
    const outcome = await r.runJob(jobOf(r, 'organizations'), { soft: soft.signal, hard: hard.signal, floor: 0, estimate: 0 });
    expect(outcome).toMatchObject({ status: 'failed', failed: [null] });
    expect(outcome.error).toMatch(/invalid_code/);
    const text = await r.metrics.registry.metrics();
    expect(text).toContain('svcsync_job_runs_total{connection="c",job_class="organizations",status="failed"} 1');
    expect(text).toContain('svcsync_jobs_running{job_class="organizations"} 0');
  });
});
