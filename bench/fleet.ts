/**
 * `npm run bench -- --only fleet` (or `node dist/bench/fleet.js`): issue 12's fleet benchmark.
 *
 * 1,000 small organizations in the sandbox at their real plan limits (free: 100 requests a
 * window, 1,000 a day, 5 at once), on a clock 15 times faster than real: the sandbox's window
 * and svcsync's `window_ms` are both 4 s, and the 15-minute incremental schedule fires every
 * real minute (`* * * * *`), so one real minute is a quarter hour of sandbox time. For the
 * daemon and for 1, 2 and 4 `svcsync worker` processes, each against a fresh Postgres database:
 *
 * - current from empty: real and sandbox time until every organization's streams have a cursor,
 *   against the bound the quota sets (each organization's minimum requests at 100 per window);
 * - steady state: the CPU (user + system, from /proc) all svcsync processes use over two
 *   schedule fires, as CPU per organization-hour of sandbox time and as the share of one core
 *   the same work takes on a real 15-minute schedule;
 * - peak RSS per process (VmHWM); requests against the minimum.
 *
 * Options: --orgs N (1000), --modes daemon,1,2,4, --fires N (2), --pg URL, --json FILE, --profile DIR
 * (restart the processes under --cpu-prof once current: the profiles then cover steady state).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startSandbox, type Sandbox } from '../sandbox/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '..', '..', 'bin', 'svcsync.js');
const TIME_SCALE = 15;
const WINDOW_MS = 60_000 / TIME_SCALE;
/** Small organizations' incremental lists with no detail or child requests (billing.plans is a settings stream, synced daily). */
const STREAMS = ['billing.recurring_expenses', 'billing.events'];
const FAMILY = 'billing';
const PER_PAGE = 200;
const CLK_TCK = 100;

interface Options {
  orgs: number;
  modes: string[];
  fires: number;
  pgUrl: string;
  json: string | null;
  /** Restart the processes under `--cpu-prof` once current, so the profiles cover steady state only. */
  profile: string | null;
}

function options(argv: string[]): Options {
  const get = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return {
    orgs: Number(get('orgs') ?? 1000),
    modes: (get('modes') ?? 'daemon,1,2,4').split(','),
    fires: Number(get('fires') ?? 2),
    pgUrl: get('pg') ?? process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test',
    json: get('json') ?? null,
    profile: get('profile') ?? null,
  };
}

export interface FleetResult {
  mode: string;
  processes: number;
  organizations: number;
  currentRealS: number;
  currentSandboxMin: number;
  quotaBoundSandboxMin: number;
  firstSyncRequests: number;
  firstSyncMinimum: number;
  steadyRequests: number;
  steadyMinimum: number;
  steadyCpuS: number;
  cpuMsPerOrgHour: number;
  coreShareAt15Min: number;
  peakRssMb: number[];
  problems: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function freshDatabase(pgUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const database = `svcsync_fleet_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${database}"`);
  await admin.end();
  const url = new URL(pgUrl);
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await c.end();
    },
  };
}

/** Pages a client must read of a list of n records: at least one; one more when the last page is full. */
const pages = (n: number): number => Math.max(1, Math.ceil(n / PER_PAGE) + (n > 0 && n % PER_PAGE === 0 ? 1 : 0));

function minimumFirstSync(sandbox: Sandbox): number {
  let total = 0;
  for (const org of sandbox.organizations())
    for (const name of STREAMS) {
      total += pages(sandbox.count(org.ids[FAMILY], FAMILY, name.split('.')[1]!));
    }
  return total;
}

async function count(db: pg.Client, text: string): Promise<number> {
  const r = await db.query<{ n: string }>(text).catch(() => ({ rows: [{ n: '0' }] }));
  return Number(r.rows[0]?.n ?? 0);
}

async function runMode(mode: string, opts: Options): Promise<FleetResult> {
  const workers = mode === 'daemon' ? 0 : Number(mode);
  const sandbox = await startSandbox({
    seed: 31,
    scale: 8,
    organizations: opts.orgs,
    plan: 'free',
    timeScale: TIME_SCALE,
    limits: { window_ms: 60_000 },
  });
  const db = await freshDatabase(opts.pgUrl);
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-fleet-'));
  const config = join(dir, 'svcsync.yaml');
  writeFileSync(
    config,
    [
      `warehouse: "${db.url}"`,
      'log_level: warn',
      `sync: { per_page: ${PER_PAGE} }`,
      'worker: { schema: pgboss, concurrency: 4 }',
      'daemon:',
      '  max_concurrent_jobs: 8',
      '  schedules: { incremental: "* * * * *", settings: "0 0 * * *", reconcile: "off", backfill: "off" }',
      'connections:',
      '  - name: fleet',
      `    accounts_url: ${sandbox.url}`,
      `    client_id: ${sandbox.credentials.client_id}`,
      `    client_secret: ${sandbox.credentials.client_secret}`,
      `    refresh_token: ${sandbox.credentials.refresh_token}`,
      '    plan: free',
      `    limits: { window_ms: ${WINDOW_MS} }`,
      `    families: [${FAMILY}]`,
      `    streams: [${STREAMS.join(', ')}]`,
      '',
    ].join('\n'),
  );
  const procs: ChildProcess[] = [];
  const problems: string[] = [];
  const spawnOne = (args: string[], node: string[] = []): void => {
    const child = spawn(process.execPath, [...node, BIN, ...args, '--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err = (err + String(d)).slice(-2000)));
    child.on('exit', (code) => {
      if (code !== 0 && code !== null) problems.push(`${args[0]} exited ${code}: ${err.slice(-300)}`);
    });
    procs.push(child);
  };
  const watch = new pg.Client({ connectionString: db.url });
  const started = Date.now();
  try {
    const spawnAll = (node: string[] = []): void => {
      if (workers === 0) spawnOne(['daemon'], node);
      else for (let i = 0; i < workers; i++) spawnOne(['worker'], node);
    };
    spawnAll();
    await sleep(2_000);
    await watch.connect();
    // Current from empty: every organization's streams have a cursor and no pass in progress.
    const want = opts.orgs * STREAMS.length;
    for (;;) {
      const done = await count(watch, 'SELECT count(*) AS n FROM _svcsync_streams WHERE cursor IS NOT NULL AND pass_kind IS NULL');
      if (done >= want) break;
      if (Date.now() - started > 20 * 60_000) throw new Error(`not current after 20 minutes (${done} of ${want} streams)`);
      await sleep(1_000);
    }
    const currentRealS = (Date.now() - started) / 1000;
    const firstLog = sandbox.requestLog();
    const firstSyncRequests = firstLog.total - (firstLog.byEndpoint['POST /oauth/v2/token'] ?? 0);
    if (opts.profile) {
      const old = procs.splice(0);
      for (const p of old) p.kill('SIGTERM');
      await Promise.all(old.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))));
      spawnAll(['--cpu-prof', '--cpu-prof-dir', opts.profile]);
      await sleep(5_000);
    }
    // Steady state: `fires` whole schedule fires, measured from 2 s before one (the previous fire's
    // jobs long done) to 2 s before the fire after the last.
    let untilNext = 60_000 - (Date.now() % 60_000) - 2_000;
    if (untilNext < 0) untilNext += 60_000;
    await sleep(untilNext);
    sandbox.resetRequestLog();
    const pids = procs.map((p) => p.pid!);
    const cpuBefore = pids.reduce((a, pid) => a + cpuSeconds(pid), 0);
    await sleep(opts.fires * 60_000);
    const steadyCpuS = pids.reduce((a, pid) => a + cpuSeconds(pid), 0) - cpuBefore;
    const steadyLog = sandbox.requestLog();
    const steadyRequests = steadyLog.total - (steadyLog.byEndpoint['POST /oauth/v2/token'] ?? 0);
    // Each fire reads one page per stream per organization when nothing changed.
    const steadyMinimum = opts.fires * opts.orgs * STREAMS.length;
    const sandboxHours = (opts.fires * 15) / 60;
    const firstSyncMinimum = minimumFirstSync(sandbox);
    const perOrgMax = Math.max(
      ...sandbox.organizations().map((o) => STREAMS.reduce((a, n) => a + pages(sandbox.count(o.ids[FAMILY], FAMILY, n.split('.')[1]!)), 0)),
    );
    return {
      mode: workers === 0 ? 'daemon' : `${workers} worker${workers > 1 ? 's' : ''}`,
      processes: procs.length,
      organizations: opts.orgs,
      currentRealS,
      currentSandboxMin: (currentRealS * TIME_SCALE) / 60,
      quotaBoundSandboxMin: Math.ceil(perOrgMax / 100),
      firstSyncRequests,
      firstSyncMinimum,
      steadyRequests,
      steadyMinimum,
      steadyCpuS,
      cpuMsPerOrgHour: (steadyCpuS * 1000) / (opts.orgs * sandboxHours),
      // On a real 15-minute schedule the same work is spread over 15 times as long.
      coreShareAt15Min: steadyCpuS / (opts.fires * 60 * TIME_SCALE),
      peakRssMb: pids.map(peakRssMb),
      problems,
    };
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))));
    await watch.end().catch(() => undefined);
    await db.drop().catch(() => undefined);
    await sandbox.stop();
  }
}

export function fleetMarkdown(results: FleetResult[]): string {
  const rows = results.map((r) => {
    const sandboxMin = r.currentSandboxMin.toFixed(0);
    const current = `${r.currentRealS.toFixed(0)} s (${sandboxMin} sandbox min; quota bound ${r.quotaBoundSandboxMin} min)`;
    const cells = [
      r.mode,
      String(r.organizations),
      current,
      `${r.firstSyncRequests} / ${r.firstSyncMinimum}`,
      `${r.steadyRequests} / ${r.steadyMinimum}`,
      `${r.cpuMsPerOrgHour.toFixed(0)} ms`,
      `${(r.coreShareAt15Min * 100).toFixed(1)} %`,
      `${r.peakRssMb.map((m) => m.toFixed(0)).join(', ')} MB`,
    ];
    return `| ${cells.join(' | ')} |${r.problems.length ? ` ${r.problems.join('; ')}` : ''}`;
  });
  const header = [
    'mode',
    'organizations',
    'current from empty',
    'first-sync requests / minimum',
    'steady requests / minimum',
    'CPU per organization-hour',
    'share of one core, real 15-minute schedule',
    'peak RSS per process',
  ];
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows].join('\n');
}

async function main(): Promise<void> {
  const opts = options(process.argv.slice(2));
  const results: FleetResult[] = [];
  for (const mode of opts.modes) {
    process.stdout.write(`fleet ${mode} ... `);
    const r = await runMode(mode, opts);
    results.push(r);
    console.log(JSON.stringify(r));
  }
  console.log(`\n${fleetMarkdown(results)}`);
  if (opts.json) writeFileSync(opts.json, JSON.stringify(results, null, 2));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  });
}
