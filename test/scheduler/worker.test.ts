import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { Config } from '../../src/config/schema.js';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { ExitCode } from '../../src/core/errors.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import type { JobOutcome } from '../../src/scheduler/timing/job-run.js';
import { queueDepth, queueLine } from '../../src/scheduler/surface/queue-depth.js';
import { collectStatusDocument } from '../../src/scheduler/surface/status-document.js';
import { SYNC_QUEUE, Worker, type WorkerContext } from '../../src/scheduler/worker.js';
import { CommitCuttingProxy } from '../helpers/commit-cutting-proxy.js';
import { freshWarehouse, PG_BASE_URL } from '../helpers/dialects.js';
import { expectEqualsTruth, instant, startE2E, type E2E } from '../helpers/e2e.js';

/**
 * The warehouse in the run's database, where the pg-boss schemas and the queries below look (a copy
 * of the migrated template is a database of its own): svcsync migrates it on the first sync.
 */
const inRunDatabase = async (): Promise<{ target: Awaited<ReturnType<typeof freshWarehouse>> }> => ({
  target: await freshWarehouse('postgres'),
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

type Finished = { worker: string; job: string; outcome: JobOutcome | { status: 'skipped'; reason: string } };

/** Jobs of the pg-boss sync queue not yet finished. */
async function unfinished(schema: string): Promise<number> {
  const c = new pg.Client({ connectionString: PG_BASE_URL });
  await c.connect();
  try {
    const { rows } = await c.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${schema}".job WHERE name = $1 AND state IN ('created', 'retry', 'active')`,
      [SYNC_QUEUE],
    );
    return Number(rows[0]?.n ?? 0);
  } finally {
    await c.end();
  }
}

/**
 * A pg-boss schema for one test, named like the run's other test schemas, so the global teardown
 * drops it with them (or with the run's database). Dropping it mid-run raced other test files'
 * migrations: kysely's migrator introspects every schema of the database.
 */
function bossSchema(): string {
  return `t_${process.env['SVCSYNC_TEST_RUN'] ?? 'x'}_pgboss_${randomBytes(4).toString('hex')}`;
}

/** Waits until no sync job is queued or running on any worker. */
async function drained(schema: string, workers: readonly Worker[], timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  let quiet = 0;
  while (Date.now() < until) {
    const busy = (await unfinished(schema)) > 0 || workers.some((w) => w.runningJobs().length > 0);
    quiet = busy ? 0 : quiet + 1;
    // Twice in a row: a finished job's continuation is queued before it completes, but be sure.
    if (quiet >= 2) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the sync queue did not drain within ${timeoutMs} ms`);
}

describe('svcsync worker on pg-boss (postgres)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  /** One started worker on its own warehouse connection, ticking by hand, that records every job it finishes. */
  async function startedWorker(e: E2E, config: Config): Promise<{ worker: Worker; finished: Finished[] }> {
    const warehouse = await openWarehouse(config.warehouse.url, { poolSize: 4 });
    cleanups.push(() => warehouse.close());
    const finished: Finished[] = [];
    const worker = new Worker({
      config,
      warehouse,
      clock: e.sandbox.clock,
      logger: createLogger({ level: 'silent', secrets: e.secrets }),
      secrets: e.secrets,
      schedule: false,
      pollingIntervalSeconds: 0.5,
      onJob: (f) => finished.push(f),
    });
    cleanups.push(() => worker.stop(1_000));
    await worker.start();
    return { worker, finished };
  }

  it('two workers: the tick queues each due job once, both take jobs, every organization equals the truth', async () => {
    const e: E2E = await startE2E('postgres', { scale: 12, organizations: 6, timeScale: 60 }, {}, await inRunDatabase());
    cleanups.push(() => e.close());
    const schema = bossSchema();
    // Ten sandbox minutes (10 s) a slice. Under CI load, slices of 3 were once cut again and again
    // without finishing: each run spent its slice in kysely's database-wide introspection (now
    // scoped to the warehouse schema), and a slice with no request yet now gets another.
    // Both classes once a day at 06:00, so the budget holds nothing back for later incremental fires.
    const config: Config = {
      ...e.config,
      daemon: { ...e.config.daemon, schedules: { ...e.config.daemon.schedules, incremental: '0 6 * * *', settings: '0 6 * * *' } },
      worker: { schema, concurrency: 2, slice_minutes: 10 },
    };
    const finished: Finished[] = [];
    const log = new CapturedLog();
    const workers: Worker[] = [];
    const warehouses: Warehouse[] = [];
    for (const name of ['w1', 'w2']) {
      const warehouse = await openWarehouse(config.warehouse.url, { poolSize: 4 });
      warehouses.push(warehouse);
      const ctx: WorkerContext = {
        config,
        warehouse,
        clock: e.sandbox.clock,
        logger: createLogger({ level: 'info', secrets: e.secrets, destination: log }).child({ worker: name }),
        secrets: e.secrets,
        schedule: false,
        pollingIntervalSeconds: 0.5,
        name,
        onJob: (f) => finished.push(f),
      };
      workers.push(new Worker(ctx));
    }
    cleanups.push(async () => {
      for (const w of workers) await w.stop(2_000);
      for (const w of warehouses) await w.close();
    });
    const [w1, w2] = workers as [Worker, Worker];
    // Both at once: pg-boss's install is serialized, and each queues the first discovery (once).
    await Promise.all([w1.start(), w2.start()]);
    await drained(schema, workers, 90_000);
    await w1.runner.reloadOrganizations();
    expect(new Set(w1.runner.knownOrganizations().map((o) => o.organizationId)).size).toBeGreaterThanOrEqual(6);

    // 06:00: incremental, settings and discovery are all due.
    e.sandbox.advanceClock(((((6 * HOUR - (e.sandbox.now() % DAY)) % DAY) + DAY) % DAY) + 1_000);
    const at = e.sandbox.now();
    const due = w1.runner
      .jobs()
      .filter((j) => j.cron.next(at - 60_000) <= at)
      .map((j) => j.id)
      .sort();
    expect(due.filter((id) => id.endsWith('/incremental'))).toHaveLength(w1.runner.knownOrganizations().length);
    const [a, b] = await Promise.all([w1.tick(at), w2.tick(at)]);
    // Each due job once, by whichever worker claimed the span; the other found it covered.
    expect([...a, ...b].sort()).toEqual(due);
    expect(Math.min(a.length, b.length)).toBe(0);
    expect(await w2.tick(at)).toEqual([]);
    // The next tick covers only the span since this one: nothing fires in the next minute, so nothing is queued.
    expect(await w2.tick(at + 60_000)).toEqual([]);
    const spans = log.records.filter((r) => r['msg'] === 'tick').map((r) => [r['from'], r['to']]);
    expect(spans.at(-1)).toEqual([new Date(at).toISOString(), new Date(at + 60_000).toISOString()]);

    await drained(schema, workers, 90_000).catch((err: unknown) => {
      const tally = new Map<string, number>();
      for (const f of finished) tally.set(`${f.worker} ${f.outcome.status}`, (tally.get(`${f.worker} ${f.outcome.status}`) ?? 0) + 1);
      const notes = log.records.filter((r) => Number(r['level']) >= 40).slice(-8);
      throw new Error(`${String(err)}: ${JSON.stringify([...tally])} ${JSON.stringify(notes).slice(0, 3000)}`);
    });
    const ran = finished.filter((f) => f.outcome.status !== 'skipped');
    const byWorker = new Set(ran.map((f) => f.worker));
    expect(byWorker, JSON.stringify(finished.map((f) => [f.worker, f.job, f.outcome.status]))).toEqual(new Set(['w1', 'w2']));
    expect(ran.filter((f) => f.outcome.status === 'failed')).toEqual([]);
    // Skipped only to wait for another job of the same organization (one owner at a time), then queued again.
    expect(
      finished.filter((f) => f.outcome.status === 'skipped' && !('reason' in f.outcome && f.outcome.reason.startsWith('busy'))),
    ).toEqual([]);
    const requests = e.sandbox.requestLog();
    const of = (w: string): number => ran.filter((f) => f.worker === w).length;
    console.info(
      `[worker] jobs run ${ran.length} (w1 ${of('w1')}, w2 ${of('w2')}); ` +
        `stopped at a slice ${ran.filter((f) => f.outcome.status === 'stopped').length}; requests ${requests.total}; ` +
        `429s ${JSON.stringify(requests.rateLimited)}`,
    );
    expect(requests.rateLimited['45']).toBe(0);
    await expectEqualsTruth(e);
  }, 240_000);

  it('a tick whose COMMIT reply is lost has queued each due job once; the next tick finds the span claimed', async () => {
    const proxy = await CommitCuttingProxy.start({ host: new URL(PG_BASE_URL).hostname, port: Number(new URL(PG_BASE_URL).port || 5432) });
    cleanups.push(() => proxy.close());
    const e: E2E = await startE2E(
      'postgres',
      { scale: 3, organizations: 1, timeScale: 60 },
      {},
      { through: (url) => proxy.through(url), ...(await inRunDatabase()) },
    );
    cleanups.push(() => e.close());
    const schema = bossSchema();
    const config: Config = {
      ...e.config,
      daemon: { ...e.config.daemon, schedules: { ...e.config.daemon.schedules, incremental: '0 6 * * *', settings: '0 6 * * *' } },
      worker: { schema, concurrency: 1, slice_minutes: 10 },
    };
    const { worker } = await startedWorker(e, config);
    await drained(schema, [worker], 60_000);
    e.sandbox.advanceClock(((((6 * HOUR - (e.sandbox.now() % DAY)) % DAY) + DAY) % DAY) + 1_000);
    const at = e.sandbox.now();
    const due = worker.runner
      .jobs()
      .filter((j) => j.cron.next(at - 60_000) <= at)
      .map((j) => j.id)
      .sort();
    expect(due.length).toBeGreaterThan(0);
    const c = new pg.Client({ connectionString: PG_BASE_URL });
    await c.connect();
    cleanups.push(() => c.end());
    const jobsOf = async (): Promise<Map<string, number>> => {
      const { rows } = await c.query<{ key: string; n: string }>(
        `SELECT singleton_key AS key, count(*) AS n FROM "${schema}".job WHERE name = $1 GROUP BY singleton_key`,
        [SYNC_QUEUE],
      );
      return new Map(rows.map((r) => [r.key, Number(r.n)]));
    };
    const before = await jobsOf();
    proxy.cutAfterCommit((statements) => statements.some((t) => /svcsync_tick AS t SET covered_until/.test(t)));
    await expect(worker.tick(at)).rejects.toThrow();
    expect(proxy.cut).toHaveLength(1);
    // Sent again (as pg-boss's next tick would): the span is claimed, nothing more is queued.
    expect(await worker.tick(at)).toEqual([]);
    expect(await worker.tick(at + 60_000)).toEqual([]);
    const after = await jobsOf();
    expect(due.map((id) => (after.get(id) ?? 0) - (before.get(id) ?? 0))).toEqual(due.map(() => 1));
  }, 120_000);

  it('stop drains within the bound: running jobs stop after their page and are queued again for a peer', async () => {
    const e: E2E = await startE2E(
      'postgres',
      { scale: 12, organizations: 2, timeScale: 1, faults: { latencyMs: 200 } },
      {},
      await inRunDatabase(),
    );
    cleanups.push(() => e.close());
    const schema = bossSchema();
    const config: Config = { ...e.config, worker: { schema, concurrency: 2, slice_minutes: 10 } };
    const warehouse = await openWarehouse(config.warehouse.url, { poolSize: 4 });
    cleanups.push(() => warehouse.close());
    const logger = createLogger({ level: 'silent', secrets: e.secrets });
    const worker = new Worker({
      config,
      warehouse,
      clock: e.sandbox.clock,
      logger,
      secrets: e.secrets,
      schedule: false,
      pollingIntervalSeconds: 0.5,
    });
    cleanups.push(() => worker.stop(1_000));
    await worker.start();
    // Discovery queues each organization's first sync at once; slow answers, so mid-pass when the stop comes.
    const until = Date.now() + 20_000;
    while (Date.now() < until && !worker.runningJobs().some((id) => id.endsWith('/incremental'))) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(worker.runningJobs().some((id) => id.endsWith('/incremental'))).toBe(true);
    const started = Date.now();
    await worker.stop(3_000);
    // The bound plus a margin for a loaded machine (the stop itself is asked for at once).
    expect(Date.now() - started).toBeLessThan(3_000 + 3_000);
    expect(worker.runningJobs()).toEqual([]);
    // The stopped runs wait in the queue for the next worker.
    const left = await unfinished(schema);
    expect(left).toBeGreaterThan(0);
    // svcsync status and /metrics show the queue's depth.
    const depth = (await queueDepth(warehouse.db, schema, SYNC_QUEUE))!;
    expect(depth.waiting + depth.running + depth.retrying).toBe(left);
    expect(depth.running).toBe(0);
    expect(queueLine(schema, depth)).toMatch(new RegExp(`^worker queue \\(pg-boss schema ${schema}\\): ${depth.waiting} waiting`));
    const metrics = await worker.runner.metrics.registry.metrics();
    expect(metrics).toContain(`svcsync_queue_jobs{state="waiting"} ${depth.waiting}`);
    expect(metrics).toMatch(/svcsync_queue_oldest_waiting_seconds \d+/);
    // No queue under a schema no worker used.
    expect(await queueDepth(warehouse.db, `${schema}_none`, SYNC_QUEUE)).toBeNull();
    // svcsync status --json carries the same depth, with the schema it was read from.
    const doc = await collectStatusDocument(config, warehouse, Date.now());
    expect(doc.queue).toEqual({ schema, ...depth, oldestWaitingSeconds: doc.queue?.oldestWaitingSeconds });
    expect(doc.organizations.length).toBe(2);
  }, 60_000);

  it("a failed job's backoff is shared: its retry waits in the queue, and the tick cannot queue it sooner", async () => {
    const e: E2E = await startE2E('postgres', { scale: 1, organizations: 1, timeScale: 1 }, {}, await inRunDatabase());
    cleanups.push(() => e.close());
    const schema = bossSchema();
    // A refresh token the service refuses: discovery fails for the whole connection.
    const config: Config = {
      ...e.config,
      connections: [{ ...e.config.connections[0]!, refresh_token: '1000.not-a-token-the-service-knows' }],
      daemon: { ...e.config.daemon, retry_backoff_ms: 20 * 60_000 },
      worker: { schema, concurrency: 1, slice_minutes: 10 },
    };
    const { worker, finished } = await startedWorker(e, config);
    const until = Date.now() + 20_000;
    while (Date.now() < until && finished.length === 0) await new Promise((r) => setTimeout(r, 100));
    expect(finished[0]?.outcome.status).toBe('failed');
    const spec = worker.runner.jobs().find((j) => j.jobClass === 'organizations')!;
    const now = e.sandbox.clock.now();
    const c = new pg.Client({ connectionString: PG_BASE_URL });
    await c.connect();
    const { rows } = await c
      .query<{ data: unknown; wait: number }>(
        `SELECT data, extract(epoch FROM start_after - now()) AS wait FROM "${schema}".job WHERE name = $1 AND state = 'created'`,
        [SYNC_QUEUE],
      )
      .finally(() => c.end());
    expect(rows.map((r) => r.data)).toEqual([{ id: spec.id, failures: 1 }]);
    // At the first fire of its schedule after the 20-minute backoff, on whichever worker is free then.
    const expected = (spec.cron.next(now + 20 * 60_000) - now) / 1000;
    expect(Math.abs(Number(rows[0]!.wait) - expected)).toBeLessThan(15);
    // The next tick finds the retry waiting: no second job, so no worker retries sooner.
    expect(await worker.send(spec)).toBeNull();
  }, 60_000);

  it('webhooks on a worker: 50 hooks queue one extra run after the debounce, which reads the change', async () => {
    const e: E2E = await startE2E(
      'postgres',
      { scale: 12, organizations: 2, timeScale: 1 },
      { connection: { webhook_secret: 'worker-hook-secret-0123456789', families: ['inventory'], streams: ['inventory.sales_orders'] } },
      await inRunDatabase(),
    );
    cleanups.push(() => e.close());
    expect((await e.sync()).exitCode).toBe(0);
    const schema = bossSchema();
    const config: Config = {
      ...e.config,
      daemon: {
        ...e.config.daemon,
        schedules: { ...e.config.daemon.schedules, incremental: '0 3 * * *', settings: '0 4 * * *', reconcile: 'off' },
        hooks: { ...e.config.daemon.hooks, debounce_ms: 1_000 },
      },
      worker: { schema, concurrency: 2, slice_minutes: 10 },
    };
    const { worker, finished } = await startedWorker(e, config);
    const org = e.sandbox.organizations()[0]!.organization_id;
    e.sandbox.advanceClock(60_000);
    expect(e.sandbox.mutate({ organizationId: org, modify: 1, streams: ['sales_orders'] }).modified).toBe(1);
    const target = { connection: 'e2e', family: 'inventory', organizationId: org, streams: [] };
    const results = [];
    for (let i = 0; i < 50; i++) results.push(await worker.receiveHook(target));
    expect(results[0]).toMatchObject({ kind: 'accepted', coalesced: false });
    expect(results.slice(1).every((r) => r.kind === 'accepted' && r.coalesced)).toBe(true);
    expect((await worker.receiveHook({ ...target, organizationId: '999999' })).kind).toBe('unknown');
    const job = `e2e/${org}/incremental`;
    const until = Date.now() + 30_000;
    while (Date.now() < until && !finished.some((f) => f.job === job)) await new Promise((r) => setTimeout(r, 100));
    await drained(schema, [worker], 20_000);
    expect(finished.filter((f) => f.job === job).map((f) => f.outcome.status)).toEqual(['ok']);
    const p = e.warehouse.sql.param;
    const rows = await e.query<{ id: string; m: string }>(
      'SELECT salesorder_id AS id, last_modified_time AS m FROM inventory_sales_orders ' +
        `WHERE organization_id = ${p(1)} AND _deleted_at IS NULL`,
      [org],
    );
    const truth = e.sandbox.truth(org, 'inventory', 'sales_orders');
    expect(new Map(rows.map((r) => [String(r.id), instant(r.m)]))).toEqual(
      new Map(truth.map((r) => [String(r['salesorder_id']), instant(r['last_modified_time'])])),
    );
    const metrics = await worker.runner.metrics.registry.metrics();
    expect(metrics).toContain('svcsync_hooks_coalesced_total{connection="e2e"} 49');
    expect(metrics).toContain('svcsync_hook_runs_total{connection="e2e",result="started"} 1');
  }, 90_000);

  it('refuses a SQLite warehouse with exit 2 and says why (CLI)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcsync-worker-'));
    const path = join(dir, 'svcsync.yaml');
    writeFileSync(
      path,
      [
        `warehouse: "sqlite:${join(dir, 'warehouse.db')}"`,
        'connections:',
        '  - { name: a, client_id: x, client_secret: y, refresh_token: z }',
        '',
      ].join('\n'),
    );
    let stderr = '';
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr += String(chunk);
      return true;
    });
    try {
      expect(await main(['node', 'svcsync', 'worker', '--config', path, '--log-level', 'silent'])).toBe(ExitCode.config);
    } finally {
      spy.mockRestore();
    }
    expect(stderr).toContain('needs a Postgres warehouse');
    expect(stderr).toContain('svcsync daemon');
  });
});
