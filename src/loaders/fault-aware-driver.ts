import type {
  CompiledQuery,
  DatabaseConnection,
  DatabaseIntrospector,
  Dialect,
  DialectAdapter,
  Driver,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { SvcsyncError, WarehouseError } from '../core/errors.js';
import type { AnyKysely } from './db.js';
import { classifyWarehouseError, type WarehouseTarget } from './warehouse-errors.js';

/**
 * How long and how svcsync waits out a transient warehouse fault (a lost connection, a
 * restart, another program's lock). Warehouses are real systems, so this runs on wall time.
 */
export interface FaultPolicy extends WarehouseTarget {
  /** How long one operation keeps retrying (`warehouse.retry_s`). */
  retryMs: number;
  /** Told before each retry (a warning the first time, so a wait is never silent). */
  onRetry?: (error: WarehouseError, attempt: number, waitMs: number) => void;
  /** Tests shorten waits. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The wait before retry `attempt` (0-based): 250 ms doubling to 5 s, never past the deadline. */
export function retryWaitMs(attempt: number, remainingMs: number): number {
  return Math.max(0, Math.min(5_000, 250 * 2 ** attempt, remainingMs));
}

/**
 * Runs `work` (a whole statement or transaction that is safe to repeat), classifying a failure
 * once and retrying transient ones until `retryMs` has passed. Every svcsync write is an
 * upsert or sets absolute values, so repeating one whose commit was lost with its connection
 * writes the same rows again.
 */
export async function withFaultRetry<T>(policy: FaultPolicy, work: () => Promise<T>, sql?: string): Promise<T> {
  const now = policy.now ?? Date.now;
  const sleep = policy.sleep ?? realSleep;
  const started = now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (raw) {
      // Not a driver failure (a lost lease, a stop, a bug in a callback): not ours to classify or retry.
      if (!isDriverFailure(raw)) throw raw;
      const error = classifyWarehouseError(raw, policy, sql);
      const remaining = policy.retryMs - (now() - started);
      if (!error.retriable || remaining <= 0) throw error;
      const waitMs = retryWaitMs(attempt, remaining);
      policy.onRetry?.(error, attempt, waitMs);
      await sleep(waitMs);
    }
  }
}

/**
 * Whether a thrown value came from the database or its connection (and so is the classifier's),
 * rather than from svcsync's own code running inside a transaction.
 */
export function isDriverFailure(error: unknown): boolean {
  if (error instanceof SvcsyncError) return error instanceof WarehouseError;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code.length > 0) return true;
  return /connection|terminat|not queryable|client was closed|database is locked|disk is full/i.test(error.message);
}

/** A connection that knows whether it is inside a transaction (where one statement cannot be retried alone). */
class FaultAwareConnection implements DatabaseConnection {
  inTransaction = false;
  constructor(
    private readonly driver: FaultAwareDriver,
    public inner: DatabaseConnection,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.inTransaction) {
      try {
        return await this.inner.executeQuery<R>(query);
      } catch (error) {
        throw this.driver.classify(error, query.sql);
      }
    }
    // Outside a transaction a statement stands alone: after a lost connection, on a new one.
    return withFaultRetry(
      this.driver.policy,
      async () => {
        try {
          return await this.inner.executeQuery<R>(query);
        } catch (error) {
          const classified = this.driver.classify(error, query.sql);
          if (classified.fault === 'connection_lost' || classified.fault === 'shutting_down') await this.driver.replace(this);
          throw classified;
        }
      },
      query.sql,
    );
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize);
    } catch (error) {
      throw this.driver.classify(error, query.sql);
    }
  }
}

/**
 * Wraps a kysely driver so that no raw driver error leaves the warehouse: each is classified
 * once (`classifyWarehouseError`), and transient ones are retried where that is safe, on a new
 * connection when the old one died (taking a connection; a statement outside a transaction;
 * beginning a transaction). A statement inside a transaction is not retried alone: the caller
 * retries the whole transaction (`Warehouse.batch` and `Warehouse.transaction`).
 */
export class FaultAwareDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    readonly policy: FaultPolicy,
  ) {}

  classify(error: unknown, sql?: string): WarehouseError {
    return classifyWarehouseError(error, this.policy, sql);
  }

  init(): Promise<void> {
    return withFaultRetry(this.policy, () => this.inner.init());
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new FaultAwareConnection(this, await withFaultRetry(this.policy, () => this.inner.acquireConnection()));
  }

  /** Gives a dead connection back (the pool drops it) and takes a new one in its place. */
  async replace(connection: FaultAwareConnection): Promise<void> {
    await this.inner.releaseConnection(connection.inner).catch(() => undefined);
    connection.inner = await withFaultRetry(this.policy, () => this.inner.acquireConnection());
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const c = connection as FaultAwareConnection;
    // Nothing has happened yet, so waiting for another program's lock (SQLite's BEGIN IMMEDIATE) is safe to repeat.
    await withFaultRetry(this.policy, async () => {
      try {
        await this.inner.beginTransaction(c.inner, settings);
      } catch (error) {
        const classified = this.classify(error);
        if (classified.fault === 'connection_lost' || classified.fault === 'shutting_down') await this.replace(c);
        throw classified;
      }
    });
    c.inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as FaultAwareConnection;
    try {
      await this.inner.commitTransaction(c.inner);
    } catch (error) {
      throw this.classify(error);
    } finally {
      c.inTransaction = false;
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as FaultAwareConnection;
    c.inTransaction = false;
    // The error that caused the rollback is the one to report: after a lost connection or an
    // automatic rollback (SQLite after SQLITE_FULL) the ROLLBACK itself fails and would hide it.
    await this.inner.rollbackTransaction(c.inner).catch(() => undefined);
  }

  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    const c = connection as FaultAwareConnection;
    if (!this.inner.savepoint) throw new Error('savepoints are not supported by this driver');
    await this.inner.savepoint(c.inner, name, compile).catch((error: unknown) => {
      throw this.classify(error);
    });
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    const c = connection as FaultAwareConnection;
    if (!this.inner.rollbackToSavepoint) throw new Error('savepoints are not supported by this driver');
    await this.inner.rollbackToSavepoint(c.inner, name, compile).catch((error: unknown) => {
      throw this.classify(error);
    });
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    const c = connection as FaultAwareConnection;
    if (!this.inner.releaseSavepoint) throw new Error('savepoints are not supported by this driver');
    await this.inner.releaseSavepoint(c.inner, name, compile).catch((error: unknown) => {
      throw this.classify(error);
    });
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as FaultAwareConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** A kysely dialect whose driver is wrapped in a `FaultAwareDriver`; everything else is the inner dialect's. */
export class FaultAwareDialect implements Dialect {
  constructor(
    private readonly inner: Dialect,
    private readonly policy: FaultPolicy,
  ) {}
  createDriver(): Driver {
    return new FaultAwareDriver(this.inner.createDriver(), this.policy);
  }
  createQueryCompiler(): QueryCompiler {
    return this.inner.createQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return this.inner.createAdapter();
  }
  createIntrospector(db: AnyKysely): DatabaseIntrospector {
    return this.inner.createIntrospector(db);
  }
}
