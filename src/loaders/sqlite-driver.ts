import { noFence, type Fence } from './lease/fence.js';
import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type QueryCompiler,
  type QueryResult,
} from 'kysely';
import type { AnyKysely } from './db.js';
import { changedRows, claimQuery, replayOf, resultQuery, storedQuery, type BatchOutcome } from './applied-units.js';
import { SQLITE } from './sql-dialect.js';

/** Time spent in SQLite by statement shape (collected only when asked for, by the benchmark). */
export interface SqlStat {
  shape: string;
  count: number;
  prepareMs: number;
  executeMs: number;
}

/**
 * Prepared statements by their text, least recently used dropped. Kysely's own SqliteDriver
 * prepares every query anew; a page's upserts repeat the same few statements, and preparing
 * a 200-row insert costs more than running it. Values are always bound parameters, so the
 * texts are few.
 */
class StatementCache {
  private readonly cache = new Map<string, SQLite.Statement>();
  private readonly stats: Map<string, SqlStat> | null;

  constructor(
    private readonly database: SQLite.Database,
    collectStats: boolean,
    private readonly size = 256,
  ) {
    this.stats = collectStats ? new Map() : null;
  }

  get(sql: string): SQLite.Statement {
    let stmt = this.cache.get(sql);
    if (stmt) {
      this.cache.delete(sql);
    } else {
      const t0 = this.stats ? performance.now() : 0;
      stmt = this.database.prepare(sql);
      if (this.stats) this.stat(sql).prepareMs += performance.now() - t0;
      if (this.cache.size >= this.size) this.cache.delete(this.cache.keys().next().value as string);
    }
    this.cache.set(sql, stmt);
    return stmt;
  }

  /** Runs a statement; with stats on, its time is added to its shape's. */
  run<T>(sql: string, fn: () => T): T {
    if (!this.stats) return fn();
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      const s = this.stat(sql);
      s.count++;
      s.executeMs += performance.now() - t0;
    }
  }

  collected(): SqlStat[] {
    return [...(this.stats?.values() ?? [])].sort((a, b) => b.prepareMs + b.executeMs - (a.prepareMs + a.executeMs));
  }

  clear(): void {
    this.cache.clear();
  }

  private stat(sql: string): SqlStat {
    // The shape: the SQL text up to its table name, so time can be split by table.
    const m = /^\s*(insert into "[^"]+"|update "[^"]+"|delete from "[^"]+"|select .*? from "[^"]+")/is.exec(sql);
    const shape = (m ? m[1]! : sql.slice(0, 60)).replace(/\s+/g, ' ').slice(0, 90);
    let s = this.stats!.get(shape);
    if (!s) this.stats!.set(shape, (s = { shape, count: 0, prepareMs: 0, executeMs: 0 }));
    return s;
  }
}

class Connection implements DatabaseConnection {
  constructor(private readonly statements: StatementCache) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    return Promise.resolve(this.execute<R>(compiledQuery));
  }

  execute<R>(compiledQuery: CompiledQuery): QueryResult<R> {
    const { sql, parameters } = compiledQuery;
    const stmt = this.statements.get(sql);
    if (stmt.reader) return { rows: this.statements.run(sql, () => stmt.all(parameters as unknown[])) as R[] };
    const { changes, lastInsertRowid } = this.statements.run(sql, () => stmt.run(parameters as unknown[]));
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiledQuery.query)) throw new Error('SQLite streams only select queries');
    const stmt = this.statements.get(compiledQuery.sql);
    // better-sqlite3 reads each row synchronously; an async generator awaits what it yields,
    // so each row goes out as a settled promise, which is what `yield row` would do anyway.
    for (const row of stmt.iterate(compiledQuery.parameters)) yield Promise.resolve({ rows: [row as R] });
  }
}

/** One connection, so one user at a time (as in kysely's own SqliteDriver). */
class Mutex {
  private tail: Promise<void> = Promise.resolve();
  private release: (() => void) | null = null;

  async lock(): Promise<void> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((r) => (release = r));
    await previous;
    this.release = release;
  }

  unlock(): void {
    const r = this.release;
    this.release = null;
    r?.();
  }
}

/**
 * Kysely's SqliteDriver, plus a prepared-statement cache and `batch`: a list of compiled
 * queries run as one transaction without returning to the event loop between them (a page's
 * upserts, queued work and cursor). It takes the same lock as kysely's transactions, so a
 * batch never lands inside another caller's transaction.
 */
export class SqliteBatchDriver implements Driver {
  private readonly mutex = new Mutex();
  private readonly statements: StatementCache;
  private readonly connection: Connection;

  constructor(
    private readonly database: SQLite.Database,
    options: { collectStats?: boolean } = {},
  ) {
    this.statements = new StatementCache(database, options.collectStats ?? false);
    this.connection = new Connection(this.statements);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.mutex.lock();
    return this.connection;
  }

  // IMMEDIATE takes the write lock at BEGIN, where the busy timeout applies, instead of at the
  // first write, where a lock held by another process can fail at once. Every svcsync
  // transaction writes; migrations rely on it to run one process at a time.
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // SQLite rolls a transaction back by itself after some errors (SQLITE_FULL, SQLITE_IOERR).
    if (this.database.inTransaction) await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  releaseConnection(): Promise<void> {
    this.mutex.unlock();
    return Promise.resolve();
  }

  /**
   * With a `unit` id the batch runs once (src/loaders/applied-units.ts): a claimed id means an
   * earlier attempt committed, and its stored report is returned instead.
   */
  async batch<T = undefined>(
    queries: readonly CompiledQuery[],
    fence: Fence = noFence,
    unit?: string,
    now: () => string = () => new Date().toISOString(),
  ): Promise<BatchOutcome<T>> {
    const lost = fence.lost();
    if (lost) throw lost;
    await this.mutex.lock();
    try {
      this.connection.execute(CompiledQuery.raw('begin immediate'));
      try {
        // The lease's check first: it takes the write lock, and a refusal rolls back before any write.
        if (fence.query && !fence.holds(this.connection.execute(fence.query))) throw fence.refusal();
        const outcome = this.runOnce<T>(queries, unit, now);
        this.connection.execute(CompiledQuery.raw('commit'));
        return outcome;
      } catch (error) {
        if (this.database.inTransaction) this.connection.execute(CompiledQuery.raw('rollback'));
        throw error;
      }
    } finally {
      this.mutex.unlock();
    }
  }

  private runOnce<T>(queries: readonly CompiledQuery[], unit: string | undefined, now: () => string): BatchOutcome<T> {
    if (unit !== undefined && changedRows(this.connection.execute(claimQuery(SQLITE, unit, now()))) === 0) {
      const stored = this.connection.execute<{ result: string | null }>(storedQuery(SQLITE, unit)).rows[0]?.result ?? null;
      return replayOf<T>(stored);
    }
    const affected = queries.map((q) => changedRows(this.connection.execute(q)));
    if (unit !== undefined) this.connection.execute(resultQuery(SQLITE, unit, JSON.stringify({ affected, result: null })));
    return { affected, result: undefined, replayed: false };
  }

  sqlStats(): SqlStat[] {
    return this.statements.collected();
  }

  destroy(): Promise<void> {
    this.statements.clear();
    this.database.close();
    return Promise.resolve();
  }
}

/**
 * SQLite runs DDL inside transactions, but kysely's adapter says it does not (it assumes one
 * connection, so it needs no lock either). Saying so makes kysely's migrator run the pending
 * migrations and their records in one transaction, begun IMMEDIATE: a migration cut short (a
 * full disk) leaves nothing behind, and a second process waits, then finds nothing to do.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

export class SqliteBatchDialect implements Dialect {
  constructor(private readonly driver: SqliteBatchDriver) {}
  createDriver(): Driver {
    return this.driver;
  }
  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
  createIntrospector(db: AnyKysely): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}
