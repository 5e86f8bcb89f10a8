import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { tableDefinitions } from '../../src/catalog/tables.js';
import { openWarehouse } from '../../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli, startCli, STACK_FRAME, type CliResult } from '../helpers/cli-process.js';
import { freshWarehouse, PG_BASE_URL } from '../helpers/dialects.js';
import { freePort, startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';
import { writeProcessConfig } from '../helpers/process-config.js';

/**
 * What svcsync does when the warehouse fails under it, as a user meets it: the real CLI in its
 * own process, a real SQLite file or Postgres server, and a fault caused from outside. Every
 * case checks the exit code, that the message names the warehouse and a next step with no
 * stack trace, and that a clean run afterwards holds exactly the sandbox's truth, with no
 * duplicate key and no run left `running` in `_svcsync_runs`.
 */

/** Resolves once the sandbox has answered `n` requests for the organization. */
function requestsReach(sandbox: Sandbox, organizationId: string, n: number): Promise<void> {
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      if ((sandbox.requestLog().byOrganization[organizationId] ?? 0) < n) return;
      clearInterval(poll);
      resolve();
    }, 5);
  });
}

/** Told well: the exit code, the warehouse named, a next step, no stack trace, no "unexpected failure". */
function expectToldWell(r: CliResult, code: number, warehouse: string, next: RegExp): void {
  const text = `${r.stdout}\n${r.stderr}`;
  expect(r.code, text.slice(-3000)).toBe(code);
  expect(text).toContain(warehouse);
  expect(text).toMatch(next);
  expect(text).not.toMatch(STACK_FRAME);
  expect(text).not.toContain('unexpected failure');
}

const RUN_AGAIN = /run (the same command )?again|Run again/;

/**
 * A run that follows one killed by a fault takes its organizations over and waits one
 * per-minute window before its first request (the dead owner's requests are unknown): a short
 * window keeps these tests short.
 */
const LIMITS = '{ per_minute: 1000000, per_day: 100000000, window_ms: 500 }';

/** After a clean run: the contacts equal the truth, no key twice in any table, no run `running`. */
async function expectConverged(url: string, sandbox: Sandbox): Promise<void> {
  const w = await openWarehouse(url, { poolSize: 2 });
  try {
    for (const org of sandbox.organizations()) {
      const rows = await w.db
        .selectFrom('inventory_contacts')
        .select('contact_id')
        .where('organization_id', '=', org.organization_id)
        .where('_deleted_at', 'is', null)
        .execute();
      const truth = sandbox.truth(org.organization_id, 'inventory', 'contacts').map((r) => String(r['contact_id']));
      expect(rows.map((r) => String(r['contact_id'])).sort(), `contacts of ${org.organization_id}`).toEqual(truth.sort());
    }
    for (const table of tableDefinitions(CATALOG)) {
      const key = table.primaryKey.map((c) => `"${c}"`).join(', ');
      const r = await w.db.executeQuery<{ n: number | string }>(
        CompiledQuery.raw(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM "${table.name}" GROUP BY ${key} HAVING COUNT(*) > 1) d`),
      );
      expect(Number(r.rows[0]!.n), `duplicate keys in ${table.name}`).toBe(0);
    }
    const running = await w.db.selectFrom('_svcsync_runs').select(['run_id', 'status']).where('status', '=', 'running').execute();
    expect(running, 'runs left running').toEqual([]);
  } finally {
    await w.close();
  }
}

async function abandonedRuns(url: string): Promise<Array<{ abandoned_at: string | null }>> {
  const w = await openWarehouse(url, { poolSize: 1 });
  try {
    return await w.db.selectFrom('_svcsync_runs').select(['abandoned_at']).where('status', '=', 'abandoned').execute();
  } finally {
    await w.close();
  }
}

describe('warehouse faults on SQLite (real processes)', () => {
  let sandbox: Sandbox;
  let dir: string;
  let file: string;
  let url: string;
  const config = (warehouse: Record<string, unknown> = {}): string =>
    writeProcessConfig(sandbox, { url, retry_s: 1, busy_timeout_s: 0.2, ...warehouse }, [], {
      path: join(dir, `svcsync-${Date.now()}.yaml`),
      limits: LIMITS,
    });

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11, scale: 24, organizations: 2, unlimited: true, faults: { latencyMs: 60 } });
  });
  afterAll(async () => {
    await sandbox?.stop();
  });
  afterEach(() => {
    chmodSync(dir, 0o755);
    rmSync(dir, { recursive: true, force: true });
  });
  const fresh = (): void => {
    dir = mkdtempSync(join(tmpdir(), 'svcsync-faults-'));
    chmodSync(dir, 0o755);
    file = join(dir, 'warehouse.db');
    url = `sqlite:${file}`;
  };

  it('a full disk in the middle of the first migration leaves nothing behind: `svcsync migrate` then completes it', async () => {
    fresh();
    const full = await runCli(['sync', '--config', config({ pragmas: ['max_page_count = 150'] })]);
    expectToldWell(full, 4, file, /free space on the disk that holds/);
    expect(full.stderr).toMatch(/out of space/);
    expect(full.stderr).toContain('svcsync migrate');
    const migrate = await runCli(['migrate', '--config', config()]);
    expect(migrate.code, migrate.stderr).toBe(0);
    const clean = await runCli(['sync', '--config', config()]);
    expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
    await expectConverged(url, sandbox);
  });

  it('a full disk during a sync: exit 4 with the summary of what was committed; the next run continues', async () => {
    fresh();
    expect((await runCli(['migrate', '--config', config()])).code).toBe(0);
    const db = new SQLite(file);
    const pages = Number(db.pragma('page_count', { simple: true }));
    db.close();
    // A few pages more than the empty warehouse: some pages commit, then the file is full.
    const full = await runCli(['sync', '--config', config({ pragmas: [`max_page_count = ${pages + 12}`] })]);
    expectToldWell(full, 4, file, RUN_AGAIN);
    expect(full.stdout).toMatch(/✗ warehouse: the SQLite warehouse .* is out of space/);
    expect(full.stdout).toMatch(/Result: partial/);
    expect(full.stdout).toMatch(/[1-9]\d* written/);
    const clean = await runCli(['sync', '--config', config()]);
    expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
    await expectConverged(url, sandbox);
  });

  it('a write lock held past the busy timeout: exit 4 naming the file and the lock; the next run closes the ghost, converges', async () => {
    fresh();
    expect((await runCli(['migrate', '--config', config()])).code).toBe(0);
    const organizationId = sandbox.organizations()[0]!.organization_id;
    const before = sandbox.requestLog().byOrganization[organizationId] ?? 0;
    const run = startCli(['sync', '--config', config()]);
    await requestsReach(sandbox, organizationId, before + 4);
    const holder = new SQLite(file, { timeout: 5_000 });
    holder.exec('BEGIN IMMEDIATE');
    // Held until the run has ended: it cannot record its end either.
    const locked = await run.done;
    holder.exec('ROLLBACK');
    holder.close();
    expectToldWell(locked, 4, file, /close the program that writes to/);
    expect(`${locked.stdout}${locked.stderr}`).toContain('another program holds a write lock');
    const clean = await runCli(['sync', '--config', config()]);
    expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
    await expectConverged(url, sandbox);
    const closed = await abandonedRuns(url);
    expect(closed.length).toBe(1);
    expect(closed[0]!.abandoned_at).toBeTruthy();
  });

  it('a read-only file: exit 2 naming the file and that it must be writable; nothing written', async () => {
    fresh();
    expect((await runCli(['sync', '--config', config()])).code).toBe(0);
    chmodSync(file, 0o444);
    const ro = await runCli(['sync', '--config', config()], { unprivileged: true });
    expectToldWell(ro, 2, file, /writable/);
    expect(ro.stderr).toMatch(/is read-only/);
    chmodSync(file, 0o644);
    const clean = await runCli(['sync', '--config', config()]);
    expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
    await expectConverged(url, sandbox);
  });

  it('a read-only folder (SQLite cannot write the files beside the database): exit 2 naming the folder', async () => {
    fresh();
    expect((await runCli(['sync', '--config', config()])).code).toBe(0);
    chmodSync(file, 0o666);
    chmodSync(dir, 0o555);
    const ro = await runCli(['sync', '--config', config()], { unprivileged: true });
    expectToldWell(ro, 2, file, new RegExp(`its folder ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    chmodSync(dir, 0o755);
    const clean = await runCli(['sync', '--config', config()]);
    expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
    await expectConverged(url, sandbox);
  });

  it('a folder that cannot be created (under /proc; through a file): exit 2 at once, naming the path', async () => {
    fresh();
    const yaml = config();
    for (const path of ['/proc/svcsync-nope/w.db', `${yaml}/w.db`]) {
      url = `sqlite:${path}`;
      const r = await runCli(['sync', '--config', config()]);
      expectToldWell(r, 2, path, /`warehouse:`/);
    }
  });

  it('a typo in the folder: the new, empty warehouse is told once at warn, naming it; a run on it later says nothing of it', async () => {
    fresh();
    const typo = join(dir, 'wharehouse', 'w.db');
    url = `sqlite:${typo}`;
    const first = await runCli(['migrate', '--config', config()], { env: { SVCSYNC_LOG_LEVEL: 'warn' } });
    expect(first.code, first.stderr.slice(-2000)).toBe(0);
    const told = first.stderr.split('\n').filter((l) => l.includes('new, empty SQLite warehouse'));
    expect(told, first.stderr.slice(-2000)).toHaveLength(1);
    const line = JSON.parse(told[0]!) as Record<string, unknown>;
    expect(line['level']).toBe('warn');
    expect(line['folder']).toBe(join(dir, 'wharehouse'));
    expect(String(line['msg'])).toContain(`creating a new, empty SQLite warehouse at ${typo} (and the folder ${join(dir, 'wharehouse')})`);
    expect(String(line['msg'])).toContain('check `warehouse:`');
    const again = await runCli(['migrate', '--config', config()], { env: { SVCSYNC_LOG_LEVEL: 'warn' } });
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    expect(again.stderr).not.toContain('new, empty SQLite warehouse');
  });

  it('two processes migrating a fresh file at once: both succeed, each migration recorded once (four tries)', async () => {
    for (let attempt = 0; attempt < 4; attempt++) {
      fresh();
      const yaml = config({ retry_s: 30, busy_timeout_s: 2 });
      const [a, b] = await Promise.all([runCli(['migrate', '--config', yaml]), runCli(['migrate', '--config', yaml])]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const db = new SQLite(file, { readonly: true });
      const names = db.prepare('SELECT name FROM _svcsync_migrations').all() as Array<{ name: string }>;
      db.close();
      expect(new Set(names.map((n) => n.name)).size).toBe(names.length);
      rmSync(dir, { recursive: true, force: true });
    }
    fresh();
  });
});

describe('warehouse faults on Postgres (real processes)', () => {
  let sandbox: Sandbox;
  let dir: string;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 12, scale: 24, organizations: 2, unlimited: true, faults: { latencyMs: 80 } });
    dir = mkdtempSync(join(tmpdir(), 'svcsync-pgfaults-'));
  });
  afterAll(async () => {
    await sandbox?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const admin = async (connectionString = PG_BASE_URL): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString });
    c.on('error', () => undefined);
    await c.connect();
    return c;
  };
  /** The shared server's warehouse as messages show it: the URL without its options. */
  const shown = PG_BASE_URL.replace(/\?.*$/, '');

  /** A fresh schema, and the URL a child process uses for it, tagged so its sessions can be found. */
  async function warehouseFor(tag: string, options = ''): Promise<{ url: string; appName: string }> {
    const tw = await freshWarehouse('postgres');
    const appName = `svcsync-faults-${tag}-${process.pid}`;
    const extra = options ? encodeURIComponent(` ${options}`) : '';
    return { url: `${tw.url}${extra}&application_name=${appName}`, appName };
  }

  async function terminate(where: string, params: unknown[]): Promise<number> {
    const c = await admin();
    try {
      const r = await c.query<{ pid: number }>(
        `SELECT pg_terminate_backend(pid) AS done, pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND ${where}`,
        params,
      );
      return r.rowCount ?? 0;
    } finally {
      await c.end();
    }
  }

  it("every session of the process terminated mid-sync: exit 4 naming the warehouse and the lost connection, never 'busy'", async () => {
    const { url, appName } = await warehouseFor('all');
    const yaml = writeProcessConfig(sandbox, { url, retry_s: 10 }, [], { path: join(dir, 'all.yaml'), limits: LIMITS });
    const organizationId = sandbox.organizations()[0]!.organization_id;
    const before = sandbox.requestLog().byOrganization[organizationId] ?? 0;
    const run = startCli(['sync', '--config', yaml]);
    await requestsReach(sandbox, organizationId, before + 5);
    // The URL's application_name names the pool's sessions and the lease session alike.
    const killed = await terminate('application_name = $1', [appName]);
    expect(killed).toBeGreaterThanOrEqual(2);
    const r = await run.done;
    expectToldWell(r, 4, shown, RUN_AGAIN);
    expect(r.stdout).not.toMatch(/busy/);
    expect(r.stdout).not.toContain('another svcsync process');
    expect(r.stdout).toMatch(/lock connection to .* ended/);
    const clean = await runCli(['sync', '--config', yaml]);
    expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
    await expectConverged(url, sandbox);
  });

  it('only the lease session terminated: the organizations it held fail with that cause (exit 4); the next run converges', async () => {
    const { url, appName } = await warehouseFor('lease');
    const yaml = writeProcessConfig(sandbox, { url, retry_s: 10 }, [], { path: join(dir, 'lease.yaml'), limits: LIMITS });
    const organizationId = sandbox.organizations()[0]!.organization_id;
    const before = sandbox.requestLog().byOrganization[organizationId] ?? 0;
    const run = startCli(['sync', '--config', yaml]);
    await requestsReach(sandbox, organizationId, before + 5);
    // The lease session is the one holding advisory locks.
    const lease = "application_name = $1 AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)";
    expect(await terminate(lease, [appName])).toBe(1);
    const r = await run.done;
    expectToldWell(r, 4, shown, RUN_AGAIN);
    expect(r.stdout).toMatch(/failed/);
    expect(r.stdout).not.toContain('another svcsync process');
    const clean = await runCli(['sync', '--config', yaml]);
    expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
    await expectConverged(url, sandbox);
  });

  it('a table held under ACCESS EXCLUSIVE past statement_timeout: exit 4 naming table and setting; the next run converges', async () => {
    const { url } = await warehouseFor('lock', '-c statement_timeout=1000');
    const yaml = writeProcessConfig(sandbox, { url, retry_s: 2 }, [], { path: join(dir, 'lock.yaml'), limits: LIMITS });
    expect((await runCli(['migrate', '--config', yaml])).code).toBe(0);
    const schema = /search_path=([^&\s%]+)/.exec(decodeURIComponent(url))![1]!;
    const holder = await admin();
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE "${schema}".inventory_contacts IN ACCESS EXCLUSIVE MODE`);
    const r = await runCli(['sync', '--config', yaml]);
    await holder.query('ROLLBACK');
    await holder.end();
    expectToldWell(r, 4, shown, /statement_timeout/);
    expect(r.stdout).toMatch(/table inventory_contacts/);
    const clean = await runCli(['sync', '--config', yaml]);
    expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
    await expectConverged(url, sandbox);
  });

  it.each([
    ['a port nothing listens on', 'refused'],
    ['a host that never answers', 'silent'],
  ])('%s at start: exit 2 within seconds, naming host and port and what to check; nothing sent', async (_name, kind) => {
    const sockets: Socket[] = [];
    const silent = kind === 'silent' ? createServer((s) => sockets.push(s)) : null;
    const port = silent
      ? await new Promise<number>((resolve) => silent.listen(0, '127.0.0.1', () => resolve((silent.address() as AddressInfo).port)))
      : await freePort();
    try {
      const url = `postgres://svc:s3cret-pw@127.0.0.1:${port}/test`;
      const yaml = writeProcessConfig(sandbox, { url, retry_s: 60 }, [], { path: join(dir, `${kind}.yaml`), limits: LIMITS });
      const before = sandbox.requestLog().total + sandbox.requestLog().token.refresh;
      const started = Date.now();
      const r = await runCli(['sync', '--config', yaml]);
      // The connect timeout is 5 s; warehouse.retry_s (60 s here) is for connections lost later.
      expect(Date.now() - started).toBeLessThan(20_000);
      expectToldWell(r, 2, `127.0.0.1:${port}`, /check the host and port in `warehouse:`/);
      expect(r.stderr).not.toMatch(/connection was lost|retrying/);
      expect(r.stdout + r.stderr).not.toContain('s3cret-pw');
      expect(sandbox.requestLog().total + sandbox.requestLog().token.refresh).toBe(before);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => (silent ? silent.close(resolve) : resolve(undefined)));
    }
  });

  describe('on a private server the test restarts', () => {
    let server: PrivatePostgres | undefined;
    afterAll(() => server?.stop());

    it('the server restarted mid-sync: exit 4 naming the warehouse, nothing lost; the next run converges', async () => {
      server = await startPrivatePostgres();
      const yaml = writeProcessConfig(sandbox, { url: server.url, retry_s: 30 }, [], { path: join(dir, 'restart.yaml'), limits: LIMITS });
      const organizationId = sandbox.organizations()[0]!.organization_id;
      const before = sandbox.requestLog().byOrganization[organizationId] ?? 0;
      const run = startCli(['sync', '--config', yaml]);
      await requestsReach(sandbox, organizationId, before + 5);
      server.restart();
      const r = await run.done;
      expectToldWell(r, 4, `postgres://postgres@127.0.0.1:${server.port}/postgres`, RUN_AGAIN);
      expect(r.stdout).not.toContain('another svcsync process');
      const clean = await runCli(['sync', '--config', yaml]);
      expect(clean.code, clean.stderr.slice(-2000)).toBe(0);
      await expectConverged(server.url, sandbox);
    });
  });
});
