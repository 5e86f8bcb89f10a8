import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import PgBoss from 'pg-boss';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { TICK_QUEUE } from '../../src/scheduler/worker.js';
import { freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { ID_FIELDS, truthIds, type Family } from '../helpers/e2e.js';

const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));
const ORGANIZATIONS = 200;
const WORKERS = 4;
/** The sandbox's and svcsync's per-minute window, scaled down from 60 s so the test runs in about a minute. */
const WINDOW_MS = 6_000;
/** How often this test fires the schedule tick (pg-boss's cron fires it once a minute in production). */
const TICK_MS = 3_000;
/** The incremental schedule: every 20 s. */
const CRON_MS = 20_000;
const LEASE_TTL_S = 4;
/**
 * The stated margin on top of the design's bound (the next fire of the schedule plus a tick):
 * the requeued job waits behind that fire's other 200 jobs, on three workers left, on two cores.
 */
const MARGIN_MS = 25_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Proc {
  child: ChildProcess;
  owner: string;
  stderr: string;
  exited: Promise<number | null>;
}

function startWorker(configPath: string): Proc {
  const child = spawn(process.execPath, [BIN, 'worker', '--config', configPath, '--grace-ms', '3000'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const p: Proc = {
    child,
    owner: `${hostname()}/${child.pid}`,
    stderr: '',
    exited: new Promise((resolve) => child.on('close', (code) => resolve(code))),
  };
  child.stderr.on('data', (d) => {
    p.stderr = (p.stderr + String(d)).slice(-200_000);
    if (process.env['SVCSYNC_FLEET_LOGS']) appendFileSync(join(process.env['SVCSYNC_FLEET_LOGS'], `${child.pid}.log`), String(d));
  });
  return p;
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe();
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

describe('four worker processes and 200 organizations on one Postgres warehouse', () => {
  let sandbox: Sandbox | undefined;
  let tw: TestWarehouse | undefined;
  let w: Warehouse | undefined;
  let boss: PgBoss | undefined;
  const procs: Proc[] = [];
  afterAll(async () => {
    for (const p of procs) {
      p.child.kill('SIGCONT');
      p.child.kill('SIGKILL');
    }
    await boss?.stop({ graceful: false, wait: true }).catch(() => undefined);
    await w?.close();
    await tw?.drop();
    await sandbox?.stop();
  });

  it('SIGKILL one mid-job, SIGSTOP another past its lease: no 429, one caller per organization at once, all equal the truth', async () => {
    // Free-plan limits per organization (100 a window, 1,000 a day, 5 at once), the window scaled to 6 s.
    sandbox = await startSandbox({
      seed: 21,
      scale: 6,
      organizations: ORGANIZATIONS,
      plan: 'free',
      limits: { window_ms: WINDOW_MS },
      faults: { latencyMs: 20 },
    });
    tw = await freshWarehouse('postgres');
    const schema = `t_${process.env['SVCSYNC_TEST_RUN'] ?? 'x'}_pgboss_${randomBytes(4).toString('hex')}`;
    const configPath = join(mkdtempSync(join(tmpdir(), 'svcsync-fleet-')), 'svcsync.yaml');
    writeFileSync(
      configPath,
      [
        `warehouse: "${tw.url}"`,
        'log_level: info',
        'sync: { per_page: 5 }',
        `leases: { ttl_seconds: ${LEASE_TTL_S}, heartbeat_seconds: 1 }`,
        `worker: { schema: ${schema}, concurrency: 3 }`,
        'daemon:',
        '  shutdown_grace_ms: 3000',
        `  schedules: { incremental: "*/${CRON_MS / 1000} * * * * *", settings: "0 0 * * *", reconcile: "off", backfill: "off" }`,
        'connections:',
        '  - name: fleet',
        `    accounts_url: ${sandbox.url}`,
        `    client_id: ${sandbox.credentials.client_id}`,
        `    client_secret: ${sandbox.credentials.client_secret}`,
        `    refresh_token: ${sandbox.credentials.refresh_token}`,
        '    plan: free',
        `    limits: { window_ms: ${WINDOW_MS} }`,
        '    families: [inventory]',
        '    streams: [inventory.contacts]',
        '',
      ].join('\n'),
    );
    for (let i = 0; i < WORKERS; i++) procs.push(startWorker(configPath));
    w = await openWarehouse(tw.url, { poolSize: 2 });
    const wh = w;
    const leasesOf = async (owner: string): Promise<Array<{ organization_id: string; generation: string | number }>> =>
      wh.db.selectFrom('_svcsync_leases').select(['organization_id', 'generation']).where('owner', '=', owner).execute();

    // The schedule tick, as pg-boss's cron would send it, but every 3 s.
    await until('pg-boss installed by the workers', 60_000, async () => {
      const r = await sql`SELECT 1 FROM information_schema.tables WHERE table_schema = ${schema} AND table_name = 'queue'`.execute(wh.db);
      return r.rows.length > 0;
    });
    boss = new PgBoss({ connectionString: tw.url, schema, supervise: false, schedule: false, migrate: false, max: 2 });
    boss.on('error', () => undefined);
    await boss.start();
    const ticker = setInterval(() => void boss?.send(TICK_QUEUE, {}).catch(() => undefined), TICK_MS);

    try {
      // Discovery (once, by whichever worker took it), then every organization's first sync queued at once.
      await until('200 organizations discovered', 90_000, async () => {
        const r = await wh.db
          .selectFrom('_svcsync_organizations')
          .select(({ fn }) => fn.countAll<number>().as('n'))
          .executeTakeFirst();
        return Number(r?.n ?? 0) >= ORGANIZATIONS;
      });

      // The first syncs of all 200 (queued at discovery) finish; from then on the incremental
      // schedule runs every organization every 20 s.
      await until('every first sync finished', 240_000, async () => {
        const r = await wh.db
          .selectFrom('_svcsync_streams')
          .select(({ fn }) => fn.countAll<number>().as('n'))
          .where('cursor', 'is not', null)
          .where('pass_kind', 'is', null)
          .executeTakeFirst();
        return Number(r?.n ?? 0) >= ORGANIZATIONS;
      });
      // New and changed records everywhere, so the next incremental runs have pages to read.
      sandbox.mutate({ create: 2, modify: 2, streams: ['contacts'] });

      // SIGKILL a worker that holds organizations mid-job.
      const killed = procs[0]!;
      const killedHeld = await until('the first worker to hold a lease', 60_000, async () => {
        const held = await leasesOf(killed.owner);
        return held.length > 0 ? held : null;
      });
      killed.child.kill('SIGKILL');
      const killedAt = Date.now();
      expect(await killed.exited).toBeNull();

      // SIGSTOP another that holds organizations; it stays stopped well past its lease.
      const paused = procs[1]!;
      const pausedHeld = await until('the second worker to hold a lease', 60_000, async () => {
        const held = await leasesOf(paused.owner);
        return held.length > 0 ? held : null;
      });
      paused.child.kill('SIGSTOP');
      const pausedAt = Date.now();

      // Both workers' organizations are taken over by the others: the tick queues them again, the
      // dead lock sessions are gone (at once for the killed one, after the lease's time-to-live for
      // the stopped one), and each new owner waits one window before its first request.
      const takenOver = async (held: Array<{ organization_id: string; generation: string | number }>, owner: string) =>
        until(
          `the organizations of ${owner} taken over`,
          CRON_MS + TICK_MS + LEASE_TTL_S * 1000 + WINDOW_MS + MARGIN_MS + 30_000,
          async () => {
            const rows = await wh.db
              .selectFrom('_svcsync_leases')
              .select(['organization_id', 'generation', 'owner', 'acquired_at'])
              .where(
                'organization_id',
                'in',
                held.map((h) => h.organization_id),
              )
              .execute();
            const moved = rows.filter((r) => {
              const before = held.find((h) => h.organization_id === r.organization_id)!;
              return Number(r.generation) > Number(before.generation) && r.owner !== owner;
            });
            return moved.length === held.length ? moved : null;
          },
        );
      const killedMoved = await takenOver(killedHeld, killed.owner);
      for (const r of killedMoved) {
        // Resumed within the schedule's period, a tick, and a margin (then one window before the first request).
        expect(Date.parse(String(r.acquired_at)) - killedAt, `organization ${r.organization_id}`).toBeLessThan(
          CRON_MS + TICK_MS + MARGIN_MS,
        );
      }
      const pausedMoved = await takenOver(pausedHeld, paused.owner);
      for (const r of pausedMoved) {
        // Not before its lease lapsed: the stopped worker's lock session lasts its time-to-live.
        expect(Date.parse(String(r.acquired_at)) - pausedAt).toBeGreaterThanOrEqual(LEASE_TTL_S * 1000 - 1_000);
      }

      // What the stopped worker had written, before it wakes.
      const pausedRows = async (): Promise<Set<string>> => {
        const rows = await wh.db
          .selectFrom('inventory_contacts as t')
          .innerJoin('_svcsync_runs as r', 'r.run_id', 't._run_id')
          .select(['t.organization_id', 't.contact_id', 't._run_id'])
          .where('r.process', '=', paused.owner)
          .where(
            't.organization_id',
            'in',
            pausedHeld.map((h) => h.organization_id),
          )
          .execute();
        return new Set(rows.map((r) => `${String(r.organization_id)}|${String(r.contact_id)}|${String(r._run_id)}`));
      };
      const writtenBefore = await pausedRows();
      paused.child.kill('SIGCONT');

      // Everything converges: every organization's streams equal the truth.
      const streams = (await wh.db.selectFrom('_svcsync_streams').select('stream').distinct().execute()).map((r) => String(r.stream));
      expect(streams).toContain('inventory.contacts');
      const differing = async (): Promise<string[]> => {
        const out: string[] = [];
        for (const name of streams) {
          const [family, stream] = name.split('.') as [Family, string];
          const id = ID_FIELDS[family][stream]!;
          const rows = await wh.db
            .selectFrom(`${family}_${stream}`)
            .select(['organization_id', id])
            .where('_deleted_at', 'is', null)
            .execute();
          const stored = new Map<string, string[]>();
          for (const r of rows as Array<Record<string, unknown>>) {
            const list = stored.get(String(r['organization_id'])) ?? [];
            list.push(String(r[id]));
            stored.set(String(r['organization_id']), list);
          }
          for (const org of sandbox!.organizations()) {
            const want = truthIds(sandbox!, org.organization_id, family, stream).join(',');
            if ((stored.get(org.organization_id) ?? []).sort().join(',') !== want) out.push(`${name} of ${org.organization_id}`);
          }
        }
        return out;
      };
      let left: string[] = [];
      await until('every organization equal to the truth', 180_000, async () => {
        left = await differing();
        return left.length === 0;
      }).catch(async (err: unknown) => {
        // What the sessions were doing, to find what held the rest up.
        const activity = await sql<Record<string, unknown>>`SELECT pid, application_name, state, wait_event_type, wait_event,
            left(query, 120) AS query, now() - state_change AS for FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`
          .execute(wh.db)
          .catch(() => ({ rows: [] }));
        throw new Error(
          `${String(err)}: ${left.length} differ, e.g. ${left.slice(0, 5).join('; ')}; sessions: ${JSON.stringify(activity.rows)}`,
        );
      });

      // The stopped worker wrote nothing for the organizations it lost once it woke.
      const writtenAfter = await pausedRows();
      expect([...writtenAfter].filter((k) => !writtenBefore.has(k))).toEqual([]);
      // No 429 of any code, and never two processes in flight on one organization.
      const log = sandbox.requestLog();
      expect(log.rateLimited).toEqual({ '44': 0, '45': 0, '1070': 0 });
      expect(log.overlaps).toEqual([]);
      // Every worker called, each under its own User-Agent.
      const callers = Object.keys(log.byCaller).filter((c) => c.startsWith('svcsync/'));
      expect(callers.length).toBeGreaterThanOrEqual(3);
      console.info(
        `[fleet] ${ORGANIZATIONS} organizations, ${WORKERS} workers: ${log.total} requests; by caller ${JSON.stringify(log.byCaller)}; ` +
          `killed held ${killedHeld.length}, stopped held ${pausedHeld.length}`,
      );
    } finally {
      clearInterval(ticker);
    }

    // The survivors drain on SIGTERM and exit 0.
    for (const p of procs.slice(1)) p.child.kill('SIGTERM');
    for (const p of procs.slice(1)) expect(await p.exited, p.stderr.slice(-3000)).toBe(0);
  }, 420_000);
});
