/**
 * `npm run bench`: svcsync's throughput and memory benchmark (issue 4, "Performance").
 *
 * Every scenario forks two processes: an unthrottled sandbox (dist/bench/sandbox-child.js)
 * and the svcsync process (dist/bench/sync-child.js), so the load generator and svcsync never
 * share an event loop. The driver (this file) only waits, asks for the sandbox's request log,
 * computes the minimum number of requests from the sandbox's record counts, and prints.
 *
 * Scenarios:
 *   list-sqlite / list-postgres  a full sync of the list-only streams (no detail or child
 *                                requests) of N organizations: list records/s, requests vs minimum;
 *                                then the bare loader (bench/bare-child.ts), narrow and same-rows, on
 *                                the same sandbox process and records, and svcsync / bare (issue 14).
 *                                memory-sqlite too.
 *   catalog-sqlite               a full sync of the whole catalog (detail and child requests
 *                                included) at a smaller scale: requests vs minimum, records/s.
 *   memory-sqlite                one stream with 1,000,000 records in one organization:
 *                                peak RSS, and RSS as the records pass 10%, 25%, 50%, 75%, 100%.
 *   sandbox                      bench/sandbox-throughput (issue 3), when it has been built.
 *   http-client                  the client CPU of a GET with `fetch` and with svcsync's `httpGet`
 *                                (node:http), a 35 KB and a 200 KB answer (bench/http-client.ts).
 *   fleet                        only with --only fleet: 1,000 organizations kept current by the
 *                                daemon and by 1, 2 and 4 workers (bench/fleet.ts; ~15 minutes).
 *   status-page                  only with --only status-page: the status page of 1,000 and 100
 *                                organizations, its size and its render time in Chromium
 *                                (bench/status-page.ts; about a minute).
 *   history-sqlite / history-postgres  only with --only history-sqlite,history-postgres (either or
 *                                both): the whole catalog at scale 1,000, one organization, with
 *                                history off and on, then days of a 5 % change: the time ratio and
 *                                the rows and bytes the history tables gain a day (bench/history.ts;
 *                                about twenty minutes for both).
 *
 * Options: `node dist/bench/run.js --help` (the HELP text below).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { CATALOG, childStreamsOf } from '../src/catalog/index.js';
import { qualifiedName, tableName, type StreamSpec } from '../src/catalog/types.js';
import type { RequestLog } from '../sandbox/index.js';
import { exited, kill, waitMessage } from './child-processes.js';
import { summarizeProfile, type CpuProfile, type ProfileSummary } from './profile.js';
import { renderHttpClient, runHttpClientBench, type HttpClientFigures } from './http-client.js';
import { renderRequests, runRequestsBench, type RequestsFigures } from './requests.js';
import type { BareResult, BareSpec, SandboxMessage, SandboxSpec, SqlStat, StreamRef, SyncResult, SyncSpec } from './protocol.js';

const here = dirname(fileURLToPath(import.meta.url));

const HELP = `Usage: npm run bench -- [options]   (or: node dist/bench/run.js [options])

svcsync's benchmark: throughput, memory and requests against an unthrottled sandbox, each
scenario in its own processes. Figures and how to read them: docs/benchmarks.md.

Options (also as env: BENCH_SCALE, BENCH_ORGS, BENCH_MEM_RECORDS, BENCH_PG_URL; BENCH_KEEP_DB=1
keeps each SQLite warehouse and Postgres database and prints where):
  --quick                 small scales, for a fast check (~30 s)
  --scale N               records per list stream per organization (default 20000; quick 2000)
  --orgs N                organizations (default 2)
  --catalog-scale N       scale of the whole-catalog run (default 1000; quick 200)
  --mem-records N         records of the memory run (default 1000000; quick 100000)
  --mem-stream F.S        stream of the memory run (default billing.events)
  --only a,b              run only these scenarios (list-sqlite, list-postgres, resync-sqlite, resync-postgres,
                          resync-full-sqlite, catalog-sqlite, memory-sqlite, sandbox, requests, http-client;
                          fleet and status-page only when named)
  --skip a,b              skip these scenarios
  --repeat N              run each throughput scenario N times (default 3; --quick 1); with a bare
                          loader, svcsync and bare runs alternate in pairs (svcsync first, then bare
                          first, ...) and the report gives medians: svcsync's time, bare records/s and
                          the ratio of each pair. Every time is printed, with the load average
  --profile               run list-sqlite once more under --cpu-prof (not counted) and print
                          the top self-time functions
  --profile-streams F.S,… profile these streams instead of the list-only set (implies --profile)
  --sql-stats             in the profiled run, also time every SQLite statement by table
  --experiment a,b        apply diagnostic changes in the svcsync process (pragma:<pragma
                          text>; see bench/sync-child.ts); the figures are then
                          labelled as an experiment and never written to the docs
  --profile-postgres      the same, into Postgres (profile-postgres)
  --no-bare               skip the bare loader runs and the reading floor (svcsync alone, for a quick A/B)
  --pg URL                the Postgres server of the Postgres scenarios (default BENCH_PG_URL, else
                          postgres://postgres@127.0.0.1:5432/test); each run gets a fresh database
  --per-page N            records a page, svcsync's per_page and the bare loader's (default 200); two
                          values split CPU into a part per request and a part per record
  --concurrency N         requests in flight per organization (default 10, the paid-plan limit); also
                          the http-client scenario's requests in flight
  --http-requests N       GETs each http-client measurement times (default 3000; quick 500), after a
                          tenth as many to warm up; --repeat runs, alternating fetch and node:http first
  --timeout S             bound on each scenario, seconds (default 600)
  --write-docs            write the figures into docs/benchmarks.md (between its markers)
  --json FILE             write every figure as JSON
  --json                  (no file) print every figure as one JSON object on stdout, the requests
                          scenario's at its top level, and the progress and tables on stderr
  --requests-orgs a,b     the requests scenario's organizations (reference, ten-times-faster, small;
                          default all)
  --requests-days N       days of the requests scenario's simulated daemon (default 7)
  --help                  print this text
`;

const repoRoot = resolve(here, '..', '..');

// ------------------------------------------------------------------ options

interface Options {
  quick: boolean;
  scale: number;
  orgs: number;
  catalogScale: number;
  memRecords: number;
  memStream: string;
  only: string[] | null;
  skip: string[];
  profile: boolean;
  concurrency: number;
  timeoutS: number;
  writeDocs: boolean;
  /** --json FILE, or '-' for --json without a file: one JSON object on stdout. */
  json: string | null;
  requestsOrgs: string[] | null;
  requestsDays: number;
  pgUrl: string;
  perPage: number;
  repeat: number;
  profileStreams: string[] | null;
  sqlStats: boolean;
  experiments: string[];
  /** --no-bare: skip the bare loader runs (a quicker look at svcsync alone). */
  noBare: boolean;
  /** --profile-postgres: the list-only run into Postgres under --cpu-prof (not counted). */
  profilePostgres: boolean;
  /** --http-requests: GETs each measurement of the http-client scenario times. */
  httpRequests: number;
}

/** A wrong command line: printed as one line, without a stack. */
class UsageError extends Error {}

/** --json FILE writes there; --json alone prints on stdout ('-'). */
function jsonTarget(flag: string | true | undefined): string | null {
  if (flag === undefined) return null;
  return flag === true ? '-' : flag;
}

function parseArgs(argv: string[]): Options | 'help' {
  if (argv.includes('--help') || argv.includes('-h')) return 'help';
  const env = process.env;
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument ${a} (node dist/bench/run.js --help lists the options)`);
    const [k, v] = a.slice(2).split('=', 2) as [string, string | undefined];
    if (v !== undefined) flags.set(k, v);
    else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) flags.set(k, argv[++i]!);
    else flags.set(k, true);
  }
  const known = [
    'quick',
    'scale',
    'orgs',
    'catalog-scale',
    'mem-records',
    'mem-stream',
    'only',
    'skip',
    'profile',
    'concurrency',
    'timeout',
    'write-docs',
    'json',
    'pg',
    'repeat',
    'profile-streams',
    'sql-stats',
    'experiment',
    'no-bare',
    'profile-postgres',
    'http-requests',
    'per-page',
    'requests-orgs',
    'requests-days',
  ];
  for (const k of flags.keys()) {
    if (!known.includes(k)) throw new UsageError(`unknown option --${k} (node dist/bench/run.js --help lists them)`);
  }
  const quick = flags.has('quick');
  const num = (name: string, envName: string | null, dflt: number): number => {
    const raw = flags.get(name) ?? (envName ? env[envName] : undefined);
    if (raw === undefined || raw === true) return dflt;
    const n = Number(String(raw).replace(/_/g, ''));
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number`);
    return n;
  };
  const list = (name: string): string[] | null => {
    const raw = flags.get(name);
    return typeof raw === 'string'
      ? raw
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : null;
  };
  return {
    quick,
    scale: num('scale', 'BENCH_SCALE', quick ? 2000 : 20_000),
    orgs: num('orgs', 'BENCH_ORGS', 2),
    catalogScale: num('catalog-scale', null, quick ? 200 : 1000),
    memRecords: Math.min(1_000_000, num('mem-records', 'BENCH_MEM_RECORDS', quick ? 100_000 : 1_000_000)),
    memStream: typeof flags.get('mem-stream') === 'string' ? (flags.get('mem-stream') as string) : 'billing.events',
    only: list('only'),
    skip: list('skip') ?? [],
    profile: flags.has('profile'),
    concurrency: num('concurrency', null, 10),
    timeoutS: num('timeout', null, 600),
    writeDocs: flags.has('write-docs'),
    json: jsonTarget(flags.get('json')),
    requestsOrgs: list('requests-orgs'),
    requestsDays: Math.max(1, num('requests-days', null, 7)),
    pgUrl:
      typeof flags.get('pg') === 'string'
        ? (flags.get('pg') as string)
        : (env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test'),
    perPage: Math.max(1, num('per-page', null, 200)),
    repeat: Math.max(1, num('repeat', 'BENCH_REPEAT', quick ? 1 : 3)),
    profileStreams: list('profile-streams'),
    sqlStats: flags.has('sql-stats'),
    experiments: list('experiment') ?? [],
    noBare: flags.has('no-bare'),
    profilePostgres: flags.has('profile-postgres'),
    httpRequests: Math.max(1, num('http-requests', null, quick ? 500 : 3000)),
  };
}

// ------------------------------------------------------------------ streams and the minimum

const isOrgList = (s: StreamSpec): boolean => s.primaryKey === 'organization_id';

/** The list-only streams: top-level, no single-record completion by default, no child streams. */
function listOnlyStreams(): StreamSpec[] {
  return CATALOG.filter((s) => !s.parent && !isOrgList(s) && !(s.detail?.defaultEnabled ?? false) && childStreamsOf(s).length === 0);
}

/** The streams a sync with this allowlist touches, as svcsync's selectStreams reads it. */
function selected(allow: readonly string[] | null): { top: StreamSpec[]; children: Map<StreamSpec, StreamSpec[]> } {
  const allowed = (s: StreamSpec): boolean => !allow || allow.includes(qualifiedName(s));
  const wanted = (s: StreamSpec): boolean => allowed(s) || childStreamsOf(s).some(wanted);
  const top = CATALOG.filter((s) => !s.parent && !isOrgList(s) && wanted(s));
  const children = new Map<StreamSpec, StreamSpec[]>();
  const walk = (parent: StreamSpec): void => {
    const kids = childStreamsOf(parent).filter((c) => allowed(c) || childStreamsOf(c).some(allowed));
    children.set(parent, kids);
    kids.forEach(walk);
  };
  top.forEach(walk);
  return { top, children };
}

interface Minimum {
  organizationLists: number;
  listPages: number;
  detail: number;
  children: number;
  total: number;
  listRecords: number;
  childRecords: number;
}

/**
 * The fewest requests a full sync can make, from the sandbox's own record counts:
 * one organization list per family; ceil(n / per_page) pages per list (at least one);
 * one single-record request per record of a stream completed by default; one request per
 * parent for each child stream (the sandbox gives a parent at most 4 children, under a page),
 * except the child lists a parent's single record carries whole (books vendor credits, A48) and
 * those read from a list of all children (inventory refunds, A49: its pages instead).
 */
function minimumRequests(
  families: readonly string[],
  allow: readonly string[] | null,
  counts: Record<string, Record<string, number>>,
  perPage: number,
): Minimum {
  const { top, children } = selected(allow);
  const m: Minimum = {
    organizationLists: families.length,
    listPages: 0,
    detail: 0,
    children: 0,
    total: 0,
    listRecords: 0,
    childRecords: 0,
  };
  for (const perOrg of Object.values(counts)) {
    const visit = (s: StreamSpec, isTop: boolean): void => {
      const n = perOrg[qualifiedName(s)] ?? 0;
      if (isTop) {
        m.listPages += s.paginated ? Math.max(1, Math.ceil(n / perPage)) : 1;
        m.listRecords += n;
        if (s.detail?.defaultEnabled) m.detail += n;
      } else m.childRecords += n;
      for (const c of children.get(s) ?? []) {
        // The sandbox's single records carry these whole, with totals that prove it (A48): no list per parent.
        const embedded = s.detail?.embeddedChildren?.some((e) => e.stream === c.name) ?? false;
        // Many parents: the list of all their children, by pages (A49).
        const allPages = Math.max(1, Math.ceil((perOrg[qualifiedName(c)] ?? 0) / perPage));
        if (!embedded) m.children += c.allList && n >= 2 ? allPages : n;
        visit(c, false);
      }
    };
    for (const s of top) if (families.includes(s.family)) visit(s, true);
  }
  m.total = m.organizationLists + m.listPages + m.detail + m.children;
  return m;
}

function streamsToCount(allow: readonly string[] | null): StreamRef[] {
  const { top, children } = selected(allow);
  const all = new Set<StreamSpec>(top);
  for (const kids of children.values()) kids.forEach((k) => all.add(k));
  return [...all].map((s) => ({ family: s.family, stream: s.name }));
}

// ------------------------------------------------------------------ child processes

type Ready = Extract<SandboxMessage, { type: 'ready' }>;
type LogAnswer = Extract<SandboxMessage, { type: 'log' }>;

async function startSandboxChild(spec: SandboxSpec): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(join(here, 'sandbox-child.js'), [JSON.stringify(spec)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  try {
    const ready = await waitMessage(
      child,
      (m) => ((m as SandboxMessage).type === 'ready' ? (m as Ready) : undefined),
      120_000,
      'sandbox start',
    );
    return { child, ready };
  } catch (error) {
    kill(child);
    throw error;
  }
}

async function sandboxLog(child: ChildProcess): Promise<LogAnswer> {
  const p = waitMessage(child, (m) => ((m as SandboxMessage).type === 'log' ? (m as LogAnswer) : undefined), 30_000, 'sandbox request log');
  child.send({ type: 'log' });
  return p;
}

async function stopSandbox(child: ChildProcess): Promise<void> {
  if (child.connected) child.send({ type: 'stop' });
  await exited(child, 5000);
}

async function runSyncChild(spec: SyncSpec, profileDir: string | null): Promise<SyncResult> {
  const execArgv = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  // Runs with checkpoints read the heap after a full GC there (retained memory).
  if (spec.checkpoints.length) execArgv.push('--expose-gc');
  // BENCH_SYNC_EXEC_PATH runs the svcsync process through a wrapper (a script that execs
  // `valgrind --tool=callgrind node "$@"` gives instruction counts, which a shared machine does not disturb).
  const execPath = process.env['BENCH_SYNC_EXEC_PATH'];
  const child = fork(join(here, 'sync-child.js'), [JSON.stringify(spec)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv,
    ...(execPath ? { execPath } : {}),
  });
  try {
    const result = await waitMessage(
      child,
      (m) => ((m as { type?: string }).type === 'result' ? (m as SyncResult) : undefined),
      spec.timeoutMs + 60_000,
      'svcsync run',
    );
    // Let it exit by itself (a --cpu-prof profile is written at exit).
    await exited(child, profileDir || execPath ? 120_000 : 10_000);
    return result;
  } finally {
    kill(child);
  }
}

// ------------------------------------------------------------------ warehouses

interface BenchWarehouse {
  url: string;
  label: string;
  drop(): Promise<void>;
}

async function freshWarehouse(dialect: 'sqlite' | 'postgres', pgUrl: string): Promise<BenchWarehouse> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'svcsync-bench-'));
    return {
      url: `sqlite:${join(dir, 'warehouse.db')}`,
      label: 'SQLite (file, WAL)',
      // A promise executor turns a throw into a rejection, as an async function would (the caller .catch()es it).
      drop: () =>
        new Promise<void>((resolve) => {
          if (process.env['BENCH_KEEP_DB']) console.log(`kept ${dir}`);
          else rmSync(dir, { recursive: true, force: true });
          resolve();
        }),
    };
  }
  // A fresh database per run, holding a fresh schema selected through search_path (as
  // test/helpers/dialects.ts does). The database and not only a schema: kysely's Migrator
  // looks for its tables in every schema of the database, so a schema alone is not isolated
  // from a test run that has _svcsync_migrations_lock in its own schema (see docs/benchmarks.md).
  const stamp = `${process.pid}_${Date.now().toString(36)}`;
  const database = `svcsync_bench_${stamp}`;
  const schema = `bench_${stamp}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${database}"`);
  await admin.end();
  const base = new URL(pgUrl);
  base.pathname = `/${database}`;
  const inDb = new pg.Client({ connectionString: base.toString() });
  await inDb.connect();
  await inDb.query(`CREATE SCHEMA "${schema}"`);
  await inDb.end();
  return {
    url: `${base.toString()}${base.search ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
    label: 'Postgres (127.0.0.1, fresh database and schema)',
    drop: async () => {
      if (process.env['BENCH_KEEP_DB']) {
        console.log(`kept database ${database}, schema ${schema}`);
        return;
      }
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await c.end();
    },
  };
}

// ------------------------------------------------------------------ scenarios

interface ScenarioResult {
  name: string;
  dialect: 'sqlite' | 'postgres';
  description: string;
  organizations: number;
  scale: number;
  streams: string[];
  elapsedS: number;
  migrateS: number;
  listRecords: number;
  childRecords: number;
  listRecordsPerS: number;
  allRecordsPerS: number;
  minimum: Minimum;
  apiRequests: number;
  tokenRequests: number;
  clientRequests: number;
  requestsByKind: { organizationLists: number; other: number };
  peakRssMb: number;
  startRssMb: number;
  peakHeapUsedMb: number;
  checkpoints: SyncResult['checkpoints'];
  svcsyncCpuPct: number;
  sandboxCpuPct: number;
  /** Records per second of svcsync CPU time (user + system): steadier than wall time on a shared machine. */
  recordsPerCpuS: number;
  /** The same in every repetition (recordsPerCpuS is the kept run's). */
  recordsPerCpuSAll: number[];
  rowsMatch: boolean;
  rowMismatches: string[];
  ok: boolean;
  error?: string;
  profile?: ProfileSummary;
  /** 1-minute load average before and after (other work on the machine skews the figures). */
  load: [number, number];
  /** Times of every repetition, s. */
  times: number[];
  sqlStats?: SqlStat[];
  /** The bare loader on the same sandbox process and records (issue 14): narrow, then same rows. */
  bare?: BareFigures[];
  /** Per repetition, whether the bare runs came before svcsync's. */
  bareFirst?: boolean[];
  /** Re-syncs with nothing changed, after the first sync in the same process (ScenarioSpec.resync). */
  resyncs?: ResyncResult[];
  /**
   * With re-syncs: the bare loader reading the same pages and writing nothing, its time ÷ the
   * first sync's (`ratios` per repetition, `ratio` their median): what no re-sync reading every page can beat.
   */
  readFloor?: { elapsedS: number; cpuPct: number; ratio: number; ratios: number[]; rowsMatch: boolean };
}

/** One kind of re-sync with nothing changed, against the first sync of the same run. */
interface ResyncResult {
  mode: 'incremental' | 'reconcile';
  elapsedS: number;
  /** The re-sync's time ÷ the first sync's, in each repetition; `ratio` is their median. */
  ratios: number[];
  ratio: number;
  /** The same for svcsync's CPU time (steadier on a shared machine). */
  cpuRatios: number[];
  cpuRatio: number;
  written: number;
}

interface ScenarioSpec {
  name: string;
  dialect: 'sqlite' | 'postgres';
  description: string;
  organizations: number;
  scale: number;
  /** Allowlist; null = the whole catalog. */
  streams: string[] | null;
  checkpoints: number[];
  profile: boolean;
  /** Not a measurement: excluded from the targets. */
  counted: boolean;
  /** Also run the bare loader (bench/bare-child.ts) against the same sandbox process and records. */
  bare?: boolean;
  /** After the first sync, re-sync with nothing changed, once in each of these modes. */
  resync?: Array<'incremental' | 'reconcile'>;
}

interface BareFigures {
  shape: BareSpec['shape'];
  /** Postgres type of its raw column. */
  rawType: NonNullable<BareSpec['rawType']>;
  elapsedS: number;
  recordsPerS: number;
  cpuPct: number;
  peakRssMb: number;
  requests: number;
  rowsMatch: boolean;
  /** svcsync's list records/s divided by the bare loader's: issue 14's figure. */
  ratio: number;
  /**
   * The ratio of every repetition (`--repeat`), each svcsync run against the bare run right
   * after it; the report gives their median, so a lucky svcsync run is not set against one bare run.
   */
  ratios: number[];
  /** The bare loader's records/s in every repetition; recordsPerS is their median. */
  recordsPerSAll: number[];
  /** Records per second of the bare process's CPU time (user + system, every thread); with repetitions, their median. */
  recordsPerCpuS: number;
  recordsPerCpuSAll: number[];
  /**
   * svcsync's records per CPU-second ÷ the bare loader's, per repetition, and their median: the
   * fair ratio where the whole of a load's work is in its process (SQLite), as the machine's
   * other load moves wall times far more than CPU times.
   */
  cpuRatio: number;
  cpuRatios: number[];
  error?: string;
}

/** Issue 14's yardstick in one shape, in its own process, against the sandbox svcsync just read. */
async function runBare(
  s: ScenarioSpec,
  opts: Options,
  ready: Ready,
  counts: Array<{ table: string; want: number }>,
  shape: BareSpec['shape'],
  rawType: BareFigures['rawType'],
): Promise<BareFigures> {
  const warehouse = await freshWarehouse(s.dialect, opts.pgUrl);
  try {
    const spec: BareSpec = {
      dialect: s.dialect,
      warehouse: s.dialect === 'sqlite' ? warehouse.url.slice('sqlite:'.length) : warehouse.url,
      sandboxUrl: ready.url,
      credentials: ready.credentials,
      organizations: ready.organizations,
      streams: s.streams ?? [],
      perPage: opts.perPage,
      shape,
      rawType,
    };
    const child = fork(join(here, 'bare-child.js'), [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    try {
      const r = await waitMessage(
        child,
        (m) => ((m as { type?: string }).type === 'bare' ? (m as BareResult) : undefined),
        opts.timeoutS * 1000,
        'bare loader',
      );
      if (r.error !== undefined) throw new Error(`bare loader: ${r.error}`);
      const elapsedS = r.elapsedMs / 1000;
      const recordsPerS = r.records / elapsedS;
      const rowsMatch = counts.every((c) => r.tableRows[c.table] === c.want);
      return {
        shape,
        rawType,
        elapsedS,
        recordsPerS,
        cpuPct: (100 * (r.cpuUserMs + r.cpuSystemMs)) / r.elapsedMs,
        peakRssMb: r.peakRssMb,
        requests: r.requests,
        rowsMatch,
        // Set once svcsync's run of the pair is measured (it may come after this one).
        ratio: NaN,
        ratios: [],
        recordsPerSAll: [recordsPerS],
        recordsPerCpuS: r.records / ((r.cpuUserMs + r.cpuSystemMs) / 1000),
        recordsPerCpuSAll: [],
        cpuRatio: NaN,
        cpuRatios: [],
      };
    } finally {
      kill(child);
    }
  } finally {
    await warehouse.drop().catch(() => undefined);
  }
}

function apiRequestCount(log: RequestLog): { api: number; token: number; orgLists: number } {
  let token = 0;
  let orgLists = 0;
  for (const [endpoint, n] of Object.entries(log.byEndpoint)) {
    if (endpoint.startsWith('POST /oauth')) token += n;
    else if (/\/organizations$/.test(endpoint)) orgLists += n;
  }
  return { api: log.total - token, token, orgLists };
}

/**
 * One run of a scenario: svcsync and, when the scenario has them, the bare loaders against the
 * same sandbox process. `bareFirst` puts the bare runs before svcsync's (repetitions alternate,
 * so neither side always runs on a machine the other has just warmed or loaded).
 */
async function runScenario(s: ScenarioSpec, opts: Options, bareFirst = false): Promise<ScenarioResult> {
  const families = [...new Set((s.streams ?? CATALOG.map(qualifiedName)).map((q) => q.split('.')[0]!))] as StreamRef['family'][];
  const counted = streamsToCount(s.streams);
  const { child: sandbox, ready } = await startSandboxChild({ scale: s.scale, organizations: s.organizations, seed: 42, count: counted });
  const warehouse = await freshWarehouse(s.dialect, opts.pgUrl);
  const load0 = loadavg()[0]!;
  let profileDir: string | null = null;
  try {
    if (s.profile) profileDir = mkdtempSync(join(tmpdir(), 'svcsync-bench-prof-'));
    const tables = counted.map((r) => tableName({ family: r.family, name: r.stream }));
    const withBare = Boolean(s.bare) && !opts.noBare;
    const bareCounts = counted.map((r) => ({
      table: `${r.family}_${r.stream}`,
      want: Object.values(ready.counts).reduce((a, perOrg) => a + (perOrg[`${r.family}.${r.stream}`] ?? 0), 0),
    }));
    // One after the other, each into a fresh warehouse: the two must not share the machine.
    const runBares = async (): Promise<BareFigures[]> => [
      await runBare(s, opts, ready, bareCounts, 'narrow', 'text'),
      await runBare(s, opts, ready, bareCounts, 'same-rows', s.dialect === 'postgres' ? 'jsonb' : 'text'),
    ];
    const bareBefore = withBare && bareFirst ? await runBares() : null;
    // svcsync's requests are counted from here (the bare loaders' requests, when they ran first, are not).
    if (sandbox.connected) sandbox.send({ type: 'reset' });
    const cpuBefore = await sandboxLog(sandbox);
    const result = await runSyncChild(
      {
        warehouseUrl: warehouse.url,
        sandboxUrl: ready.url,
        credentials: ready.credentials,
        families,
        streams: s.streams ?? CATALOG.map(qualifiedName),
        perPage: opts.perPage,
        organizationConcurrency: 4,
        concurrency: opts.concurrency,
        sampleMs: 50,
        checkpoints: s.checkpoints,
        timeoutMs: opts.timeoutS * 1000,
        logLevel: 'warn',
        tables,
        sqlStats: s.profile && opts.sqlStats && s.dialect === 'sqlite',
        experiments: opts.experiments,
        ...(s.resync ? { resync: s.resync } : {}),
      },
      profileDir,
    );
    if (!result.ok && result.elapsedMs === undefined) throw new Error(result.error ?? 'svcsync run failed');
    const after = await sandboxLog(sandbox);
    const minimum = minimumRequests(families, s.streams, ready.counts, opts.perPage);
    const req = apiRequestCount(after.log);
    // Rows per table against the sandbox's counts.
    const mismatches: string[] = [];
    for (const r of counted) {
      const table = tableName({ family: r.family, name: r.stream });
      const want = Object.values(ready.counts).reduce((a, perOrg) => a + (perOrg[`${r.family}.${r.stream}`] ?? 0), 0);
      const got = result.tableRows[table] ?? -1;
      if (got !== want) mismatches.push(`${table}: ${got} rows, sandbox has ${want}`);
    }
    const elapsedS = result.elapsedMs / 1000;
    const sandboxCpuMs = after.cpuUserMs + after.cpuSystemMs - (cpuBefore.cpuUserMs + cpuBefore.cpuSystemMs);
    const out: ScenarioResult = {
      name: s.name,
      dialect: s.dialect,
      description: s.description,
      organizations: s.organizations,
      scale: s.scale,
      streams: s.streams ?? ['(whole catalog)'],
      elapsedS,
      migrateS: result.migrateMs / 1000,
      listRecords: minimum.listRecords,
      childRecords: minimum.childRecords,
      listRecordsPerS: minimum.listRecords / elapsedS,
      allRecordsPerS: (minimum.listRecords + minimum.childRecords) / elapsedS,
      minimum,
      apiRequests: req.api,
      tokenRequests: req.token,
      clientRequests: result.clientRequests,
      requestsByKind: { organizationLists: req.orgLists, other: req.api - req.orgLists },
      peakRssMb: result.peakRssMb,
      startRssMb: result.startRssMb,
      peakHeapUsedMb: result.peakHeapUsedMb,
      checkpoints: result.checkpoints,
      svcsyncCpuPct: (100 * (result.cpuUserMs + result.cpuSystemMs)) / result.elapsedMs,
      sandboxCpuPct: (100 * sandboxCpuMs) / result.elapsedMs,
      recordsPerCpuS: (minimum.listRecords + minimum.childRecords) / ((result.cpuUserMs + result.cpuSystemMs) / 1000),
      recordsPerCpuSAll: [],
      rowsMatch: mismatches.length === 0,
      rowMismatches: mismatches,
      ok: result.ok && mismatches.length === 0,
      load: [load0, loadavg()[0]!],
      times: [elapsedS],
      ...(result.sqlStats ? { sqlStats: result.sqlStats } : {}),
      ...(result.error ? { error: result.error } : {}),
    };
    if (result.resyncs) {
      const firstCpuMs = result.cpuUserMs + result.cpuSystemMs;
      out.resyncs = result.resyncs.map((x) => {
        const ratio = x.elapsedMs / result.elapsedMs;
        const cpuRatio = (x.cpuUserMs + x.cpuSystemMs) / firstCpuMs;
        return { mode: x.mode, elapsedS: x.elapsedMs / 1000, ratio, ratios: [ratio], cpuRatio, cpuRatios: [cpuRatio], written: x.written };
      });
    }
    // The floor of a re-sync that reads every page: the same pages fetched and parsed, nothing written.
    if (s.resync && !opts.noBare) {
      const floor = await runBare(s, opts, ready, bareCounts, 'read-only', 'text');
      const ratio = floor.elapsedS / elapsedS;
      out.readFloor = { elapsedS: floor.elapsedS, cpuPct: floor.cpuPct, ratio, ratios: [ratio], rowsMatch: floor.rowsMatch };
    }
    if (withBare) {
      out.bare = bareBefore ?? (await runBares());
      for (const b of out.bare) {
        b.ratio = out.listRecordsPerS / b.recordsPerS;
        b.ratios = [b.ratio];
        b.cpuRatio = out.recordsPerCpuS / b.recordsPerCpuS;
        b.cpuRatios = [b.cpuRatio];
      }
      out.bareFirst = [bareFirst];
    }
    if (profileDir) {
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (file) {
        out.profile = summarizeProfile(JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as CpuProfile, repoRoot);
        const keep = join(repoRoot, 'dist', 'bench-profiles');
        mkdirSync(keep, { recursive: true });
        const dest = join(keep, `${s.name}.cpuprofile`);
        writeFileSync(dest, readFileSync(join(profileDir, file)));
        out.profile.file = dest;
      }
    }
    return out;
  } finally {
    await stopSandbox(sandbox);
    await warehouse.drop().catch((e: unknown) => console.error(`could not drop the benchmark warehouse: ${String(e)}`));
    if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  }
}

/** Issue 3's sandbox benchmark, when it exists (it is someone else's; this only calls it). */
async function sandboxThroughput(timeoutS: number, quick: boolean): Promise<{ ran: boolean; output: string; note: string }> {
  const compiled = join(here, 'sandbox-throughput.js');
  if (!existsSync(compiled)) return { ran: false, output: '', note: 'bench/sandbox-throughput.ts is not built yet (issue 3); skipped.' };
  return new Promise((res) => {
    const child = spawn(process.execPath, [compiled, quick ? '3' : '10'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const t = setTimeout(() => kill(child), timeoutS * 1000);
    child.on('exit', (code, signal) => {
      clearTimeout(t);
      res({ ran: true, output: output.trim(), note: signal ? `stopped after ${timeoutS} s (${signal})` : `exit ${code}` });
    });
  });
}

// ------------------------------------------------------------------ output

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function machine(): { cores: number; cpu: string; memGb: number; node: string; date: string; commit: string } {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'migrations'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    if (dirty) commit += ' (+ uncommitted changes in src/)';
  } catch {
    /* not a git checkout */
  }
  return {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    commit,
  };
}

interface Targets {
  sqlite: number;
  postgres: number;
  rssMb: number;
}
const TARGETS: Targets = { sqlite: 20_000, postgres: 10_000, rssMb: 300 };

function verdict(ok: boolean): string {
  return ok ? 'met' : '**NOT met**';
}

/** One Markdown table row: `| a | b | c |`. */
function tableRow(cells: ReadonlyArray<string | number>): string {
  return `| ${cells.join(' | ')} |`;
}

/** The command that reproduces this run, as a user types it. */
function commandLine(): string {
  const args = process.argv.slice(2).filter((a) => a !== '--write-docs');
  return args.length ? `npm run bench -- ${args.join(' ')}` : 'npm run bench';
}

function renderMarkdown(
  results: ScenarioResult[],
  sandbox: { ran: boolean; output: string; note: string } | null,
  opts: Options,
  requests: RequestsFigures | null,
  httpClient: HttpClientFigures | null = null,
): string {
  const m = machine();
  const lines: string[] = [];
  lines.push(`Measured ${m.date} on ${m.cores} cores (${m.cpu}), ${m.memGb} GB RAM, Node ${m.node}, commit ${m.commit}.`);
  if (opts.experiments.length) lines.push(`**Experiment (${opts.experiments.join(', ')}), not svcsync as committed.**`);
  lines.push(
    `Command: \`${commandLine()}\` (per_page ${opts.perPage}, ` +
      `${opts.concurrency} requests in flight per organization, 4 organizations at once).`,
  );
  if (results.length) {
    lines.push('');
    lines.push(
      '| scenario | warehouse | records | time | list records/s | all records/s | requests (API) | minimum | peak RSS | svcsync CPU ' +
        '| records per CPU-s | sandbox CPU | load avg | rows = sandbox |',
    );
    lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
    for (const r of results) {
      const time =
        r.times.length > 1 ? `${fmt(r.elapsedS, 1)} s (median of ${r.times.map((t) => fmt(t, 1)).join(', ')})` : `${fmt(r.elapsedS, 1)} s`;
      const records = r.childRecords ? `${fmt(r.listRecords)} list + ${fmt(r.childRecords)} child` : fmt(r.listRecords);
      lines.push(
        tableRow([
          r.name,
          r.dialect,
          records,
          time,
          fmt(r.listRecordsPerS),
          fmt(r.allRecordsPerS),
          fmt(r.apiRequests),
          fmt(r.minimum.total),
          `${fmt(r.peakRssMb)} MB`,
          `${fmt(r.svcsyncCpuPct)}%`,
          fmt(r.recordsPerCpuS),
          `${fmt(r.sandboxCpuPct)}%`,
          r.load.map((l) => l.toFixed(1)).join('→'),
          r.rowsMatch ? 'yes' : 'NO: ' + r.rowMismatches.join('; '),
        ]),
      );
    }
    lines.push('');
    lines.push(
      'Requests: API calls the sandbox answered (token requests are counted apart); minimum = organization lists (one per family) ' +
        `+ ceil(records / ${opts.perPage}) pages per list (at least one) ` +
        '+ one single-record request per record of a stream completed by default ' +
        "+ one request per parent for each child stream, from the sandbox's own counts. A re-sync scenario's " +
        "requests made include its re-syncs'.",
    );
    lines.push('');
    lines.push('| scenario | org lists | list pages | detail | children | minimum | made | token requests | client counted |');
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of results) {
      lines.push(
        tableRow([
          r.name,
          r.minimum.organizationLists,
          fmt(r.minimum.listPages),
          fmt(r.minimum.detail),
          fmt(r.minimum.children),
          fmt(r.minimum.total),
          fmt(r.apiRequests),
          r.tokenRequests,
          fmt(r.clientRequests),
        ]),
      );
    }
  }
  const withBare = results.filter((r) => r.bare);
  if (withBare.length) {
    lines.push('');
    lines.push(
      'Against the bare loader (bench/bare-child.ts: pages 10 at a time through svcsync’s own HTTP client, `JSON.parse`, ' +
        'one transaction per page; SQLite: ' +
        'one prepared upsert per row; Postgres: one multi-row upsert per table per page, text columns, pages committed ' +
        'over a pool of 4 connections), against the same sandbox process and records as svcsync, in two shapes, each ' +
        'into a fresh warehouse; with repetitions, svcsync and bare runs alternate in pairs (svcsync first, then bare ' +
        'first, ...) and every figure is the median (svcsync: the run of median time; bare records/s and the ratio: ' +
        'medians over the pairs). ' +
        '*narrow*: per record its id, three columns and the raw JSON (text), no child tables. *same rows*: the tables and ' +
        'rows svcsync writes (every catalog column, objects and arrays as JSON text, the raw JSON, jsonb on Postgres, and ' +
        'one table per child array), without svcsync’s conversions: svcsync ÷ same rows is its overhead for the same data. ' +
        '*÷ bare* divides records per second of wall time; *÷ bare, CPU* records per second of each process’s CPU time ' +
        '(every thread; on Postgres the server’s work is in neither). Issue 14 targets svcsync ≥ 0.80 × bare.',
    );
    lines.push('');
    lines.push(
      '| scenario | bare shape | svcsync list records/s | bare records/s | svcsync ÷ bare | svcsync ÷ bare, CPU | bare time | ' +
        'bare CPU | bare peak RSS | bare rows = sandbox |',
    );
    lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---|');
    const each = (x: number, xs: number[]): string =>
      xs.length > 1 ? `${x.toFixed(2)} (median of ${xs.map((y) => y.toFixed(2)).join(', ')})` : x.toFixed(2);
    for (const r of withBare)
      for (const b of r.bare!)
        lines.push(
          tableRow([
            r.name,
            b.shape === 'narrow' ? 'narrow' : 'same rows',
            fmt(r.listRecordsPerS),
            fmt(b.recordsPerS),
            each(b.ratio, b.ratios),
            each(b.cpuRatio, b.cpuRatios),
            `${fmt(b.elapsedS, 1)} s`,
            `${fmt(b.cpuPct)}%`,
            `${fmt(b.peakRssMb)} MB`,
            b.rowsMatch ? 'yes' : 'NO',
          ]),
        );
  }
  const resynced = results.filter((r) => r.resyncs?.length);
  if (resynced.length) {
    lines.push('');
    lines.push(
      'Re-sync with nothing changed: after the first sync, the same process syncs again from the same sandbox (each re-sync ' +
        "in turn); its time and CPU against the first sync's, the median of the repetitions' ratios. Target: ≤ 0.30.",
    );
    lines.push('');
    lines.push('| scenario | warehouse | re-sync | first sync | re-sync time | time ÷ first | CPU ÷ first | rows written |');
    lines.push('|---|---|---|---:|---:|---:|---:|---:|');
    const each = (xs: number[]): string => (xs.length > 1 ? ` (${xs.map((x) => x.toFixed(2)).join(', ')})` : '');
    for (const r of resynced)
      for (const x of r.resyncs!)
        lines.push(
          tableRow([
            r.name,
            r.dialect,
            x.mode,
            `${fmt(r.elapsedS, 1)} s`,
            `${fmt(x.elapsedS, 1)} s`,
            `${x.ratio.toFixed(2)}${each(x.ratios)}`,
            `${x.cpuRatio.toFixed(2)}${each(x.cpuRatios)}`,
            fmt(x.written),
          ]),
        );
    const floors = resynced.filter((r) => r.readFloor);
    if (floors.length) {
      lines.push('');
      lines.push(
        'The floor: the bare loader reading the same pages (10 at a time, `JSON.parse`) and writing nothing, its time ÷ the ' +
          "first sync's. A re-sync that reads every page (a reconcile; the incremental one reads every page of the lists the " +
          'server cannot sort) cannot take less.',
      );
      lines.push('');
      lines.push('| scenario | warehouse | read only | ÷ first sync | records received = sandbox |');
      lines.push('|---|---|---:|---:|---|');
      for (const r of floors)
        lines.push(
          tableRow([
            r.name,
            r.dialect,
            `${fmt(r.readFloor!.elapsedS, 1)} s`,
            `${r.readFloor!.ratio.toFixed(2)}${each(r.readFloor!.ratios)}`,
            r.readFloor!.rowsMatch ? 'yes' : 'NO',
          ]),
        );
    }
  }
  const mem = results.find((r) => r.name.startsWith('memory'));
  if (mem && mem.checkpoints.length) {
    lines.push('');
    lines.push(
      `Memory run (${mem.streams.join(', ')}, ${fmt(mem.listRecords)} records, one organization, SQLite): ` +
        `RSS of the svcsync process as the records pass (sampled every 50 ms; at start ${fmt(mem.startRssMb)} MB).`,
    );
    lines.push('');
    lines.push('| records read | at | RSS now | peak RSS so far | V8 heap used | heap after full GC |');
    lines.push('|---:|---:|---:|---:|---:|---:|');
    for (const c of mem.checkpoints)
      lines.push(
        tableRow([
          fmt(c.records),
          `${fmt(c.atMs / 1000, 1)} s`,
          `${fmt(c.rssMb)} MB`,
          `${fmt(c.peakRssMb)} MB`,
          `${fmt(c.heapUsedMb)} MB`,
          c.heapAfterGcMb === undefined ? '–' : `${fmt(c.heapAfterGcMb, 1)} MB`,
        ]),
      );
    lines.push('');
    lines.push(
      '"Heap after full GC" is what the process still holds at that point (the run calls gc() at each checkpoint, after reading RSS): ' +
        'flat means memory does not grow with the data.',
    );
  }
  // Every target is a figure of a sync scenario: none without one (--only requests, --only http-client).
  if (results.length) lines.push('', 'Targets (issue 4):', '');
  const sq = results.find((r) => r.name === 'list-sqlite');
  const pgr = results.find((r) => r.name === 'list-postgres');
  if (sq) {
    const met = verdict(sq.listRecordsPerS >= TARGETS.sqlite);
    lines.push(`- SQLite >= ${fmt(TARGETS.sqlite)} list records/s: ${fmt(sq.listRecordsPerS)} — ${met}`);
  }
  if (pgr) {
    const met = verdict(pgr.listRecordsPerS >= TARGETS.postgres);
    lines.push(`- Postgres >= ${fmt(TARGETS.postgres)} list records/s: ${fmt(pgr.listRecordsPerS)} — ${met}`);
  }
  // A re-sync scenario's sandbox answered its re-syncs too: its requests are not one sync's.
  const once = results.filter((r) => !r.resyncs?.length);
  const reqOk = once.every((r) => r.apiRequests === r.minimum.total);
  const requestCounts = once.map((r) => `${r.name} ${fmt(r.apiRequests)}/${fmt(r.minimum.total)}`).join(', ');
  if (once.length) lines.push(`- exactly the minimum number of requests: ${requestCounts} — ${verdict(reqOk)}`);
  if (mem) {
    const first = mem.checkpoints[0];
    const last = mem.checkpoints[mem.checkpoints.length - 1];
    const growth =
      first && last ? ` (RSS ${fmt(first.rssMb)} MB at ${fmt(first.records)} records, ${fmt(last.rssMb)} MB at ${fmt(last.records)})` : '';
    const met = verdict(mem.peakRssMb < TARGETS.rssMb && mem.listRecords >= 1_000_000);
    const short = mem.listRecords < 1_000_000 ? ' (this run did not reach 1,000,000 records)' : '';
    lines.push(`- peak RSS < ${TARGETS.rssMb} MB at ${fmt(mem.listRecords)} records: ${fmt(mem.peakRssMb)} MB${growth} — ${met}${short}`);
  }
  const failed = results.filter((r) => !r.ok);
  if (failed.length) {
    lines.push('');
    for (const r of failed) lines.push(`- ${r.name} did not finish cleanly: ${r.error ?? r.rowMismatches.join('; ')}`);
  }
  if (requests) {
    lines.push('');
    lines.push(renderRequests(requests));
  }
  if (httpClient) {
    lines.push('');
    lines.push(renderHttpClient(httpClient));
  }
  if (sandbox) {
    lines.push('');
    lines.push(`Sandbox throughput (bench/sandbox-throughput, issue 3): ${sandbox.ran ? sandbox.note : sandbox.note}`);
    if (sandbox.ran && sandbox.output) {
      lines.push('');
      lines.push('```');
      lines.push(...sandbox.output.split('\n').slice(-25));
      lines.push('```');
    }
  }
  for (const r of results) {
    if (!r.profile) continue;
    lines.push('');
    lines.push(
      `CPU profile of the svcsync process, ${r.name} (\`node --cpu-prof\`, ${fmt(r.profile.totalMs / 1000, 1)} s sampled): top self time.`,
    );
    lines.push('');
    lines.push('| self | % | function | where |');
    lines.push('|---:|---:|---|---|');
    for (const f of r.profile.top) lines.push(`| ${fmt(f.selfMs)} ms | ${fmt(f.pct, 1)} | ${f.name} | ${f.where} |`);
    lines.push('');
    if (r.sqlStats?.length) {
      lines.push('SQLite statements (wall time inside better-sqlite3, by statement shape):');
      lines.push('');
      lines.push('| statement | executions | prepare | run |');
      lines.push('|---|---:|---:|---:|');
      for (const q of r.sqlStats.slice(0, 12))
        lines.push(`| \`${q.shape.replace(/\|/g, '\\|')}\` | ${fmt(q.count)} | ${fmt(q.prepareMs)} ms | ${fmt(q.executeMs)} ms |`);
      lines.push('');
    }
    lines.push(
      'svcsync functions by inclusive time (the function and everything it calls; async functions count only their synchronous slices):',
    );
    lines.push('');
    lines.push('| total | % | function | where |');
    lines.push('|---:|---:|---|---|');
    for (const f of r.profile.inclusive.slice(0, 15)) lines.push(`| ${fmt(f.totalMs)} ms | ${fmt(f.pct, 1)} | ${f.name} | ${f.where} |`);
    lines.push('');
    lines.push('By module (self time):');
    lines.push('');
    lines.push('| self | % | module |');
    lines.push('|---:|---:|---|');
    for (const g of r.profile.byModule) lines.push(`| ${fmt(g.selfMs)} ms | ${fmt(g.pct, 1)} | ${g.module} |`);
  }
  return lines.join('\n');
}

function writeDocs(markdown: string): void {
  const file = join(repoRoot, 'docs', 'benchmarks.md');
  const start = '<!-- bench:results:start -->';
  const end = '<!-- bench:results:end -->';
  const text = existsSync(file) ? readFileSync(file, 'utf8') : `# Benchmarks\n\n${start}\n${end}\n`;
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a) throw new Error(`${file} lacks the ${start} / ${end} markers`);
  writeFileSync(file, `${text.slice(0, a + start.length)}\n${markdown}\n${text.slice(b)}`);
  console.log(`\nwrote the figures into ${file}`);
}

// ------------------------------------------------------------------ main

function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The repetitions of one scenario as one result: the run of median time stands for svcsync
 * (its figures, RSS and requests), with every time kept; per bare shape, the median of the
 * bare loader's records/s and of the per-pair ratios. A failed run is never the one kept.
 */
function combineRuns(runs: ScenarioResult[]): ScenarioResult {
  const ok = runs.filter((r) => r.ok);
  const pool = ok.length ? ok : runs;
  const byTime = [...pool].sort((a, b) => a.elapsedS - b.elapsedS);
  const r = byTime[Math.floor((byTime.length - 1) / 2)]!;
  r.times = runs.map((x) => x.times[0]!);
  r.recordsPerCpuSAll = runs.map((x) => x.recordsPerCpuS);
  if (r.readFloor) {
    r.readFloor.ratios = runs.map((y) => y.readFloor?.ratio).filter((v): v is number => v !== undefined);
    r.readFloor.ratio = median(r.readFloor.ratios);
    r.readFloor.rowsMatch = runs.every((y) => y.readFloor?.rowsMatch !== false);
  }
  r.resyncs?.forEach((x, k) => {
    x.ratios = runs.map((y) => y.resyncs?.[k]?.ratio).filter((v): v is number => v !== undefined);
    x.cpuRatios = runs.map((y) => y.resyncs?.[k]?.cpuRatio).filter((v): v is number => v !== undefined);
    x.ratio = median(x.ratios);
    x.cpuRatio = median(x.cpuRatios);
  });
  if (r.bare) {
    r.bareFirst = runs.flatMap((x) => x.bareFirst ?? []);
    r.bare.forEach((b, k) => {
      const same = runs.map((x) => x.bare?.[k]).filter((x): x is BareFigures => x !== undefined);
      b.ratios = same.map((x) => x.ratio);
      b.recordsPerSAll = same.map((x) => x.recordsPerS);
      b.ratio = median(b.ratios);
      b.recordsPerS = median(b.recordsPerSAll);
      b.cpuRatios = same.map((x) => x.cpuRatio);
      b.cpuRatio = median(b.cpuRatios);
      b.recordsPerCpuSAll = same.map((x) => x.recordsPerCpuS);
      b.recordsPerCpuS = median(b.recordsPerCpuSAll);
      b.rowsMatch = same.every((x) => x.rowsMatch);
    });
  }
  return r;
}

/** The http-client scenario (bench/http-client.ts), its runs printed as they come; null when it failed. */
async function httpClientScenario(opts: Options): Promise<HttpClientFigures | null> {
  const sizesKb = [35, 200];
  console.log(
    `\n> http-client: client CPU a GET with fetch and with node:http, ${sizesKb.join(' KB and ')} KB answers, ` +
      `${fmt(opts.httpRequests)} requests ${opts.concurrency} in flight, ${opts.repeat} run(s)`,
  );
  try {
    return await runHttpClientBench({
      sizesKb,
      requests: opts.httpRequests,
      warmup: Math.ceil(opts.httpRequests / 10),
      inFlight: Math.max(1, opts.concurrency),
      runs: opts.repeat,
      timeoutMs: opts.timeoutS * 1000,
      onRun: (line) => console.log(`  ${line}`),
    });
  } catch (error) {
    console.log(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  }
}

async function main(): Promise<void> {
  const parsed = parseArgs(process.argv.slice(2));
  if (parsed === 'help') {
    process.stdout.write(HELP);
    return;
  }
  const opts = parsed;
  // One JSON object on stdout: everything else this process prints goes to stderr.
  const jsonOut = opts.json === '-' ? process.stdout.write.bind(process.stdout) : null;
  if (jsonOut) {
    console.log = (...args: unknown[]) => console.error(...args);
    process.stdout.write = process.stderr.write.bind(process.stderr);
  }
  const want = (name: string): boolean => (!opts.only || opts.only.includes(name)) && !opts.skip.includes(name);
  const listStreams = listOnlyStreams().map(qualifiedName);
  const fullRefreshStreams = listOnlyStreams()
    .filter((s) => !s.cursor)
    .map(qualifiedName);
  const memStream = CATALOG.find((s) => qualifiedName(s) === opts.memStream);
  if (!memStream || memStream.parent || isOrgList(memStream))
    throw new Error(`--mem-stream ${opts.memStream} is not a top-level list stream`);
  const step = (f: number): number => Math.round(opts.memRecords * f);
  const scenarios: ScenarioSpec[] = [
    ...(['sqlite', 'postgres'] as const).map((dialect) => ({
      name: `list-${dialect}`,
      dialect,
      description: 'list-only streams',
      organizations: opts.orgs,
      scale: opts.scale,
      streams: listStreams,
      checkpoints: [],
      profile: false,
      counted: true,
      bare: true,
    })),
    ...(['sqlite', 'postgres'] as const).map((dialect) => ({
      name: `resync-${dialect}`,
      dialect,
      description: 'list-only streams, then an incremental and a reconcile re-sync with nothing changed',
      organizations: opts.orgs,
      scale: opts.scale,
      streams: listStreams,
      checkpoints: [],
      profile: false,
      counted: true,
      resync: ['incremental', 'reconcile'] as Array<'incremental' | 'reconcile'>,
    })),
    {
      name: 'resync-full-sqlite',
      dialect: 'sqlite',
      description: 'the list-only full-refresh streams (no cursor), then a re-sync with nothing changed',
      organizations: opts.orgs,
      scale: opts.scale,
      streams: fullRefreshStreams,
      checkpoints: [],
      profile: false,
      counted: true,
      resync: ['incremental'],
    },
    {
      name: 'catalog-sqlite',
      dialect: 'sqlite',
      description: 'whole catalog (detail and child requests)',
      organizations: opts.orgs,
      scale: opts.catalogScale,
      streams: null,
      checkpoints: [],
      profile: false,
      counted: true,
    },
    {
      name: 'memory-sqlite',
      dialect: 'sqlite',
      description: `${opts.memStream}, one organization`,
      organizations: 1,
      scale: opts.memRecords,
      streams: [opts.memStream],
      checkpoints: [0.1, 0.25, 0.5, 0.75, 1].map(step),
      profile: false,
      counted: true,
      bare: true,
    },
    ...(['sqlite', 'postgres'] as const).map((dialect) => ({
      name: `profile-${dialect}`,
      dialect,
      description: `${opts.profileStreams ? opts.profileStreams.join(', ') : 'list-only streams'} into ${dialect}, profiled (not counted)`,
      organizations: opts.orgs,
      scale: opts.scale,
      streams: opts.profileStreams ?? listStreams,
      checkpoints: [],
      profile: true,
      counted: false,
    })),
  ].filter((s) => {
    if (s.name === 'profile-sqlite') return opts.profile || opts.profileStreams !== null;
    if (s.name === 'profile-postgres') return opts.profilePostgres;
    return want(s.name);
  }) as ScenarioSpec[];

  console.log(
    `svcsync benchmark: ${cpus().length} cores, Node ${process.version}${opts.quick ? ' (quick)' : ''}` +
      (opts.experiments.length ? `, EXPERIMENT: ${opts.experiments.join(', ')}` : ''),
  );
  console.log(`list-only streams: ${listStreams.join(', ')}`);
  const results: ScenarioResult[] = [];
  let failures = 0;
  for (const s of scenarios) {
    process.stdout.write(`\n> ${s.name}: ${s.description}, ${s.organizations} organization(s), scale ${fmt(s.scale)} ... `);
    try {
      const reps = s.name.startsWith('list-') || s.bare || s.resync ? opts.repeat : 1;
      const runs: ScenarioResult[] = [];
      // Pairs alternate: svcsync first, then the bare loaders first, and so on.
      for (let i = 0; i < reps; i++) runs.push(await runScenario(s, opts, i % 2 === 1));
      const r = combineRuns(runs);
      results.push(r);
      console.log(
        `${fmt(r.listRecords + r.childRecords)} records in ${fmt(r.elapsedS, 1)} s = ${fmt(r.listRecordsPerS)} list records/s ` +
          `(${fmt(r.recordsPerCpuS)} per svcsync CPU-s); requests ${fmt(r.apiRequests)} (minimum ${fmt(r.minimum.total)}); ` +
          `peak RSS ${fmt(r.peakRssMb)} MB; load ${r.load.map((l) => l.toFixed(1)).join(' -> ')}` +
          (r.times.length > 1 ? `; times ${r.times.map((t) => t.toFixed(1)).join(', ')} s (median kept)` : '') +
          (r.times.length > 1 ? `; per svcsync CPU-s ${r.recordsPerCpuSAll.map((x) => fmt(x)).join(', ')}` : '') +
          (r.ok ? '' : `; PROBLEM: ${r.error ?? r.rowMismatches.join('; ')}`),
      );
      if (!r.ok) failures++;
    } catch (error) {
      failures++;
      console.log(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  let requests: RequestsFigures | null = null;
  if (want('requests')) {
    console.log(`\n> requests: each organization's first sync and a simulated week of the daemon on the free plan`);
    try {
      requests = await runRequestsBench(
        {
          divide: opts.quick ? 10 : 1,
          perPage: opts.perPage,
          plan: 'free',
          days: opts.requestsDays,
          ...(opts.requestsOrgs ? { organizations: opts.requestsOrgs } : {}),
        },
        (line) => console.log(`  ${line}`),
      );
      if (Object.values(requests.organizations).some((o) => !o.idsMatch)) failures++;
    } catch (error) {
      failures++;
      console.log(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const httpClient = want('http-client') ? await httpClientScenario(opts) : null;
  if (want('http-client') && !httpClient) failures++;
  const sandbox = want('sandbox') ? await sandboxThroughput(Math.min(opts.timeoutS, 300), opts.quick) : null;
  // The fleet (issue 12, bench/fleet.ts) takes a quarter of an hour: only when asked for by name.
  if (opts.only?.includes('fleet')) {
    const args = [
      join(here, 'fleet.js'),
      '--pg',
      opts.pgUrl,
      ...(opts.quick ? ['--orgs', '200', '--modes', 'daemon,2', '--fires', '1'] : []),
    ];
    const code = await new Promise<number | null>((res) => spawn(process.execPath, args, { stdio: 'inherit' }).on('exit', res));
    if (code !== 0) failures++;
  }
  // What history costs (bench/history.ts): only when asked for by name.
  const history = (['sqlite', 'postgres'] as const).filter((d) => opts.only?.includes(`history-${d}`));
  if (history.length) {
    const args = [join(here, 'history.js'), '--dialect', history.length === 2 ? 'both' : history[0]!, '--pg', opts.pgUrl];
    if (opts.quick) args.push('--scale', '100', '--days', '1');
    const code = await new Promise<number | null>((res) => spawn(process.execPath, args, { stdio: 'inherit' }).on('exit', res));
    if (code !== 0) failures++;
  }
  // The status page at a fleet's size (bench/status-page.ts): only when asked for by name.
  if (opts.only?.includes('status-page')) {
    const code = await new Promise<number | null>((res) =>
      spawn(process.execPath, [join(here, 'status-page.js'), ...(opts.quick ? ['--repeat', '1'] : [])], { stdio: 'inherit' }).on(
        'exit',
        res,
      ),
    );
    if (code !== 0) failures++;
  }
  const markdown = renderMarkdown(results, sandbox, opts, requests, httpClient);
  console.log('\n' + markdown);
  const figures = { machine: machine(), options: opts, results, sandbox, requests, httpClient };
  if (jsonOut)
    jsonOut(JSON.stringify({ ...(requests ?? {}), machine: figures.machine, options: opts, results, sandbox, httpClient }) + '\n');
  else if (opts.json) writeFileSync(opts.json, JSON.stringify(figures, null, 2));
  if (opts.writeDocs && opts.experiments.length) console.log('\nnot writing docs/benchmarks.md: this run used --experiment');
  else if (opts.writeDocs) writeDocs(markdown);
  process.exitCode = failures ? 1 : 0;
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) console.error(`bench: ${error.message}`);
  else console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
