import pLimit from 'p-limit';
import type { ApiClient, RequestEvent, TokenCacheRegistry } from '../api/client.js';
import type { LimiterRegistry } from '../api/limiter.js';
import type { Family } from '../catalog/families.js';
import type { StreamSpec } from '../catalog/types.js';
import type { Config, ConnectionConfig } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { describeError, ExitCode, exitCodeForWarehouse, QuotaExhaustedError, SvcsyncError, WarehouseError } from '../core/errors.js';
import { watchHeap } from '../core/heap-budget.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { LeaseLost } from '../loaders/lease/fence.js';
import { TableWriter } from '../loaders/table-writer.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { closeAbandonedRuns, finishRun, startRun } from '../state/runs.js';
import { silentProgress, type ProgressReporter, type SyncContext } from './context.js';
import { discoverOrganizations, familySkipMessage, knownOrganization } from './discovery.js';
import { busyOutcome, lostLease, withOrganizationLease } from './organization-lease.js';
import { syncOrganization } from './organization-sync.js';
import type { OrganizationOutcome } from './stream-outcome.js';
import type { RecordBudget } from './record-budget.js';
import { clientFor, setUpRun, type RunSetup } from './run-setup.js';
import { runAll } from './settle.js';
import { endsTheRun, neverStop, StopRequested, type StopRequest } from './stop.js';
import type { SyncMode } from './pass-start.js';
import {
  exitCodeOf,
  RunStopped,
  runStatusOf,
  type ConnectionFailure,
  type FamilySkip,
  type SyncSummary,
  type UsageLine,
} from './run-summary.js';

export { exitCodeOf, RunStopped } from './run-summary.js';
export type { ConnectionFailure, FamilySkip, SyncSummary, UsageLine } from './run-summary.js';

export interface SyncRunOptions {
  config: Config;
  warehouse: Warehouse;
  clock: Clock;
  logger: Logger;
  secrets: SecretRegistry;
  /** Hard stop: abandons the pages in flight. */
  signal: AbortSignal;
  /** Cooperative stop, asked between pages and completion items; the run then throws StopRequested. */
  stop?: StopRequest;
  progress?: ProgressReporter;
  command: string;
  mode: SyncMode;
  since?: string | undefined;
  /** A reconcile re-reads every parent's child lists even when its slower cycle is not due. */
  deep?: boolean | undefined;
  /** A scheduled run (the daemon's, a worker's): trees read whole follow their slow cycle (`PassOptions`). */
  wholeReadCycle?: boolean | undefined;
  connection?: string | undefined;
  organization?: string | undefined;
  streams?: readonly string[] | undefined;
  catalog?: readonly StreamSpec[];
  /** Test seams: a fetch, a random source, a shared limiter registry, request events. */
  fetch?: typeof fetch;
  random?: () => number;
  limiters?: LimiterRegistry;
  /** Token caches that outlive this run (the daemon's), so a run does not refresh the token anew. */
  tokens?: TokenCacheRegistry;
  /** The process's cap on records in flight, shared by its concurrent runs (the daemon's, a worker's). */
  records?: RecordBudget;
  /** The caller keeps the process's heap near `sync.heap_budget_mb` itself (the daemon, workers). */
  heapWatched?: boolean;
  onRequest?: (e: RequestEvent) => void;
  /**
   * When another process owns an organization (its lease, src/loaders/lease/): wait for
   * it to let go (`svcsync sync --wait`), else skip the organization, reported as `busy`.
   */
  waitForLease?: boolean;
}

/**
 * One run of everything configured (or the subset asked for): discover each connection's
 * organizations, then sync them side by side. An organization that fails is reported while
 * the others carry on.
 */
export async function runSync(options: SyncRunOptions): Promise<SyncSummary> {
  // A one-off run keeps its own process's heap near the budget; the daemon and workers watch for their whole life.
  const heap = options.heapWatched ? null : watchHeap(options.config.sync.heap_budget_mb);
  try {
    const run = await SyncRun.start(options);
    return await run.run();
  } finally {
    heap?.stop();
  }
}

/**
 * A run, step by step (`run`): every connection's branch (discovery, then its organizations),
 * the day's usage back to the warehouse, and the run's end recorded and summed up.
 */
class SyncRun {
  private readonly writer: TableWriter;
  private readonly organizations: OrganizationOutcome[] = [];
  private readonly connectionFailures: ConnectionFailure[] = [];
  private readonly skippedFamilies: FamilySkip[] = [];
  private readonly clients: ApiClient[] = [];
  private readonly touched = new Set<string>();
  /** Unknown fields warned about: once per field per run, whichever connection sees it first. */
  private readonly driftWarned = new Set<string>();
  /** A warehouse fault that outlived its retries ends the run: organizations not yet started are not started. */
  private fault: WarehouseError | null = null;

  private constructor(
    private readonly options: SyncRunOptions,
    private readonly setup: RunSetup,
    private readonly startedAt: string,
  ) {
    this.writer = new TableWriter(options.warehouse.sql);
  }

  /** Sets the run up and records its start, closing the earlier runs that never recorded their end. */
  static async start(options: SyncRunOptions): Promise<SyncRun> {
    const { warehouse, logger } = options;
    const setup = await setUpRun(options);
    const { runId, stamp } = setup;
    const startedAt = stamp.next();
    const abandoned = await closeAbandonedRuns(warehouse.db, { runId, at: startedAt });
    if (abandoned.length > 0)
      logger.warn({ runs: abandoned }, `closed ${abandoned.length} earlier run(s) that ended without recording their end, as abandoned`);
    await startRun(warehouse.db, { runId, command: options.command, startedAt });
    return new SyncRun(options, setup, startedAt);
  }

  async run(): Promise<SyncSummary> {
    // allSettled: when the run is aborted, every connection's branch has ended (and committed
    // what it had) before the run is recorded as stopped.
    const branches = await Promise.allSettled(this.setup.connections.map((connection) => this.syncConnection(connection)));
    // The day's usage goes back to the warehouse; a warehouse that failed keeps the last chunk taken (counted in full, never under).
    await this.setup.limiters.flush().catch((error: unknown) => {
      if (!(error instanceof WarehouseError)) throw error;
      this.fault ??= error;
    });
    const counted = this.counted();
    const aborted = branches.find((b): b is PromiseRejectedResult => b.status === 'rejected');
    if (aborted) return this.stopped(aborted.reason, counted);
    return this.finish(counted);
  }

  /** One connection's branch: its organizations found, then synced. A connection that fails is reported. */
  private async syncConnection(connection: ConnectionConfig): Promise<void> {
    const ctx = this.contextFor(connection);
    try {
      const found = await this.discover(ctx, connection);
      // Discovery alone (the daemon's and workers' organizations job asks for no streams): no
      // organization is synced, so none is leased; taking each one's lease in turn made its own
      // jobs find it busy.
      if (this.options.streams?.length === 0) return;
      await this.syncOrganizations(ctx, connection, found);
      const refused = ctx.halt.authorization;
      if (refused) {
        this.connectionFailures.push({ connection: connection.name, kind: 'authorization', error: describeError(refused) });
      }
    } catch (error) {
      if (endsTheRun(error, this.options.signal)) throw error;
      if (error instanceof WarehouseError) this.fault ??= error;
      ctx.logger.error({ err: error }, `connection ${connection.name} failed: ${describeError(error)}`);
      this.connectionFailures.push({
        connection: connection.name,
        kind: error instanceof SvcsyncError ? error.kind : 'unexpected',
        error: describeError(error),
      });
    }
  }

  private contextFor(connection: ConnectionConfig): SyncContext {
    const { options, setup } = this;
    const client = clientFor(setup, options, connection);
    this.clients.push(client);
    return {
      config: options.config,
      connection,
      warehouse: options.warehouse,
      writer: this.writer,
      client,
      limiters: setup.limiters,
      catalog: setup.catalog,
      logger: options.logger.child({ connection: connection.name }),
      clock: options.clock,
      stamp: setup.stamp,
      signal: options.signal,
      stop: options.stop ?? neverStop,
      progress: options.progress ?? silentProgress,
      runId: setup.runId,
      history: setup.history.get(connection.name),
      halt: { authorization: null },
      pagingRefused: new Set<string>(),
      driftWarned: this.driftWarned,
      records: setup.records,
    };
  }

  /** The connection's organizations (the one asked for, when it is known), and the families it could not list. */
  private async discover(ctx: SyncContext, connection: ConnectionConfig): Promise<Map<string, Family[]>> {
    const { warehouse, config, organization } = this.options;
    const known = organization ? await knownOrganization(warehouse, connection, organization) : null;
    const discovery = known
      ? { organizations: known, skipped: [] }
      : await discoverOrganizations({ ...ctx, perPage: config.sync.per_page, record: { warehouse, writer: this.writer } }, organization);
    for (const { family, error } of discovery.skipped) {
      this.skippedFamilies.push({ connection: connection.name, family, error: familySkipMessage(family, error) });
    }
    return discovery.organizations;
  }

  /**
   * The organizations side by side. Each one's outcome lands in its slot as it ends, so that a
   * stopped run still reports the finished ones.
   */
  private async syncOrganizations(ctx: SyncContext, connection: ConnectionConfig, found: Map<string, Family[]>): Promise<void> {
    const limit = pLimit(this.options.config.sync.organization_concurrency);
    const entries = [...found.entries()];
    const slots: (OrganizationOutcome | undefined)[] = entries.map(() => undefined);
    try {
      await runAll(
        limit,
        entries.map(([organizationId, families], i) => async () => {
          slots[i] = await this.syncOne(ctx, connection, organizationId, families, (o) => (slots[i] = o));
        }),
      );
    } finally {
      this.organizations.push(...slots.filter((o): o is OrganizationOutcome => o !== undefined));
    }
  }

  /** One organization under its lease; one another process owns is busy, one that fails is reported. */
  private async syncOne(
    ctx: SyncContext,
    connection: ConnectionConfig,
    organizationId: string,
    families: Family[],
    onStopped: (o: OrganizationOutcome) => void,
  ): Promise<OrganizationOutcome> {
    if (this.fault) return notStarted(ctx, organizationId, families, this.fault);
    this.touched.add(organizationId);
    const { options } = this;
    try {
      const leased = await withOrganizationLease(ctx, organizationId, options.waitForLease ?? false, (fence) =>
        syncOrganization({ ...ctx, fence }, organizationId, families, {
          mode: options.mode,
          since: options.since,
          deep: options.deep,
          wholeReadCycle: options.wholeReadCycle,
          streams: options.streams ?? connection.streams,
          onStopped,
        }),
      );
      if (!leased.held) return busyOutcome(ctx, organizationId, families, leased.owner);
      const { outcome, ended } = leased.value;
      if (ended instanceof WarehouseError) this.fault ??= ended;
      if (ended instanceof LeaseLost) return await lostLease(ctx, outcome, ended);
      return outcome;
    } catch (error) {
      if (endsTheRun(error, options.signal)) throw error;
      return this.failedOrganization(ctx, organizationId, families, error);
    }
  }

  private async failedOrganization(
    ctx: SyncContext,
    organizationId: string,
    families: Family[],
    error: unknown,
  ): Promise<OrganizationOutcome> {
    const base = { connection: ctx.connection.name, organizationId, families, status: 'failed' as const, streams: [] };
    if (error instanceof LeaseLost) return await lostLease(ctx, base, error);
    if (error instanceof WarehouseError) this.fault ??= error;
    ctx.logger.error({ organization_id: organizationId, err: error }, `organization failed: ${describeError(error)}`);
    const failed: OrganizationOutcome = {
      ...base,
      status: error instanceof QuotaExhaustedError ? 'quota' : 'failed',
      error: describeError(error),
    };
    if (error instanceof QuotaExhaustedError) failed.resumeAt = error.resumeAt.toISOString();
    if (error instanceof WarehouseError) failed.failure = 'warehouse';
    return failed;
  }

  /** What was committed, the same whether the run ended or was stopped. */
  private counted(): Counted {
    const usage: UsageLine[] = [];
    for (const organizationId of this.touched) {
      const l = this.setup.limiters.peek(organizationId);
      if (!l) continue;
      usage.push({
        organizationId,
        usedToday: l.usedToday(),
        budget: l.budget(),
        perDay: l.limits.per_day,
        nextReset: l.nextReset().toISOString(),
        blockedUntil: l.blockedUntil()?.toISOString() ?? null,
      });
    }
    const requests = this.clients.reduce((a, c) => a + c.stats().requests, 0);
    const written = this.organizations.reduce((a, o) => a + o.streams.reduce((b, s) => b + s.written, 0), 0);
    return { usage, requests, written };
  }

  private summaryAt(finishedAt: string, exitCode: ExitCode, { requests, usage }: Counted): SyncSummary {
    return {
      runId: this.setup.runId,
      command: this.options.command,
      startedAt: this.startedAt,
      finishedAt,
      organizations: this.organizations,
      connectionFailures: this.connectionFailures,
      skippedFamilies: this.skippedFamilies,
      requests,
      usage,
      exitCode,
    };
  }

  /** A run asked to stop (or failed outside every branch's own handling): recorded, then thrown with what it committed. */
  private async stopped(cause: unknown, counted: Counted): Promise<never> {
    const reason = cause instanceof StopRequested ? cause.reason : describeError(cause);
    const finishedAt = this.setup.stamp.next();
    await finishRun(this.options.warehouse.db, this.setup.runId, {
      finishedAt,
      status: 'stopped',
      requests: counted.requests,
      records: counted.written,
      errors: [describeError(cause)],
    }).catch((error: unknown) => this.options.logger.warn({ err: error }, `could not record the run's end: ${describeError(error)}`));
    if (!endsTheRun(cause, this.options.signal)) throw cause;
    throw new RunStopped(reason, { ...this.summaryAt(finishedAt, ExitCode.partial, counted), stopped: reason }, { cause });
  }

  /** The run's end: its exit code and summary, recorded in `_svcsync_runs`. */
  private async finish(counted: Counted): Promise<SyncSummary> {
    const { organizations, connectionFailures, skippedFamilies, fault } = this;
    const authorization = skippedFamilies.map((f) => ({ connection: f.connection, kind: 'authorization' as const, error: f.error }));
    const exitCode = exitCodeOf(organizations, [...connectionFailures, ...authorization], fault);
    const finishedAt = this.setup.stamp.next();
    const summary: SyncSummary = {
      ...this.summaryAt(finishedAt, exitCode, counted),
      ...(fault ? { warehouseFault: fault.describe() } : {}),
    };
    const errors = [
      ...connectionFailures.map((f) => `${f.connection}: ${f.error}`),
      ...skippedFamilies.map((f) => `${f.connection}: ${f.error}`),
      ...organizations.filter((o) => o.status !== 'ok').map((o) => `${o.connection}/${o.organizationId}: ${o.error ?? o.status}`),
    ];
    try {
      const status = runStatusOf(exitCode);
      await finishRun(this.options.warehouse.db, this.setup.runId, {
        finishedAt,
        status,
        requests: counted.requests,
        records: counted.written,
        errors,
      });
    } catch (error) {
      // What was committed stays committed; the summary still tells it, and the next run closes this row as abandoned.
      if (!(error instanceof WarehouseError)) throw error;
      this.options.logger.warn({ err: error }, `could not record the run's end in _svcsync_runs: ${describeError(error)}`);
      summary.unrecorded = error.describe();
      if (summary.exitCode === ExitCode.ok) summary.exitCode = exitCodeForWarehouse(error.fault);
    }
    return summary;
  }
}

/** What the run's summary and its row in `_svcsync_runs` count. */
interface Counted {
  usage: UsageLine[];
  requests: number;
  written: number;
}

/** An organization not started because the warehouse failed under another one first. */
function notStarted(ctx: SyncContext, organizationId: string, families: Family[], fault: WarehouseError): OrganizationOutcome {
  return {
    connection: ctx.connection.name,
    organizationId,
    families,
    status: 'failed',
    streams: [],
    failure: 'warehouse',
    error: `not started: ${fault.message}`,
  };
}
