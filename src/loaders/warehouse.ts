import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, CompiledQuery } from 'kysely';
import { ConfigError, type WarehouseError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { AnyKysely, AnyTransaction } from './db.js';
import { FaultAwareDialect, withFaultRetry, type FaultPolicy } from './fault-aware-driver.js';
import { classifyOpeningError, classifyWarehouseError, displayWarehouseUrl, type WarehouseTarget } from './warehouse-errors.js';
import { SqliteBatchDialect, SqliteBatchDriver, type SqlStat } from './sqlite-driver.js';
import { FALLBACK_AUTOCHECKPOINT, SqliteCheckpointer } from './sqlite-checkpointer.js';
import { POSTGRES, SQLITE, type Dialect, type SqlDialect } from './sql-dialect.js';
import { checkFence, noFence } from './lease/fence.js';
import { changedRows, claimUnit, replayOf, resultQuery, type BatchOutcome } from './applied-units.js';

export type { BatchOutcome };
import { DEFAULT_LEASE_TIMINGS } from './lease/lease.js';
import { PostgresOrgLeases } from './lease/postgres.js';
import { ProcessLeases } from './lease/process.js';
import { SqliteOrgLeases } from './lease/sqlite.js';
import type { Fence } from './lease/fence.js';
import type { LeaseTimings, OrgLeases } from './lease/lease.js';

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
   * Who owns which organization across processes (src/loaders/lease/), chosen here once
   * like `sql`: advisory locks on Postgres, a lock row with a heartbeat on SQLite.
   */
  leases: OrgLeases;
  /** The URL without any password, for messages and logs. */
  displayUrl: string;
  /**
   * Runs the queries in order as one transaction, then `after` (work that needs results) in
   * the same transaction. Without `after`, on SQLite
   * it runs without returning to the event loop between statements. The fence (an
   * organization's lease) is checked first; when it fails nothing is written. With a `unit` id
   * (src/loaders/applied-units.ts) the transaction runs once: a retry after a lost COMMIT reply
   * finds the id claimed, changes nothing, and returns what the first attempt returned.
   */
  batch<T = undefined>(
    queries: readonly CompiledQuery[],
    after?: (trx: AnyTransaction) => Promise<T>,
    fence?: Fence,
    unit?: string,
  ): Promise<BatchOutcome<T>>;
  /**
   * Runs `work` in one transaction, after the fence's check. A transient fault (a lost
   * connection, another program's lock) rolls it back and runs it again on a new connection
   * for up to `warehouse.retry_s`, so `work` must be safe to repeat: give it a `unit` id, and a
   * retry whose first attempt committed returns that attempt's result (JSON) instead of running
   * `work` again. Every other failure comes out as a `WarehouseError`, or as what `work` threw.
   */
  transaction<T>(work: (trx: AnyTransaction) => Promise<T>, fence?: Fence, unit?: string): Promise<T>;
  /** How this warehouse retries transient faults and names itself in errors. */
  faults: FaultPolicy;
  /** Where the warehouse's own events are told (retries, a derived-objects refusal); `OpenOptions.logger`. */
  logger?: Logger;
  /**
   * Postgres: the schema of the tables (the connection's current schema) and of the views
   * (`warehouse.views_schema`, else the same). SQLite has none.
   */
  schemas?: WarehouseSchemas;
  /** SQLite only, when opened with `sqlStats`: time spent per statement shape (the benchmark's). */
  sqlStats?(): SqlStat[];
  close(): Promise<void>;
}

export interface WarehouseSchemas {
  tables: string;
  views: string;
}

export interface OpenOptions {
  /** Postgres: the schema of the tables (`warehouse.schema`), made when missing; else the URL's current schema. */
  schema?: string;
  /** Postgres: the schema of the views (`warehouse.views_schema`), made when missing; else the tables'. */
  viewsSchema?: string;
  /** Postgres connections in the pool. */
  poolSize?: number;
  /** SQLite: extra PRAGMA statements after svcsync's own (the benchmark's experiments). */
  pragmas?: string[];
  /** SQLite: time every statement by shape (the benchmark's --sql-stats). */
  sqlStats?: boolean;
  /** Organization leases' timings (tests shorten them). */
  leaseTimings?: Partial<LeaseTimings>;
  /** How long a transient warehouse fault is retried (`warehouse.retry_s`); default 60 s. */
  retryMs?: number;
  /** SQLite: how long one statement waits for another program's write lock (`warehouse.busy_timeout_s`); default 10 s. */
  busyTimeoutMs?: number;
  /** Where retries and a newly created warehouse are reported. */
  logger?: Logger;
  /**
   * Open only to read (`svcsync plan`): SQLite's file must exist and is opened read-only, with
   * no WAL switch and no checkpoints; Postgres sessions are `default_transaction_read_only` and
   * no schema is made. Nothing is created or written.
   */
  readOnly?: boolean;
  /**
   * Postgres: how long the first connection may take before the server counts as unreachable
   * (exit 2, naming host and port); default 5 s. Later connections are retried for `retryMs`.
   */
  connectTimeoutMs?: number;
}

export const DEFAULT_RETRY_MS = 60_000;
export const DEFAULT_BUSY_TIMEOUT_MS = 10_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

/** Retries are told once per fault and warehouse at warn level, then at debug: a wait is never silent, a long one never floods. */
function retryReporter(logger: Logger | undefined): FaultPolicy['onRetry'] {
  if (!logger) return undefined;
  return (error: WarehouseError, attempt: number, waitMs: number) => {
    const fields = { warehouse: error.warehouse, fault: error.fault, attempt: attempt + 1, wait_ms: waitMs };
    if (attempt === 0) logger.warn(fields, `${error.message}; retrying (warehouse.retry_s bounds the wait)`);
    else logger.debug(fields, 'retrying the warehouse');
  };
}

/**
 * Makes the SQLite file's folder, or says in one classified error why it cannot be: no part of
 * the path may be a file, and the nearest existing folder must be writable. Node's recursive
 * mkdir loops for ever where a parent refuses creation without saying why (under /proc).
 * Returns the first folder it created, if any.
 */
function prepareSqliteFolder(file: string, faults: FaultPolicy): string | null {
  const folder = dirname(file);
  const missing: string[] = [];
  let at = folder;
  while (!existsSync(at)) {
    missing.unshift(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  try {
    if (!statSync(at).isDirectory()) {
      const error = Object.assign(new Error(`${at} is a file, not a folder`), { code: 'ENOTDIR' });
      throw error;
    }
    for (const dir of missing) mkdirSync(dir);
  } catch (error) {
    throw classifyWarehouseError(error, faults);
  }
  return missing[0] ?? null;
}

export { displayWarehouseUrl };

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

/** Now as the claims of `_svcsync_applied` record it: wall time, like every retry of the warehouse's. */
const claimedAt = (): string => new Date().toISOString();

async function inTransaction<T>(
  db: AnyKysely,
  sql: SqlDialect,
  queries: readonly CompiledQuery[],
  after?: (trx: AnyTransaction) => Promise<T>,
  fence: Fence = noFence,
  unit?: string,
): Promise<BatchOutcome<T>> {
  return db.transaction().execute(async (trx) => {
    await checkFence(trx, fence);
    if (unit) {
      const claim = await claimUnit(trx, sql, unit, claimedAt());
      if (claim.replayed) return replayOf<T>(claim.stored);
    }
    const affected: number[] = [];
    for (const q of queries) affected.push(changedRows(await trx.executeQuery(q)));
    const result = after ? await after(trx) : undefined;
    if (unit) await trx.executeQuery(resultQuery(sql, unit, JSON.stringify({ affected, result: result ?? null })));
    return { affected, result, replayed: false };
  });
}

async function transactionOf<T>(
  db: AnyKysely,
  sql: SqlDialect,
  work: (trx: AnyTransaction) => Promise<T>,
  fence: Fence = noFence,
  unit?: string,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await checkFence(trx, fence);
    if (!unit) return work(trx);
    const claim = await claimUnit(trx, sql, unit, claimedAt());
    if (claim.replayed) return (claim.stored === null ? undefined : JSON.parse(claim.stored)) as T;
    const result = await work(trx);
    await trx.executeQuery(resultQuery(sql, unit, JSON.stringify(result ?? null)));
    return result;
  });
}

/**
 * The URL with `search_path` set to `schema` for every session (`options=-c search_path=...`, after
 * any options the URL has, so it wins): the tables, svcsync's state, kysely's migration records and
 * the leases all live there. Schema names are lower-case identifiers (config), so need no quoting.
 */
export function withSearchPath(url: string, schema: string): string {
  return withSessionSetting(url, 'search_path', schema);
}

/** The URL with a server setting for every session (`options=-c name=value`, after any options the URL has). */
function withSessionSetting(url: string, name: string, value: string): string {
  const parsed = new URL(url);
  const given = parsed.searchParams.get('options');
  parsed.searchParams.set('options', `${given ? `${given} ` : ''}-c ${name}=${value}`);
  return parsed.toString();
}

/** The absolute path of a `sqlite:` warehouse URL's file (`:memory:` as it is); null for another URL. */
export function sqliteFileOf(url: string): string | null {
  if (!url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length) || './warehouse.db';
  return path === ':memory:' ? path : resolve(path);
}

/**
 * Makes the configured schemas that do not exist yet (looked up first: CREATE SCHEMA needs a
 * right on the database that a user of an existing schema may lack), and says where the tables
 * and the views are.
 */
async function prepareSchemas(db: AnyKysely, options: Pick<OpenOptions, 'schema' | 'viewsSchema' | 'readOnly'>): Promise<WarehouseSchemas> {
  for (const schema of new Set([options.schema, options.viewsSchema])) {
    if (schema === undefined || options.readOnly) continue;
    const found = await db.executeQuery(CompiledQuery.raw('SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1', [schema]));
    if (found.rows.length === 0) await db.executeQuery(CompiledQuery.raw(`CREATE SCHEMA IF NOT EXISTS "${schema}"`));
  }
  const current = await db.executeQuery<{ schema: string | null }>(CompiledQuery.raw('SELECT current_schema() AS schema'));
  const tables = options.schema ?? current.rows[0]?.schema ?? 'public';
  return { tables, views: options.viewsSchema ?? tables };
}

/**
 * Opens one connection and closes it, before any work: a server that refuses it or does not
 * answer within `timeoutMs` is a wrong setting or a server that is down, told at once with host
 * and port (`classifyOpeningError`), where a connection lost later is waited out for
 * `warehouse.retry_s`. Other faults (a server starting up) come out raw, for `withFaultRetry`.
 */
async function probePostgres(url: string, target: WarehouseTarget, timeoutMs: number): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  const server = client as unknown as { host: string; port: number };
  try {
    await client.connect();
  } catch (raw) {
    // pg's own words for its connect timeout ("timeout expired") do not say how long it waited.
    const error =
      raw instanceof Error && raw.message === 'timeout expired'
        ? new Error(`no answer within ${timeoutMs / 1000} s (timeout expired)`, { cause: raw })
        : raw;
    const opening = classifyOpeningError(error, target, { host: server.host, port: server.port });
    throw opening.fault === 'unreachable' ? opening : error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function openWarehouse(url: string, options: OpenOptions = {}): Promise<Warehouse> {
  const file = sqliteFileOf(url);
  if (file !== null) return openSqlite(file, options);
  if (/^postgres(ql)?:\/\//.test(url)) return openPostgres(url, options);
  throw new ConfigError(`warehouse: "${url}" is not supported`, [], { hint: 'Use sqlite:PATH or postgres://USER@HOST:PORT/DB.' });
}

async function openSqlite(file: string, options: OpenOptions): Promise<Warehouse> {
  const faults: FaultPolicy = {
    dialect: 'sqlite',
    displayUrl: `sqlite:${file}`,
    retryMs: options.retryMs ?? DEFAULT_RETRY_MS,
    onRetry: retryReporter(options.logger),
  };
  // A reader (`options.readOnly`) creates nothing: no file, no folder, no write-ahead log.
  const writer = !options.readOnly;
  const fresh = writer && file !== ':memory:' && !existsSync(file);
  const createdFolder = writer && file !== ':memory:' ? prepareSqliteFolder(file, faults) : null;
  const database = await openSqliteFile(file, writer, faults, options);
  // Said once, at warn: a typo in the path would otherwise sync into an empty warehouse without a word.
  if (fresh)
    options.logger?.warn(
      { warehouse: faults.displayUrl, ...(createdFolder ? { folder: createdFolder } : {}) },
      `creating a new, empty SQLite warehouse at ${file}${createdFolder ? ` (and the folder ${createdFolder})` : ''}; ` +
        'if you meant an existing warehouse, check `warehouse:` in the configuration',
    );
  const wal = writer && file !== ':memory:';
  tuneSqlite(database, wal, writer ? (options.pragmas ?? []) : []);
  const checkpointer = wal ? SqliteCheckpointer.start(file) : null;
  const driver = new SqliteBatchDriver(database, { collectStats: options.sqlStats ?? false });
  const db: AnyKysely = new Kysely({ dialect: new FaultAwareDialect(new SqliteBatchDialect(driver), faults) });
  const leases = new ProcessLeases(new SqliteOrgLeases(db, SQLITE, { ...DEFAULT_LEASE_TIMINGS, ...options.leaseTimings }));
  return {
    db,
    dialect: 'sqlite',
    sql: SQLITE,
    leases,
    faults,
    ...(options.logger ? { logger: options.logger } : {}),
    displayUrl: faults.displayUrl,
    batch: <T>(queries: readonly CompiledQuery[], after?: (trx: AnyTransaction) => Promise<T>, fence?: Fence, unit?: string) =>
      withFaultRetry(faults, () =>
        after ? inTransaction(db, SQLITE, queries, after, fence, unit) : driver.batch<T>(queries, fence, unit, claimedAt),
      ),
    transaction: (work, fence, unit) => withFaultRetry(faults, () => transactionOf(db, SQLITE, work, fence, unit)),
    sqlStats: () => driver.sqlStats(),
    close: async () => {
      await leases.close();
      await checkpointer?.close();
      await db.destroy();
    },
  };
}

/** Opens the SQLite file (a writer in WAL mode) with the busy timeout set. */
function openSqliteFile(file: string, writer: boolean, faults: FaultPolicy, options: OpenOptions): Promise<SQLite.Database> {
  // Another process switching a new file to WAL holds it locked for a moment: waited out like any lock.
  return withFaultRetry(faults, () => {
    let opened: SQLite.Database | null = null;
    try {
      opened = writer ? new SQLite(file) : new SQLite(file, { readonly: true, fileMustExist: true });
      // WAL lets `svcsync status` read while a sync writes; NORMAL sync is durable at
      // checkpoints and keeps per-page commits cheap. Checkpoints run on their own thread.
      opened.pragma(`busy_timeout = ${Math.round(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)}`);
      if (writer) opened.pragma('journal_mode = WAL');
      return Promise.resolve(opened);
    } catch (error) {
      opened?.close();
      return Promise.reject(classifyWarehouseError(error, faults));
    }
  });
}

/** svcsync's pragmas for an open SQLite warehouse, then the configuration's own (`pragmas`, a writer's only). */
function tuneSqlite(database: SQLite.Database, wal: boolean, pragmas: readonly string[]): void {
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = OFF');
  // A 16 MiB page cache (the default is 2 MiB): upserts into wide tables keyed by text ids
  // touch more B-tree pages than 2 MiB holds. Measured (docs/benchmarks.md, issue 14): the
  // list-only sync 18,600 -> 22,000 records/s with the same peak RSS; 64 MiB bought no more
  // and cost 45 MB of RSS.
  database.pragma('cache_size = -16384');
  if (wal) database.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT}`);
  for (const pragma of pragmas) database.pragma(pragma);
}

async function openPostgres(url: string, options: OpenOptions): Promise<Warehouse> {
  if (options.schema !== undefined) url = withSearchPath(url, options.schema);
  // The server refuses every write of such a session: a reader cannot change the warehouse by mistake.
  if (options.readOnly) url = withSessionSetting(url, 'default_transaction_read_only', 'on');
  setPgTypeParsers();
  const timings = { ...DEFAULT_LEASE_TIMINGS, ...options.leaseTimings };
  const pool = postgresPool(url, options.poolSize ?? 10, timings.ttlMs);
  const faults: FaultPolicy = {
    dialect: 'postgres',
    displayUrl: displayWarehouseUrl(url),
    retryMs: options.retryMs ?? DEFAULT_RETRY_MS,
    onRetry: retryReporter(options.logger),
  };
  const db: AnyKysely = new Kysely({ dialect: new FaultAwareDialect(new PostgresDialect({ pool }), faults) });
  let schemas: WarehouseSchemas;
  try {
    await withFaultRetry(faults, () => probePostgres(url, faults, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS));
    schemas = await prepareSchemas(db, options);
  } catch (error) {
    await db.destroy().catch(() => undefined);
    throw classifyWarehouseError(error, faults);
  }
  const leases = new ProcessLeases(new PostgresOrgLeases(url, POSTGRES, timings));
  return {
    db,
    dialect: 'postgres',
    sql: POSTGRES,
    schemas,
    leases,
    faults,
    ...(options.logger ? { logger: options.logger } : {}),
    displayUrl: faults.displayUrl,
    batch: <T>(queries: readonly CompiledQuery[], after?: (trx: AnyTransaction) => Promise<T>, fence?: Fence, unit?: string) =>
      withFaultRetry(faults, () => inTransaction(db, POSTGRES, queries, after, fence, unit)),
    transaction: (work, fence, unit) => withFaultRetry(faults, () => transactionOf(db, POSTGRES, work, fence, unit)),
    close: async () => {
      await leases.close();
      await db.destroy();
    },
  };
}

function postgresPool(url: string, max: number, leaseTtlMs: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    // A process paused or hung inside a transaction (between its statements) must not hold row
    // and advisory locks for ever: the server ends such a session after the lease's time-to-live,
    // as it ends the idle lock session, and the transaction rolls back (a page is all or nothing).
    idle_in_transaction_session_timeout: Math.max(1_000, Math.round(leaseTtlMs)),
  });
  // A session the server ends (the idle-in-transaction timeout of a paused process, a restart,
  // an administrator) must not take the process down with an unhandled 'error' event: the query
  // that uses it fails (its transaction rolls back), and the pool drops the dead session.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
