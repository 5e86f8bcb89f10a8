import pLimit from 'p-limit';
import type { ApiClient, RequestEvent, TokenCacheRegistry } from '../api/client.js';
import type { LimiterRegistry } from '../api/limiter.js';
import type { Family } from '../catalog/families.js';
import type { StreamSpec } from '../catalog/types.js';
import type { Config } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import {
  CONFIG_WAREHOUSE_FAULTS,
  describeError,
  ExitCode,
  exitCodeForWarehouse,
  QuotaExhaustedError,
  SvcsyncError,
  WarehouseError,
} from '../core/errors.js';
import { watchHeap } from '../core/heap-budget.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { LeaseLost } from '../loaders/lease/fence.js';
import { TableWriter } from '../loaders/table-writer.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { closeAbandonedRuns, finishRun, startRun, type RunStatus } from '../state/runs.js';
import { silentProgress, type ProgressReporter, type SyncContext } from './context.js';
import { discoverOrganizations, familySkipMessage, knownOrganization } from './discovery.js';
import { busyOutcome, lostLease, withOrganizationLease } from './organization-lease.js';
import { syncOrganization } from './organization-sync.js';
import type { OrganizationOutcome } from './stream-outcome.js';
import type { RecordBudget } from './record-budget.js';
import { clientFor, setUpRun } from './run-setup.js';
import { runAll } from './settle.js';
import { endsTheRun, neverStop, StopRequested, type StopRequest } from './stop.js';
import type { SyncMode } from './pass-start.js';

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

export interface ConnectionFailure {
  connection: string;
  kind: SvcsyncError['kind'] | 'unexpected';
  error: string;
}

/**
 * A family discovery could not list because the token lacks its organization-list scope: none
 * of that family's streams was read (A26). Reported, and it makes the run partial, so that a
 * grant missing one scope is not a quiet success every night.
 */
export interface FamilySkip {
  connection: string;
  family: Family;
  error: string;
}

export interface UsageLine {
  organizationId: string;
  usedToday: number;
  budget: number;
  perDay: number;
  nextReset: string;
  blockedUntil: string | null;
}

export interface SyncSummary {
  runId: string;
  command: string;
  startedAt: string;
  finishedAt: string;
  organizations: OrganizationOutcome[];
  connectionFailures: ConnectionFailure[];
  /** Families skipped for want of a scope, per connection (the rest of the connection was synced). */
  skippedFamilies: FamilySkip[];
  requests: number;
  usage: UsageLine[];
  exitCode: ExitCode;
  /**
   * A warehouse fault that ended the run (its organizations not yet started were not started);
   * the run's summary is still printed, and the next run continues from the last committed page.
   */
  warehouseFault?: string;
  /** Why the run's end could not be recorded in `_svcsync_runs` (the next run closes the row as abandoned). */
  unrecorded?: string;
  /** Why the run stopped before its end (a signal, the daemon's shutdown): the summary counts what it committed. */
  stopped?: string;
}

/**
 * A run that was asked to stop (cooperatively or by abandoning the page in flight): it still
 * carries the summary of what was committed, and it is a StopRequested so that every caller
 * that lets a stop through lets this one through too.
 */
export class RunStopped extends StopRequested {
  constructor(
    reason: string,
    readonly summary: SyncSummary,
    options?: { cause?: unknown },
  ) {
    super(reason);
    this.name = 'RunStopped';
    if (options && 'cause' in options) this.cause = options.cause;
  }
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
    return await syncAll(options);
  } finally {
    heap?.stop();
  }
}

async function syncAll(options: SyncRunOptions): Promise<SyncSummary> {
  const { config, warehouse, clock, logger } = options;
  const setup = await setUpRun(options);
  const { runId, stamp, catalog, limiters, records, connections } = setup;
  const startedAt = stamp.next();
  const abandoned = await closeAbandonedRuns(warehouse.db, { runId, at: startedAt });
  if (abandoned.length > 0)
    logger.warn({ runs: abandoned }, `closed ${abandoned.length} earlier run(s) that ended without recording their end, as abandoned`);
  await startRun(warehouse.db, { runId, command: options.command, startedAt });
  const writer = new TableWriter(warehouse.sql);
  const organizations: OrganizationOutcome[] = [];
  const connectionFailures: ConnectionFailure[] = [];
  const skippedFamilies: FamilySkip[] = [];
  const clients: ApiClient[] = [];
  const touched = new Set<string>();
  // Unknown fields warned about: once per field per run, whichever connection sees it first.
  const driftWarned = new Set<string>();
  // A warehouse fault that outlived its retries ends the run: organizations not yet started are not started.
  let fault: WarehouseError | null = null;

  // allSettled: when the run is aborted, every connection's branch has ended (and committed
  // what it had) before the run is recorded as stopped.
  const branches = await Promise.allSettled(
    connections.map(async (connection) => {
      const client = clientFor(setup, options, connection);
      clients.push(client);
      const ctx: SyncContext = {
        config,
        connection,
        warehouse,
        writer,
        client,
        limiters,
        catalog,
        logger: logger.child({ connection: connection.name }),
        clock,
        stamp,
        signal: options.signal,
        stop: options.stop ?? neverStop,
        progress: options.progress ?? silentProgress,
        runId,
        history: setup.history.get(connection.name),
        halt: { authorization: null },
        pagingRefused: new Set<string>(),
        driftWarned,
        records,
      };
      try {
        const known = options.organization ? await knownOrganization(warehouse, connection, options.organization) : null;
        const discovery = known
          ? { organizations: known, skipped: [] }
          : await discoverOrganizations({ ...ctx, perPage: config.sync.per_page, record: { warehouse, writer } }, options.organization);
        const found = discovery.organizations;
        for (const { family, error } of discovery.skipped) {
          skippedFamilies.push({ connection: connection.name, family, error: familySkipMessage(family, error) });
        }
        // Discovery alone (the daemon's and workers' organizations job asks for no streams): no
        // organization is synced, so none is leased; taking each one's lease in turn made its own
        // jobs find it busy.
        if (options.streams?.length === 0) return;
        const limit = pLimit(config.sync.organization_concurrency);
        const syncOne = async (
          organizationId: string,
          families: Family[],
          onStopped: (o: OrganizationOutcome) => void,
        ): Promise<OrganizationOutcome> => {
          if (fault) return notStarted(ctx, organizationId, families, fault);
          touched.add(organizationId);
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
            if (ended instanceof WarehouseError) fault ??= ended;
            if (ended instanceof LeaseLost) return await lostLease(ctx, outcome, ended);
            return outcome;
          } catch (error) {
            if (endsTheRun(error, options.signal)) throw error;
            const base = { connection: connection.name, organizationId, families, status: 'failed' as const, streams: [] };
            if (error instanceof LeaseLost) return await lostLease(ctx, base, error);
            if (error instanceof WarehouseError) fault ??= error;
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
        };
        // Each organization's outcome lands in its slot as it ends, so that a stopped run still reports the finished ones.
        const entries = [...found.entries()];
        const slots: (OrganizationOutcome | undefined)[] = entries.map(() => undefined);
        try {
          await runAll(
            limit,
            entries.map(([organizationId, families], i) => async () => {
              slots[i] = await syncOne(organizationId, families, (o) => (slots[i] = o));
            }),
          );
        } finally {
          organizations.push(...slots.filter((o): o is OrganizationOutcome => o !== undefined));
        }
        const refused = ctx.halt.authorization;
        if (refused) {
          connectionFailures.push({ connection: connection.name, kind: 'authorization', error: describeError(refused) });
        }
      } catch (error) {
        if (endsTheRun(error, options.signal)) throw error;
        if (error instanceof WarehouseError) fault ??= error;
        ctx.logger.error({ err: error }, `connection ${connection.name} failed: ${describeError(error)}`);
        connectionFailures.push({
          connection: connection.name,
          kind: error instanceof SvcsyncError ? error.kind : 'unexpected',
          error: describeError(error),
        });
      }
    }),
  );
  // The day's usage goes back to the warehouse; a warehouse that failed keeps the last chunk taken (counted in full, never under).
  await limiters.flush().catch((error: unknown) => {
    if (!(error instanceof WarehouseError)) throw error;
    fault ??= error;
  });
  const usage: UsageLine[] = [];
  for (const organizationId of touched) {
    const l = limiters.peek(organizationId);
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
  const requests = clients.reduce((a, c) => a + c.stats().requests, 0);
  const written = organizations.reduce((a, o) => a + o.streams.reduce((b, s) => b + s.written, 0), 0);
  // What was committed, the same whether the run ended or was stopped.
  const summaryAt = (finishedAt: string, exitCode: ExitCode): SyncSummary => ({
    runId,
    command: options.command,
    startedAt,
    finishedAt,
    organizations,
    connectionFailures,
    skippedFamilies,
    requests,
    usage,
    exitCode,
  });
  const aborted = branches.find((b): b is PromiseRejectedResult => b.status === 'rejected');
  if (aborted) {
    const reason = aborted.reason instanceof StopRequested ? aborted.reason.reason : describeError(aborted.reason);
    const finishedAt = stamp.next();
    await finishRun(warehouse.db, runId, {
      finishedAt,
      status: 'stopped',
      requests,
      records: written,
      errors: [describeError(aborted.reason)],
    }).catch((error: unknown) => logger.warn({ err: error }, `could not record the run's end: ${describeError(error)}`));
    if (!endsTheRun(aborted.reason, options.signal)) throw aborted.reason;
    throw new RunStopped(reason, { ...summaryAt(finishedAt, ExitCode.partial), stopped: reason }, { cause: aborted.reason });
  }

  // Set inside the branches' closures, which the compiler cannot follow.
  const runFault = fault as WarehouseError | null;
  const exitCode = exitCodeOf(
    organizations,
    [...connectionFailures, ...skippedFamilies.map((f) => ({ connection: f.connection, kind: 'authorization' as const, error: f.error }))],
    runFault,
  );
  const finishedAt = stamp.next();
  const summary: SyncSummary = { ...summaryAt(finishedAt, exitCode), ...(runFault ? { warehouseFault: runFault.describe() } : {}) };
  const errors = [
    ...connectionFailures.map((f) => `${f.connection}: ${f.error}`),
    ...skippedFamilies.map((f) => `${f.connection}: ${f.error}`),
    ...organizations.filter((o) => o.status !== 'ok').map((o) => `${o.connection}/${o.organizationId}: ${o.error ?? o.status}`),
  ];
  try {
    await finishRun(warehouse.db, runId, {
      finishedAt,
      status: runStatusOf(exitCode),
      requests,
      records: written,
      errors,
    });
  } catch (error) {
    // What was committed stays committed; the summary still tells it, and the next run closes this row as abandoned.
    if (!(error instanceof WarehouseError)) throw error;
    logger.warn({ err: error }, `could not record the run's end in _svcsync_runs: ${describeError(error)}`);
    summary.unrecorded = error.describe();
    if (summary.exitCode === ExitCode.ok) summary.exitCode = exitCodeForWarehouse(error.fault);
  }
  return summary;
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

/** The status `_svcsync_runs` records for a run that ended with this exit code. */
function runStatusOf(exitCode: ExitCode): RunStatus {
  if (exitCode === ExitCode.ok) return 'ok';
  if (exitCode === ExitCode.partial) return 'partial';
  return 'failed';
}

/**
 * What a run ends with: 0 only when every organization it was asked for finished. An
 * organization another process owns (busy), one whose lease this process's own connection
 * lost, and a warehouse fault the next run can get past all leave work unfinished: partial (4).
 * A warehouse fault that needs the setting or the file system changed is a configuration
 * error (2), as an unreadable configuration is.
 */
export function exitCodeOf(
  organizations: readonly OrganizationOutcome[],
  failures: readonly ConnectionFailure[],
  fault: WarehouseError | null = null,
): ExitCode {
  const ok = organizations.filter((o) => o.status === 'ok').length;
  const quota = organizations.some((o) => o.status === 'quota');
  const bad = organizations.filter((o) => o.status !== 'ok').length + failures.length;
  if (bad === 0 && fault === null) return ExitCode.ok;
  if (fault && CONFIG_WAREHOUSE_FAULTS.has(fault.fault)) return ExitCode.config;
  if (quota) return ExitCode.partial;
  if (fault) return exitCodeForWarehouse(fault.fault);
  if (organizations.some((o) => o.status === 'busy' || o.failure === 'lease')) return ExitCode.partial;
  if (
    ok === 0 &&
    organizations.every((o) => o.status === 'failed') &&
    failures.length > 0 &&
    failures.every((f) => f.kind === 'authorization')
  )
    return ExitCode.authorization;
  if (ok > 0 || organizations.some((o) => o.status === 'partial')) return ExitCode.partial;
  if (failures.some((f) => f.kind === 'authorization')) return ExitCode.authorization;
  // Nothing ran because the configuration or the command line named what is not there (`--org 123`).
  if (organizations.length === 0 && failures.length > 0 && failures.every((f) => f.kind === 'config')) return ExitCode.config;
  return ExitCode.unexpected;
}
