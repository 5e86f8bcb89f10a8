import { resolve } from 'node:path';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, CompiledQuery } from 'kysely';
import { ConfigError } from '../core/errors.js';
import type { AnyKysely, AnyTransaction } from './db.js';
import { SqliteBatchDialect, SqliteBatchDriver, type SqlStat } from './sqlite-driver.js';
import { FALLBACK_AUTOCHECKPOINT, SqliteCheckpointer } from './sqlite-checkpointer.js';
import { POSTGRES, SQLITE, type SqlDialect } from './sql-dialect.js';
import { checkFence, DEFAULT_LEASE_TIMINGS, noFence, PostgresOrgLeases, ProcessLeases, SqliteOrgLeases } from './org-lease.js';
import type { Fence, LeaseTimings, OrgLeases } from './org-lease.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Warehouse {
  // Untyped (src/loaders/db.ts): the data tables are defined by the catalog at run time; the
  // typed view of the internal tables is `stateDb` (src/state/tables.ts).
  db: AnyKysely;
  dialect: Dialect;
  /**
   * What svcsync's hand-written SQL does differently on this warehouse (placeholders, booleans,
   * upserts, parameter limits), chosen here once so that writers never branch on `dialect`.
   */
  sql: SqlDialect;
  /**
   * Who owns which organization across processes (src/loaders/org-lease.ts), chosen here once
   * like `sql`: advisory locks on Postgres, a lock row with a heartbeat on SQLite.
   */
  leases: OrgLeases;
  /** The URL without any password, for messages and logs. */
  displayUrl: string;
  /**
   * Runs the queries in order as one transaction, then `after` (work that needs results) in
   * the same transaction. Without `after`, on SQLite
   * it runs without returning to the event loop between statements. The fence (an
   * organization's lease) is checked first; when it fails nothing is written.
   */
  batch(queries: readonly CompiledQuery[], after?: (trx: AnyTransaction) => Promise<void>, fence?: Fence): Promise<void>;
  /** SQLite only, when opened with `sqlStats`: time spent per statement shape (the benchmark's). */
  sqlStats?(): SqlStat[];
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Postgres connections in the pool. */
  poolSize?: number;
  /** SQLite: extra PRAGMA statements after svcsync's own (the benchmark's experiments). */
  pragmas?: string[];
  /** SQLite: time every statement by shape (the benchmark's --sql-stats). */
  sqlStats?: boolean;
  /** Organization leases' timings (tests shorten them). */
  leaseTimings?: Partial<LeaseTimings>;
}

/** Masks a password in a postgres URL so it can be shown. */
export function displayWarehouseUrl(url: string): string {
  return url.replace(/(postgres(?:ql)?:\/\/[^:/@]+):[^@]*@/, '$1:***@');
}

// Postgres sends int8 and date as text by default; ints that fit a double become numbers,
// and dates stay yyyy-mm-dd text (a Date would shift them by the local zone).
let pgTypesSet = false;
function setPgTypeParsers(): void {
  if (pgTypesSet) return;
  pgTypesSet = true;
  pg.types.setTypeParser(20, (v: string) => {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : v;
  });
  pg.types.setTypeParser(1082, (v: string) => v);
}

async function inTransaction(
  db: AnyKysely,
  queries: readonly CompiledQuery[],
  after?: (trx: AnyTransaction) => Promise<void>,
  fence: Fence = noFence,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await checkFence(trx, fence);
    for (const q of queries) await trx.executeQuery(q);
    if (after) await after(trx);
  });
}

export async function openWarehouse(url: string, options: OpenOptions = {}): Promise<Warehouse> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length) || './warehouse.db';
    const file = path === ':memory:' ? path : resolve(path);
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    let database: SQLite.Database;
    try {
      database = new SQLite(file);
    } catch (error) {
      throw new ConfigError(`Cannot open the SQLite warehouse at ${file}: ${(error as Error).message}`, [], {
        hint: 'Check that the folder exists and is writable, or set `warehouse:` to another path.',
      });
    }
    // WAL lets `svcsync status` read while a sync writes; NORMAL sync is durable at
    // checkpoints and keeps per-page commits cheap. Checkpoints run on their own thread.
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    database.pragma('busy_timeout = 10000');
    database.pragma('foreign_keys = OFF');
    // A 16 MiB page cache (the default is 2 MiB): upserts into wide tables keyed by text ids
    // touch more B-tree pages than 2 MiB holds. Measured (docs/benchmarks.md, issue 14): the
    // list-only sync 18,600 -> 22,000 records/s with the same peak RSS; 64 MiB bought no more
    // and cost 45 MB of RSS.
    database.pragma('cache_size = -16384');
    const wal = file !== ':memory:';
    if (wal) database.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT}`);
    for (const pragma of options.pragmas ?? []) database.pragma(pragma);
    const checkpointer = wal ? SqliteCheckpointer.start(file) : null;
    const driver = new SqliteBatchDriver(database, { collectStats: options.sqlStats ?? false });
    const db: AnyKysely = new Kysely({ dialect: new SqliteBatchDialect(driver) });
    const leases = new ProcessLeases(new SqliteOrgLeases(db, SQLITE, { ...DEFAULT_LEASE_TIMINGS, ...options.leaseTimings }));
    return {
      db,
      dialect: 'sqlite',
      sql: SQLITE,
      leases,
      displayUrl: `sqlite:${file}`,
      batch: (queries, after, fence) => (after ? inTransaction(db, queries, after, fence) : driver.batch(queries, fence)),
      sqlStats: () => driver.sqlStats(),
      close: async () => {
        await leases.close();
        await checkpointer?.close();
        await db.destroy();
      },
    };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    setPgTypeParsers();
    const timings = { ...DEFAULT_LEASE_TIMINGS, ...options.leaseTimings };
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      // A process paused or hung inside a transaction (between its statements) must not hold row
      // and advisory locks for ever: the server ends such a session after the lease's time-to-live,
      // as it ends the idle lock session, and the transaction rolls back (a page is all or nothing).
      idle_in_transaction_session_timeout: Math.max(1_000, Math.round(timings.ttlMs)),
    });
    // A session the server ends (the idle-in-transaction timeout of a paused process, a restart,
    // an administrator) must not take the process down with an unhandled 'error' event: the query
    // that uses it fails (its transaction rolls back), and the pool drops the dead session.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    const db: AnyKysely = new Kysely({ dialect: new PostgresDialect({ pool }) });
    try {
      await db.executeQuery(CompiledQuery.raw('SELECT 1'));
    } catch (error) {
      await db.destroy().catch(() => undefined);
      throw new ConfigError(`Cannot connect to the Postgres warehouse at ${displayWarehouseUrl(url)}: ${(error as Error).message}`, [], {
        hint: 'Check that the server is running and that the URL, user and database in `warehouse:` are right.',
      });
    }
    const leases = new ProcessLeases(new PostgresOrgLeases(url, POSTGRES, timings));
    return {
      db,
      dialect: 'postgres',
      sql: POSTGRES,
      leases,
      displayUrl: displayWarehouseUrl(url),
      batch: (queries, after, fence) => inTransaction(db, queries, after, fence),
      close: async () => {
        await leases.close();
        await db.destroy();
      },
    };
  }
  throw new ConfigError(`warehouse: "${url}" is not supported`, [], { hint: 'Use sqlite:PATH or postgres://USER@HOST:PORT/DB.' });
}
