import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import type { LimiterRegistry, OrgLimiter } from '../api/limiter.js';
import type { Warehouse } from '../loaders/warehouse.js';

/**
 * Counts the warehouse queries in flight. The daemon uses it to tell when a stopped job's
 * last page has reached the warehouse, and before closing the warehouse on shutdown.
 * A query that fails never reaches transformResult, so callers bound their waits.
 */
export class QueryTracker implements KyselyPlugin {
  private readonly open = new Set<unknown>();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.open.add(args.queryId);
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.open.delete(args.queryId);
    return args.result;
  }

  inFlight(): number {
    return this.open.size;
  }

  /** The same warehouse, every query and batch counted. Closing it closes the original. */
  wrap(warehouse: Warehouse): Warehouse {
    return {
      ...warehouse,
      db: warehouse.db.withPlugin(this),
      // A batch runs on the driver, past the plugin's transformResult: it counts as one
      // query while it runs, and it ends the queries compiled for it (counted at compile).
      batch: async (queries, after) => {
        const id = Symbol('batch');
        this.open.add(id);
        try {
          await warehouse.batch(queries, after);
        } finally {
          this.open.delete(id);
          for (const q of queries) this.open.delete(q.queryId);
        }
      },
    };
  }
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Waits until nothing is in flight for two event-loop turns in a row, or until `bail`
 * says to stop waiting. A page whose response arrived is normalized and committed by
 * promise continuations and warehouse I/O alone, so "no request and no query in flight
 * across a turn" means every page received so far has been committed.
 */
export async function quiesce(busy: () => boolean, bail: () => boolean): Promise<boolean> {
  let idleTurns = 0;
  while (idleTurns < 2) {
    if (bail()) return false;
    await nextTurn();
    idleTurns = busy() ? 0 : idleTurns + 1;
  }
  return true;
}

export interface FetchGateOptions {
  fetch: typeof fetch;
  /** True when the job should start no more requests (shutdown, or its budget share is spent). */
  hold: () => boolean;
  /** Warehouse queries in flight for this job's warehouse handle. */
  queries: () => number;
  /** Called once, when a hold began and every request in flight has been answered and committed. */
  drained: () => void;
}

/**
 * Wraps the fetch a sync run uses, so a job can be stopped between pages: once `hold()` is
 * true a new request is not sent (it waits, and fails when the run's signal aborts); the
 * requests already in flight finish, their pages commit, and then `drained()` aborts the run.
 * runSync's own signal would abandon the page in flight instead.
 */
export class FetchGate {
  private inFlight = 0;
  private holding = false;
  private draining = false;
  private drainedCalled = false;

  constructor(private readonly opts: FetchGateOptions) {}

  readonly fetch: typeof fetch = async (input, init) => {
    if (this.opts.hold()) {
      this.holding = true;
      this.maybeDrain();
      return new Promise<Response>((_resolve, reject) => {
        const signal = init?.signal;
        if (!signal) return;
        if (signal.aborted) reject(signal.reason);
        else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    this.inFlight++;
    try {
      const response = await this.opts.fetch(input, init);
      // Read the body here, so "answered" means the whole page is in memory.
      const body = await response.arrayBuffer();
      return new Response(response.status === 204 || response.status === 304 ? null : body, { status: response.status, statusText: response.statusText, headers: response.headers });
    } finally {
      this.inFlight--;
      this.maybeDrain();
    }
  };

  /** Requests this gate has sent that have not been answered yet. */
  pending(): number {
    return this.inFlight;
  }

  /** Makes a hold that began without a new request (a stop while nothing asks for more) drain too. */
  poke(): void {
    if (this.opts.hold()) {
      this.holding = true;
      this.maybeDrain();
    }
  }

  private maybeDrain(): void {
    if (!this.holding || this.draining || this.drainedCalled || this.inFlight > 0) return;
    this.draining = true;
    void quiesce(
      () => this.inFlight > 0 || this.opts.queries() > 0,
      () => this.drainedCalled,
    ).then(() => {
      this.draining = false;
      if (this.drainedCalled || this.inFlight > 0) return;
      this.drainedCalled = true;
      this.opts.drained();
    });
  }
}

/**
 * The shared limiter registry as one job sees it: a request asked for while `hold()` is true
 * waits (and fails when the run's signal aborts) *before* the organization's limiter counts
 * it. Holding at the fetch alone would count requests that are never sent, and a job stopped
 * at its share of the budget would eat into the share it must leave.
 */
export function gatedLimiters(inner: LimiterRegistry, hold: () => boolean, onHold: () => void): LimiterRegistry {
  const wrap = (limiter: OrgLimiter): OrgLimiter =>
    new Proxy(limiter, {
      get(target, prop) {
        if (prop === 'schedule') {
          return <T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
            if (!hold()) return target.schedule(fn, signal);
            onHold();
            return new Promise<T>((_resolve, reject) => {
              if (!signal) return;
              if (signal.aborted) reject(signal.reason);
              else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
            });
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  const view = Object.create(inner) as LimiterRegistry;
  view.get = (organizationId, config) => inner.get(organizationId, config).then(wrap);
  view.peek = (organizationId) => inner.peek(organizationId);
  view.flush = () => inner.flush();
  return view;
}
