/**
 * The svcsync process of the benchmark (forked by bench/run.ts, optionally with --cpu-prof):
 * one full sync of the given streams from the sandbox into the given warehouse, with the
 * process's RSS sampled every `sampleMs` and noted when the records read cross each checkpoint.
 * Usage: node dist/bench/sync-child.js '<SyncSpec JSON>'
 */
import { CompiledQuery, type Kysely } from 'kysely';
import { TABLES } from '../migrations/20261122T060000-warehouse-tables.js';
import { parseConfig } from '../src/config/load.js';
import { systemClock } from '../src/core/clock.js';
import { createLogger } from '../src/core/logger.js';
import { SecretRegistry } from '../src/core/secrets.js';
import type { ProgressReporter } from '../src/extractors/context.js';
import { runSync } from '../src/extractors/sync-run.js';
import { migrateToLatest } from '../src/loaders/migrate.js';
import { openWarehouse } from '../src/loaders/warehouse.js';
import type { Checkpoint, ResyncFigure, SyncResult, SyncSpec } from './protocol.js';

const MB = 1024 * 1024;

/**
 * Experiments that show what a change in src/ would buy, without changing src/ (the figures
 * they produce are never the benchmark's own):
 *  - pragma:<text>: run `PRAGMA <text>` on the SQLite warehouse after svcsync's own pragmas
 *    (`pragma:wal_autocheckpoint=10000`, `pragma:synchronous=OFF`, ...).
 *  - drop-foreign-keys: drop the child tables' foreign keys after the migrations (Postgres),
 *    to see what their checks cost.
 *  - toast-target: `toast_tuple_target = 8160` on every table (Postgres): rows up to a page are
 *    not compressed or moved out of line.
 *  - lz4: every jsonb column compressed with lz4 instead of pglz (Postgres 14+).
 *  - without-rowid-children / without-rowid-all: the warehouse tables keyed by three or more
 *    columns (the child tables), or every warehouse table, recreated `WITHOUT ROWID` (SQLite):
 *    rows live in the primary key's B-tree, one B-tree insert per row instead of two.
 */
function pragmasOf(experiments: readonly string[]): string[] {
  return experiments.flatMap((name) => {
    if (name.startsWith('pragma:')) return [name.slice('pragma:'.length)];
    if (name in STATEMENTS || name in REBUILDS) return [];
    throw new Error(`unknown experiment ${name}`);
  });
}

const STATEMENTS: Record<string, string> = {
  'drop-foreign-keys': `DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT conrelid::regclass AS t, conname FROM pg_constraint
      WHERE contype = 'f' AND connamespace = current_schema()::regnamespace
    LOOP EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname); END LOOP; END $$`,
  'toast-target': `DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT c.oid::regclass AS t FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace
    LOOP EXECUTE format('ALTER TABLE %s SET (toast_tuple_target = 8160)', r.t); END LOOP; END $$`,
  lz4: `DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT attrelid::regclass AS t, attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND a.atttypid = 'jsonb'::regtype AND NOT a.attisdropped
    LOOP EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET COMPRESSION lz4', r.t, r.attname); END LOOP; END $$`,
};

/** SQLite experiments that recreate the (still empty) warehouse tables after the migrations. */
const REBUILDS: Record<string, (primaryKeyColumns: number) => boolean> = {
  'without-rowid-children': (n) => n >= 3,
  'without-rowid-all': (n) => n >= 1,
};

async function rebuildTables(db: Kysely<unknown>, experiments: readonly string[]): Promise<void> {
  for (const name of experiments) {
    const wanted = REBUILDS[name];
    if (!wanted) continue;
    for (const table of TABLES) {
      if (!wanted(table.primaryKey.length)) continue;
      const row = await db.executeQuery<{ sql: string }>(
        CompiledQuery.raw(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '${table.name}'`),
      );
      const ddl = row.rows[0]?.sql;
      if (!ddl) continue;
      await db.executeQuery(CompiledQuery.raw(`DROP TABLE "${table.name}"`));
      await db.executeQuery(CompiledQuery.raw(`${ddl} WITHOUT ROWID`));
    }
  }
}

function statementsOf(experiments: readonly string[]): string[] {
  return experiments.flatMap((name) => (name in STATEMENTS ? [STATEMENTS[name]!] : []));
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as SyncSpec;
  const pragmas = pragmasOf(spec.experiments ?? []);
  const startRss = process.memoryUsage.rss();
  let peakRss = startRss;
  let peakHeap = process.memoryUsage().heapUsed;
  let samples = 0;
  let t0 = performance.now();
  const sample = (): number => {
    const rss = process.memoryUsage.rss();
    samples++;
    if (rss > peakRss) peakRss = rss;
    return rss;
  };
  const sampleHeap = (): void => {
    const h = process.memoryUsage().heapUsed;
    if (h > peakHeap) peakHeap = h;
  };
  const timer = setInterval(() => {
    sample();
    sampleHeap();
  }, spec.sampleMs);

  // Records read so far, summed over (organization, stream); checkpoints note the RSS as they pass.
  const perStream = new Map<string, number>();
  let total = 0;
  const pending = [...spec.checkpoints].sort((a, b) => a - b);
  const checkpoints: Checkpoint[] = [];
  const progress: ProgressReporter = {
    streamStarted: () => undefined,
    streamFinished: () => undefined,
    page(e) {
      const key = `${e.organizationId}/${e.stream}`;
      total += e.records - (perStream.get(key) ?? 0);
      perStream.set(key, e.records);
      while (pending.length && total >= pending[0]!) {
        const rss = sample();
        const mem = process.memoryUsage();
        const point: Checkpoint = {
          records: pending.shift()!,
          atMs: performance.now() - t0,
          rssMb: rss / MB,
          peakRssMb: peakRss / MB,
          heapUsedMb: mem.heapUsed / MB,
        };
        // Retained memory: the heap after a full collection (RSS and the peak were read first).
        const gc = (globalThis as { gc?: () => void }).gc;
        if (gc) {
          gc();
          point.heapAfterGcMb = process.memoryUsage().heapUsed / MB;
        }
        checkpoints.push(point);
      }
    },
  };

  const secrets = new SecretRegistry();
  const logger = createLogger({ level: spec.logLevel, secrets, fd: 2, pretty: false });
  const config = parseConfig(
    {
      warehouse: spec.warehouseUrl,
      log_level: spec.logLevel,
      sync: { per_page: spec.perPage, organization_concurrency: spec.organizationConcurrency },
      connections: [
        {
          name: 'bench',
          accounts_url: spec.sandboxUrl,
          ...spec.credentials,
          plan: 'enterprise',
          // The sandbox is unthrottled: lift the client's per-minute and daily gates too, so the
          // run measures svcsync rather than the plan's limits.
          limits: { per_minute: 1_000_000_000, per_day: 1_000_000_000, concurrency: spec.concurrency, reserve: 0 },
          families: spec.families,
          streams: spec.streams,
        },
      ],
    },
    { env: {}, secrets },
  );
  // --sql-stats: the SQLite thread times every statement by its shape (the SQL text up to its
  // first parenthesis or VALUES list), so that time in SQLite can be split by table.
  const warehouse = await openWarehouse(spec.warehouseUrl, { pragmas, sqlStats: spec.sqlStats ?? false });
  const controller = new AbortController();
  const bound = setTimeout(() => controller.abort(new Error(`benchmark run exceeded ${spec.timeoutMs} ms`)), spec.timeoutMs);
  let result: SyncResult;
  try {
    const m0 = performance.now();
    await migrateToLatest(warehouse);
    for (const statement of statementsOf(spec.experiments ?? [])) await warehouse.db.executeQuery(CompiledQuery.raw(statement));
    await rebuildTables(warehouse.db, spec.experiments ?? []);
    const migrateMs = performance.now() - m0;
    const cpu0 = process.cpuUsage();
    t0 = performance.now();
    const summary = await runSync({
      config,
      warehouse,
      clock: systemClock,
      logger,
      secrets,
      signal: controller.signal,
      progress,
      command: 'bench',
      mode: 'incremental',
    });
    const elapsedMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    sample();
    sampleHeap();
    const resyncs: ResyncFigure[] = [];
    for (const mode of spec.resync ?? []) {
      const c0 = process.cpuUsage();
      const r0 = performance.now();
      const signal = controller.signal;
      const again = await runSync({ config, warehouse, clock: systemClock, logger, secrets, signal, command: 'bench', mode });
      const used = process.cpuUsage(c0);
      if (again.exitCode !== 0) throw new Error(`the ${mode} re-sync failed (exit ${again.exitCode})`);
      resyncs.push({
        mode,
        elapsedMs: performance.now() - r0,
        cpuUserMs: used.user / 1000,
        cpuSystemMs: used.system / 1000,
        written: again.organizations.reduce((a, o) => a + o.streams.reduce((b, s) => b + s.written, 0), 0),
      });
    }
    const tableRows: Record<string, number> = {};
    for (const table of spec.tables) {
      const r = await warehouse.db.executeQuery<{ n: number | string }>(
        CompiledQuery.raw(`SELECT count(*) AS n FROM "${table}" WHERE _deleted_at IS NULL`),
      );
      tableRows[table] = Number(r.rows[0]?.n ?? 0);
    }
    const failed = summary.organizations.filter((o) => o.status !== 'ok').map((o) => `${o.organizationId}: ${o.error ?? o.status}`);
    result = {
      type: 'result',
      ok: summary.exitCode === 0,
      ...(failed.length || summary.connectionFailures.length
        ? { error: [...failed, ...summary.connectionFailures.map((f) => f.error)].join('; ') }
        : {}),
      exitCode: summary.exitCode,
      elapsedMs,
      migrateMs,
      clientRequests: summary.requests,
      streams: summary.organizations.flatMap((o) =>
        o.streams.map((s) => ({
          organizationId: o.organizationId,
          stream: s.stream,
          status: s.status,
          pages: s.pages,
          records: s.records,
          written: s.written,
          requests: s.requests,
        })),
      ),
      peakRssMb: peakRss / MB,
      startRssMb: startRss / MB,
      endRssMb: process.memoryUsage.rss() / MB,
      peakHeapUsedMb: peakHeap / MB,
      samples,
      checkpoints,
      cpuUserMs: cpu.user / 1000,
      cpuSystemMs: cpu.system / 1000,
      tableRows,
      ...(spec.sqlStats && warehouse.sqlStats ? { sqlStats: warehouse.sqlStats() } : {}),
      ...(resyncs.length ? { resyncs } : {}),
    };
  } finally {
    clearTimeout(bound);
    clearInterval(timer);
    await warehouse.close();
  }
  await new Promise<void>((resolve) => process.send!(result, () => resolve()));
}

main().then(
  // Exit normally (not process.exit in the middle of things) so --cpu-prof writes its profile.
  () => process.disconnect?.(),
  (error: unknown) => {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.send?.({ type: 'result', ok: false, error: message } satisfies Partial<SyncResult>, () => process.exit(1));
  },
);
