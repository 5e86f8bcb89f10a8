import pLimit from 'p-limit';
import { watchHeap } from '../core/heap-budget.js';
import type { RecordBudget } from './record-budget.js';
import { ApiClient, TokenCacheRegistry, type RequestEvent } from '../api/client.js';
import { LimiterRegistry, type OrgLimiter } from '../api/limiter.js';
import { isOrganizationList, type StreamSpec } from '../catalog/types.js';
import type { Family } from '../catalog/families.js';
import type { Config } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import {
  AuthorizationError,
  ConfigError,
  CONFIG_WAREHOUSE_FAULTS,
  describeError,
  ExitCode,
  exitCodeForWarehouse,
  QuotaExhaustedError,
  SvcsyncError,
  WarehouseError,
} from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { TableWriter } from '../loaders/table-writer.js';
import { commitOrganizations } from '../state/unit-of-work.js';
import { applyHandover, processOwner, type Lease } from '../loaders/lease/lease.js';
import { LeaseLost } from '../loaders/lease/fence.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { closeAbandonedRuns, finishRun, startRun, type RunStatus } from '../state/runs.js';
import { stateDb } from '../state/tables.js';
import { silentProgress, type ProgressReporter, type SyncContext } from './context.js';
import { syncOrganization, type OrganizationOutcome } from './organization-sync.js';
import { hasNoOrganizationList, organizationsForUnlistedFamily } from './organization-reuse.js';
import { listOrganizations } from './organization-list.js';
import { setUpRun } from './run-setup.js';
import { runAll } from './settle.js';
import { endsTheRun, neverStop, raiseIfStopped, type StopRequest } from './stop.js';
import { normalizePage, type SyncMode } from './stream-pass.js';

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
   * When another process owns an organization (its lease, src/loaders/org-lease.ts): wait for
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
  const { runId, stamp, catalog, limiters, tokens, records, connections } = await setUpRun(options);
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
      const client = new ApiClient({
        connection,
        settings: config.sync,
        clock,
        logger,
        secrets: options.secrets,
        limiters,
        fetch: options.fetch,
        random: options.random,
        onRequest: options.onRequest,
        tokens: tokens.for(connection, config.connections.indexOf(connection)),
      });
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
        halt: { authorization: null },
        pagingRefused: new Set<string>(),
        driftWarned,
        records,
      };
      try {
        const known = options.organization ? await knownOrganization(ctx, options.organization) : null;
        const discovery = known ? { organizations: known, skipped: [] } : await discoverOrganizations(ctx, options.organization);
        const found = discovery.organizations;
        for (const { family, error } of discovery.skipped) {
          skippedFamilies.push({ connection: connection.name, family, error: familySkipMessage(family, error) });
        }
        // Discovery alone (the daemon's and workers' organizations job asks for no streams): no
        // organization is synced, so none is leased; taking each one's lease in turn made its own
        // jobs find it busy.
        if (options.streams?.length === 0) return;
        const limit = pLimit(config.sync.organization_concurrency);
        const outcomes = await runAll(
          limit,
          [...found.entries()].map(([organizationId, families]) => async () => {
            if (fault) return notStarted(ctx, organizationId, families, fault);
            touched.add(organizationId);
            let lease: Lease | null = null;
            let limiter: OrgLimiter | null = null;
            let unguard: (() => void) | null = null;
            try {
              lease = await warehouse.leases.acquire(connection.name, organizationId, {
                wait: options.waitForLease ?? false,
                signal: options.signal,
                check: () => raiseIfStopped(ctx),
              });
              if (!lease) return await busyOutcome(ctx, organizationId, families);
              // The per-minute window across owners (issue 12): the previous owner's, or a wait of one window.
              limiter = await client.limitsFor(organizationId);
              applyHandover(lease.handover, limiter, clock.now());
              // Every request for the organization first asks whether the lease still holds.
              const held = lease;
              unguard = limiter.addGuard(() => held.assertHeld());
              if (lease.handover.kind === 'takeover') {
                // A wait of up to a minute with nothing to show for it must say why (at the default level).
                ctx.logger.warn(
                  { organization_id: organizationId, window_ms: limiter.limits.window_ms },
                  `organization ${organizationId}: the previous svcsync process ended without releasing it (killed, or cut off), so ` +
                    `its last minute of requests is unknown; waiting ${Math.ceil(limiter.limits.window_ms / 1000)} s (one ` +
                    'per-minute window) before the first request, to keep to the per-minute limit',
                );
              }
              const { outcome, ended } = await syncOrganization({ ...ctx, fence: lease.fence }, organizationId, families, {
                mode: options.mode,
                since: options.since,
                streams: options.streams ?? connection.streams,
              });
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
                connection: connection.name,
                organizationId,
                families,
                status: error instanceof QuotaExhaustedError ? 'quota' : 'failed',
                streams: [],
                error: describeError(error),
              };
              if (error instanceof QuotaExhaustedError) failed.resumeAt = error.resumeAt.toISOString();
              if (error instanceof WarehouseError) failed.failure = 'warehouse';
              return failed;
            } finally {
              unguard?.();
              await lease?.release(limiter?.windowState() ?? null);
            }
          }),
        );
        organizations.push(...outcomes);
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
  const aborted = branches.find((b): b is PromiseRejectedResult => b.status === 'rejected');
  if (aborted) {
    await finishRun(warehouse.db, runId, {
      finishedAt: stamp.next(),
      status: 'stopped',
      requests: clients.reduce((a, c) => a + c.stats().requests, 0),
      records: 0,
      errors: [describeError(aborted.reason)],
    }).catch((error: unknown) => logger.warn({ err: error }, `could not record the run's end: ${describeError(error)}`));
    throw aborted.reason;
  }

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
  // Set inside the branches' closures, which the compiler cannot follow.
  const runFault = fault as WarehouseError | null;
  const exitCode = exitCodeOf(
    organizations,
    [...connectionFailures, ...skippedFamilies.map((f) => ({ connection: f.connection, kind: 'authorization' as const, error: f.error }))],
    runFault,
  );
  const finishedAt = stamp.next();
  const summary: SyncSummary = {
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
    ...(runFault ? { warehouseFault: runFault.describe() } : {}),
  };
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
      records: organizations.reduce((a, o) => a + o.streams.reduce((b, s) => b + s.written, 0), 0),
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

/**
 * The organization's lease went while this run worked on it. Only when another process holds
 * it now is it "busy" (named); when this process's own connection ended, or the warehouse
 * stopped confirming the lease, the organization is a failure of this run, with that cause.
 */
async function lostLease(ctx: SyncContext, base: OrganizationOutcome, error: LeaseLost): Promise<OrganizationOutcome> {
  const organizationId = base.organizationId;
  const owner = await ctx.warehouse.leases.ownerOf(ctx.connection.name, organizationId).catch(() => null);
  if (owner !== null && owner !== processOwner()) {
    const message =
      `organization ${organizationId}: another svcsync process (${owner}) took it over and carries on from the last committed page. ` +
      'Run `svcsync sync --wait` to wait for it instead.';
    ctx.logger.warn({ organization_id: organizationId, owner, err: error }, message);
    return { ...base, status: 'busy', error: message };
  }
  const message = `organization ${organizationId}: ${describeError(error)}`;
  ctx.logger.error({ organization_id: organizationId, err: error }, message);
  return { ...base, status: 'failed', failure: 'lease', error: message };
}

/**
 * Another live process owns the organization: it is left alone, with one log line naming the
 * owner. This run did not sync it, so it ends partial (exit 4) unless `--wait` was asked for.
 */
async function busyOutcome(ctx: SyncContext, organizationId: string, families: Family[]): Promise<OrganizationOutcome> {
  const owner = await ctx.warehouse.leases.ownerOf(ctx.connection.name, organizationId).catch(() => null);
  const error =
    `organization ${organizationId} is being synced by another svcsync process (${owner ?? 'owner unknown'}); skipped. ` +
    'Run `svcsync sync --wait` to wait for it instead.';
  ctx.logger.warn({ organization_id: organizationId, owner }, error);
  return { connection: ctx.connection.name, organizationId, families, status: 'busy', streams: [], error };
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

/**
 * A run for one organization that discovery has already recorded (the daemon's and workers' jobs,
 * `sync --org`) takes its families from `_svcsync_organizations` instead of listing every
 * organization of the connection again: with a thousand organizations that listing, and the
 * upsert of every one of them, was most of each job's cost. Discovery keeps the table current
 * on its own schedule. Null when the organization is not known (or not active) there.
 */
async function knownOrganization(ctx: SyncContext, organizationId: string): Promise<Map<string, Family[]> | null> {
  const rows = await stateDb(ctx.warehouse.db)
    .selectFrom('_svcsync_organizations')
    .select(['family', 'is_active'])
    .where('connection', '=', ctx.connection.name)
    .where('organization_id', '=', organizationId)
    .execute();
  if (rows.some((r) => Number(r.is_active ?? 1) === 0)) return null;
  const families = ctx.connection.families.filter((f) => rows.some((r) => r.family === f));
  return families.length > 0 ? new Map([[organizationId, families]]) : null;
}

/** Each organization's families, and the families the token has no scope to list. */
export interface Discovery {
  organizations: Map<string, Family[]>;
  skipped: Array<{ family: Family; error: SvcsyncError }>;
}

/**
 * A family whose organization list answered 404 is read for the organizations the other
 * families listed (or the ones the connection names; `organizationsForUnlistedFamily`), and
 * registered for them so the daemon's jobs and `sync --org` find it (A13). It gets no
 * `{family}_organizations` rows: there is no record of its own to hold.
 */
async function reuseForUnlistedFamilies(
  ctx: SyncContext,
  input: {
    unlisted: ReadonlyArray<{ family: Family; error: SvcsyncError }>;
    listedRaw: ReadonlyMap<string, Record<string, unknown>>;
    found: Map<string, Family[]>;
    wanted: readonly string[] | undefined;
    record: boolean;
  },
): Promise<void> {
  const { unlisted, listedRaw, found, wanted, record } = input;
  const ids = organizationsForUnlistedFamily({ listed: listedRaw, wanted });
  for (const { family, error } of unlisted) {
    ctx.logger.warn(
      { family, organizations: ids, err: error },
      ids.length > 0
        ? `${family} has no organization list (${error.request ?? 'GET /organizations'} answered 404): ` +
            `reading ${family} for organization(s) ${ids.join(', ')}. ` +
            `If ${family} gives the business another organization id, name that id under the connection's organizations.`
        : `${family} has no organization list (${error.request ?? 'GET /organizations'} answered 404) and no other family ` +
            `listed an organization: name the organization ids under the connection's organizations.`,
    );
    if (ids.length === 0) continue;
    for (const id of ids) {
      const families = found.get(id) ?? [];
      if (!families.includes(family)) families.push(family);
      found.set(id, families);
    }
    if (!record) continue;
    const raw = ids.map((id) => {
      const seen = listedRaw.get(id);
      return { organization_id: id, name: seen?.['name'], time_zone: seen?.['time_zone'] };
    });
    await commitOrganizations(ctx, { connection: ctx.connection.name, family, syncedAt: ctx.stamp.next(), records: [], raw });
  }
}

/**
 * Lists each configured family's organizations, writes them to `{family}_organizations`
 * (unless `record` is false: `svcsync verify` writes no data rows), and returns which
 * families each organization is reachable in. A family the token has no scope for is
 * skipped with a warning; a family without an organization list (404) reuses the others'
 * ids with a warning; if no family answers, the connection fails.
 */
export async function discoverOrganizations(ctx: SyncContext, only: string | undefined, record = true): Promise<Discovery> {
  const found = new Map<string, Family[]>();
  const errors: unknown[] = [];
  const skipped: Discovery['skipped'] = [];
  const wanted = only ? [only] : ctx.connection.organizations;
  // Families whose organization list answered 404 (A13), and what the other lists said of each id.
  const unlisted: Array<{ family: Family; error: SvcsyncError }> = [];
  const listedRaw = new Map<string, Record<string, unknown>>();
  const inactive = new Set<string>();
  for (const family of ctx.connection.families) {
    const stream = ctx.catalog.find((s) => s.family === family && isOrganizationList(s));
    if (!stream) continue;
    let records: Record<string, unknown>[];
    raiseIfStopped(ctx);
    try {
      records = await listOrganizations(ctx.client, stream, {
        signal: ctx.signal,
        perPage: ctx.config.sync.per_page,
        stop: ctx.stop,
        pagingRefused: ctx.pagingRefused,
      });
    } catch (error) {
      if (endsTheRun(error, ctx.signal)) throw error;
      if (error instanceof AuthorizationError && error.reach === 'family') {
        ctx.logger.warn({ family, err: error }, `cannot list ${family} organizations: ${describeError(error)}`);
        errors.push(error);
        skipped.push({ family, error });
        continue;
      }
      if (hasNoOrganizationList(error)) {
        errors.push(error);
        unlisted.push({ family, error });
        continue;
      }
      throw error;
    }
    const now = ctx.stamp.next();
    const normalized = normalizePage(ctx, stream, '', records, now);
    if (record)
      await commitOrganizations(ctx, { connection: ctx.connection.name, family, syncedAt: now, records: normalized, raw: records });
    for (const raw of records) {
      const id = String(raw['organization_id']);
      if (!listedRaw.has(id) || raw['is_org_active'] !== false) listedRaw.set(id, raw);
      if (wanted && !wanted.includes(id)) continue;
      // Named in the configuration or with --org: the user wants it read, whatever the flag says (A22).
      if (raw['is_org_active'] === false && !wanted) {
        inactive.add(id);
        continue;
      }
      const families = found.get(id) ?? [];
      families.push(family);
      found.set(id, families);
    }
  }
  const skippedInactive = [...inactive].filter((id) => !found.has(id));
  if (skippedInactive.length > 0) {
    ctx.logger.warn(
      { organizations: skippedInactive },
      `organization(s) ${skippedInactive.join(', ')} listed as inactive (is_org_active: false): only their organization ` +
        "records are kept. To read one anyway, name it in this connection's organizations (docs/assumptions.md A22).",
    );
  }
  // Only beside a family whose list answered: when every list is a 404, the API's address is
  // more likely wrong than every family without a list, and the connection fails naming the request.
  if (unlisted.length > 0 && errors.length < ctx.connection.families.length) {
    await reuseForUnlistedFamilies(ctx, { unlisted, listedRaw, found, wanted, record });
  }
  if (found.size === 0 && errors.length > 0 && errors.length === ctx.connection.families.length) throw errors[0];
  if (wanted) {
    const missing = wanted.filter((id) => !found.has(id));
    if (missing.length) {
      ctx.logger.warn(
        { organizations: missing },
        `organization(s) ${missing.join(', ')} not listed by any configured family for this connection`,
      );
      if (found.size === 0) {
        throw new ConfigError(`Organization ${missing.join(', ')} is not reachable through connection ${ctx.connection.name}.`, [], {
          hint: "Check the organization id (svcsync check lists the reachable ones) and the connection's region.",
        });
      }
    }
  }
  return { organizations: found, skipped };
}

/** What a family skipped for want of a scope tells the user, in the summary and `_svcsync_runs`. */
function familySkipMessage(family: Family, error: SvcsyncError): string {
  return (
    `${family} skipped, none of its streams read: ${describeError(error)}\n` +
    `  → \`svcsync auth scopes\` prints every scope svcsync needs; or leave ${family} out of this connection's families.`
  );
}
