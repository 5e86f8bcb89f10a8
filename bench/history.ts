/**
 * What history costs (scenarios history-sqlite and history-postgres): the same sandbox (one
 * organization, the whole catalog, unthrottled) synced into a fresh warehouse twice, with
 * `history: off` and with `history: all`, then `days` rounds of a 5 % daily change (modify 5 % of
 * every stream, a sandbox day later a sync). Prints the time of each run, the ratio of the run with
 * history to the one without, and the rows and bytes the history tables hold after the first sync
 * and gain per day.
 *
 *   npm run build && node dist/bench/history.js [--dialect sqlite|postgres|both] [--scale 1000] [--days 3]
 *     [--pg postgres://postgres@127.0.0.1:5432/test]
 *
 * The sandbox runs in this process (its clock is the run's), so the times are svcsync's and the
 * sandbox's together; the ratio compares like with like.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { parseConfig } from '../src/config/load.js';
import { createLogger } from '../src/core/logger.js';
import { SecretRegistry } from '../src/core/secrets.js';
import { runSync } from '../src/extractors/sync-run.js';
import { openWarehouse, type Warehouse } from '../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../sandbox/index.js';

type Dialect = 'sqlite' | 'postgres';

interface Options {
  dialects: Dialect[];
  scale: number;
  days: number;
  pgUrl: string;
}

function parseArgs(argv: string[]): Options {
  const get = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const dialect = get('--dialect') ?? 'both';
  return {
    dialects: dialect === 'both' ? ['sqlite', 'postgres'] : [dialect as Dialect],
    scale: Number(get('--scale') ?? 1000),
    days: Number(get('--days') ?? 3),
    pgUrl: get('--pg') ?? process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test',
  };
}

async function fresh(dialect: Dialect, pgUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'svcsync-bench-history-'));
    return { url: `sqlite:${join(dir, 'warehouse.db')}`, drop: () => Promise.resolve(rmSync(dir, { recursive: true, force: true })) };
  }
  const schema = `bench_history_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.end();
  return {
    url: `${pgUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
    drop: async () => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP SCHEMA "${schema}" CASCADE`);
      await c.end();
    },
  };
}

/** Rows and bytes (tables and indexes) of every history table. */
async function historySize(w: Warehouse): Promise<{ rows: number; bytes: number }> {
  const q = async <T>(text: string): Promise<T[]> => (await w.db.executeQuery<T>(CompiledQuery.raw(text))).rows;
  const tables =
    w.dialect === 'postgres'
      ? (
          await q<{ name: string; bytes: string }>(
            `SELECT relname AS name, pg_total_relation_size(oid) AS bytes FROM pg_class
             WHERE relkind = 'r' AND relname LIKE '%\\_history' AND relnamespace = current_schema()::regnamespace
               AND relname <> '_svcsync_history'`,
          )
        ).map((t) => ({ name: t.name, bytes: Number(t.bytes) }))
      : await q<{ name: string; bytes: number }>(
          `SELECT tbl_name AS name, (SELECT SUM(pgsize) FROM dbstat d WHERE d.name = m.tbl_name OR d.name IN
             (SELECT name FROM sqlite_master i WHERE i.tbl_name = m.tbl_name AND i.type = 'index')) AS bytes
           FROM sqlite_master m WHERE type = 'table' AND tbl_name LIKE '%\\_history' ESCAPE '\\' AND tbl_name <> '_svcsync_history'`,
        );
  let rows = 0;
  for (const t of tables) rows += Number((await q<{ n: number | string }>(`SELECT COUNT(*) AS n FROM "${t.name}"`))[0]!.n);
  return { rows, bytes: tables.reduce((a, t) => a + Number(t.bytes), 0) };
}

interface RunFigures {
  firstS: number;
  dayS: number[];
  first: { rows: number; bytes: number };
  days: Array<{ rows: number; bytes: number }>;
}

async function run(dialect: Dialect, history: 'all' | 'off', opts: Options): Promise<RunFigures> {
  const sandbox: Sandbox = await startSandbox({ seed: 42, scale: opts.scale, organizations: 1, unlimited: true, timeScale: 1 });
  const target = await fresh(dialect, opts.pgUrl);
  const secrets = new SecretRegistry();
  const logger = createLogger({ level: 'error', secrets, fd: 2, pretty: false });
  const config = parseConfig(
    {
      warehouse: target.url,
      history,
      connections: [
        {
          name: 'bench',
          accounts_url: sandbox.url,
          ...sandbox.credentials,
          plan: 'enterprise',
          limits: { per_minute: 1_000_000_000, per_day: 1_000_000_000, concurrency: 10, reserve: 0 },
        },
      ],
    },
    { env: {}, secrets },
  );
  const warehouse = await openWarehouse(target.url);
  const sync = async (): Promise<number> => {
    const t0 = performance.now();
    const summary = await runSync({
      config,
      warehouse,
      clock: sandbox.clock,
      logger,
      secrets,
      signal: new AbortController().signal,
      command: 'bench',
      mode: 'incremental',
    });
    if (summary.exitCode !== 0) throw new Error(`${dialect} history ${history}: the sync ended with ${summary.exitCode}`);
    return (performance.now() - t0) / 1000;
  };
  try {
    const out: RunFigures = { firstS: await sync(), dayS: [], first: { rows: 0, bytes: 0 }, days: [] };
    if (history === 'all') out.first = await historySize(warehouse);
    let last = out.first;
    for (let day = 0; day < opts.days; day++) {
      sandbox.advanceClock(86_400_000);
      sandbox.mutate({ modify: '5%' });
      out.dayS.push(await sync());
      if (history === 'all') {
        const now = await historySize(warehouse);
        out.days.push({ rows: now.rows - last.rows, bytes: now.bytes - last.bytes });
        last = now;
      }
    }
    return out;
  } finally {
    await warehouse.close();
    await target.drop();
    await sandbox.stop();
  }
}

const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const avg = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const lines = [
    '| scenario | first sync, off | first sync, history | ratio | a day, off | a day, history | ratio ' +
      '| history after the first sync | history gained a day |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const dialect of opts.dialects) {
    const off = await run(dialect, 'off', opts);
    const on = await run(dialect, 'all', opts);
    const mb = (b: number): string => `${fmt(b / 1_048_576, 1)} MB`;
    const gained = `${fmt(avg(on.days.map((d) => d.rows)))} rows, ${mb(avg(on.days.map((d) => d.bytes)))}`;
    lines.push(
      `| history-${dialect} | ${fmt(off.firstS, 1)} s | ${fmt(on.firstS, 1)} s | ${fmt(on.firstS / off.firstS, 2)} | ` +
        `${fmt(avg(off.dayS), 1)} s | ${fmt(avg(on.dayS), 1)} s | ${fmt(avg(on.dayS) / avg(off.dayS), 2)} | ` +
        `${fmt(on.first.rows)} rows, ${mb(on.first.bytes)} | ${gained} |`,
    );
    console.log(lines.at(-1));
  }
  console.log(`\nscale ${opts.scale}, one organization, whole catalog, ${opts.days} days of modify 5 %\n`);
  console.log(lines.join('\n'));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
