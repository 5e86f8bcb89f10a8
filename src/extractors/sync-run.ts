import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import pLimit from 'p-limit';
import { ApiClient, TokenCacheRegistry, type RequestEvent } from '../api/client.js';
import { LimiterRegistry } from '../api/limiter.js';
import { CATALOG } from '../catalog/index.js';
import { isOrganizationList, type StreamSpec } from '../catalog/types.js';
import type { Family } from '../config/plans.js';
import type { Config, ConnectionConfig } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { AuthorizationError, ConfigError, ExitCode, QuotaExhaustedError, SvcsyncError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { migrateToLatest } from '../loaders/migrate.js';
import { TableWriter } from '../loaders/table-writer.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { finishRun, startRun } from '../state/runs.js';
import { stateDb } from '../state/tables.js';
import { WarehouseUsageStore } from '../state/usage-store.js';
import { Stamp, silentProgress, type ProgressReporter, type SyncContext } from './context.js';
import { syncOrganization, type OrganizationOutcome } from './organization-sync.js';
import { recordsOf } from './pager.js';
import { runAll } from './settle.js';
import { normalizePage, type SyncMode } from './stream-pass.js';

export interface SyncRunOptions {
  config: Config;
  warehouse: Warehouse;
  clock: Clock;
  logger: Logger;
  secrets: SecretRegistry;
  signal: AbortSignal;
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
  onRequest?: (e: RequestEvent) => void;
}

export interface ConnectionFailure {
  connection: string;
  kind: SvcsyncError['kind'] | 'unexpected';
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
  requests: number;
  usage: UsageLine[];
  exitCode: ExitCode;
}

function describe(error: unknown): string {
  return error instanceof SvcsyncError ? error.describe() : error instanceof Error ? error.message : String(error);
}

/**
 * One run of everything configured (or the subset asked for): discover each connection's
 * organizations, then sync them side by side. An organization that fails is reported while
 * the others carry on.
 */
export async function runSync(options: SyncRunOptions): Promise<SyncSummary> {
  const { config, warehouse, clock, logger } = options;
  // Every request in flight listens to the run's signal; many at once is expected.
  setMaxListeners(0, options.signal);
  await migrateToLatest(warehouse);
  const catalog = options.catalog ?? CATALOG;
  const stamp = new Stamp(clock);
  const runId = `${new Date(clock.now()).toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomUUID().slice(0, 8)}`;
  const startedAt = stamp.next();
  await startRun(warehouse.db, { runId, command: options.command, startedAt });
  const limiters = options.limiters ?? new LimiterRegistry({ clock, store: new WarehouseUsageStore(warehouse.db, () => clock.now()), logger });
  const writer = new TableWriter(warehouse.dialect);
  const connections = config.connections.filter((c) => !options.connection || c.name === options.connection);
  if (options.connection && connections.length === 0) {
    throw new ConfigError(`--connection ${options.connection}: no connection has that name`, [], {
      hint: `Configured: ${config.connections.map((c) => c.name).join(', ')}.`,
    });
  }
  const organizations: OrganizationOutcome[] = [];
  const connectionFailures: ConnectionFailure[] = [];
  const clients: ApiClient[] = [];
  const touched = new Set<string>();

  // allSettled: when the run is aborted, every connection's branch has ended (and committed
  // what it had) before the run is recorded as stopped.
  const branches = await Promise.allSettled(
    connections.map(async (connection) => {
      const client = new ApiClient({
        connection,
        connectionIndex: config.connections.indexOf(connection),
        regions: config.regions,
        settings: config.sync,
        clock,
        logger,
        secrets: options.secrets,
        limiters,
        fetch: options.fetch,
        random: options.random,
        onRequest: options.onRequest,
        tokens: options.tokens?.for(connection, config.connections.indexOf(connection)),
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
        progress: options.progress ?? silentProgress,
        runId,
        halt: { authorization: null },
      };
      try {
        const found = await discoverOrganizations(ctx, options.organization);
        const limit = pLimit(config.sync.organization_concurrency);
        const outcomes = await runAll(
          limit,
          [...found.entries()].map(([organizationId, families]) =>
            async () => {
              touched.add(organizationId);
              try {
                return await syncOrganization(ctx, organizationId, families, { mode: options.mode, since: options.since, streams: options.streams ?? connection.streams });
              } catch (error) {
                if (options.signal.aborted) throw error;
                ctx.logger.error({ organization_id: organizationId, err: error }, `organization failed: ${describe(error)}`);
                const failed: OrganizationOutcome = { connection: connection.name, organizationId, families, status: error instanceof QuotaExhaustedError ? 'quota' : 'failed', streams: [], error: describe(error) };
                if (error instanceof QuotaExhaustedError) failed.resumeAt = error.resumeAt.toISOString();
                return failed;
              }
            },
          ),
        );
        organizations.push(...outcomes);
        const refused = ctx.halt.authorization;
        if (refused) {
          connectionFailures.push({ connection: connection.name, kind: 'authorization', error: describe(refused) });
        }
      } catch (error) {
        if (options.signal.aborted) throw error;
        ctx.logger.error({ err: error }, `connection ${connection.name} failed: ${describe(error)}`);
        connectionFailures.push({ connection: connection.name, kind: error instanceof SvcsyncError ? error.kind : 'unexpected', error: describe(error) });
      }
    }),
  );
  await limiters.flush();
  const aborted = branches.find((b): b is PromiseRejectedResult => b.status === 'rejected');
  if (aborted) {
    await finishRun(warehouse.db, runId, { finishedAt: stamp.next(), status: 'stopped', requests: clients.reduce((a, c) => a + c.stats().requests, 0), records: 0, errors: [describe(aborted.reason)] });
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
  const exitCode = exitCodeOf(organizations, connectionFailures);
  const finishedAt = stamp.next();
  const summary: SyncSummary = { runId, command: options.command, startedAt, finishedAt, organizations, connectionFailures, requests, usage, exitCode };
  const errors = [
    ...connectionFailures.map((f) => `${f.connection}: ${f.error}`),
    ...organizations.filter((o) => o.status !== 'ok').map((o) => `${o.connection}/${o.organizationId}: ${o.error ?? o.status}`),
  ];
  await finishRun(warehouse.db, runId, {
    finishedAt,
    status: exitCode === ExitCode.ok ? 'ok' : exitCode === ExitCode.partial ? 'partial' : 'failed',
    requests,
    records: organizations.reduce((a, o) => a + o.streams.reduce((b, s) => b + s.written, 0), 0),
    errors,
  });
  return summary;
}

export function exitCodeOf(organizations: readonly OrganizationOutcome[], failures: readonly ConnectionFailure[]): ExitCode {
  const ok = organizations.filter((o) => o.status === 'ok').length;
  const quota = organizations.some((o) => o.status === 'quota');
  const bad = organizations.filter((o) => o.status !== 'ok').length + failures.length;
  if (bad === 0) return ExitCode.ok;
  if (quota) return ExitCode.partial;
  if (ok === 0 && organizations.every((o) => o.status === 'failed') && failures.length > 0 && failures.every((f) => f.kind === 'authorization')) return ExitCode.authorization;
  if (ok > 0 || organizations.some((o) => o.status === 'partial')) return ExitCode.partial;
  if (failures.some((f) => f.kind === 'authorization')) return ExitCode.authorization;
  return ExitCode.unexpected;
}

/**
 * Lists each configured family's organizations, writes them to `{family}_organizations`
 * (unless `record` is false: `svcsync verify` writes no data rows), and returns which
 * families each organization is reachable in. A family the token has no scope for is
 * skipped with a warning; if no family answers, the connection fails.
 */
export async function discoverOrganizations(ctx: SyncContext, only: string | undefined, record = true): Promise<Map<string, Family[]>> {
  const found = new Map<string, Family[]>();
  const errors: unknown[] = [];
  const wanted = only ? [only] : ctx.connection.organizations;
  for (const family of ctx.connection.families) {
    const stream = ctx.catalog.find((s) => s.family === family && isOrganizationList(s));
    if (!stream) continue;
    let records: Record<string, unknown>[];
    try {
      const body = await ctx.client.get({ family, path: stream.path, query: { ...(stream.query ?? {}) }, signal: ctx.signal });
      records = recordsOf(stream, body, `GET ${family}${stream.path}`);
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      if (error instanceof AuthorizationError && error.reach === 'family') {
        ctx.logger.warn({ family, err: error }, `cannot list ${family} organizations: ${describe(error)}`);
        errors.push(error);
        continue;
      }
      throw error;
    }
    const now = ctx.stamp.next();
    const normalized = normalizePage(ctx, stream, '', records, now);
    if (record) await ctx.warehouse.db.transaction().execute(async (trx) => {
      for (const n of normalized) await ctx.writer.writeRecords(trx, [n], now);
      for (const raw of records) {
        const id = String(raw['organization_id']);
        const active = raw['is_org_active'] === false ? 0 : 1;
        await stateDb(trx)
          .insertInto('_svcsync_organizations')
          .values({ connection: ctx.connection.name, family, organization_id: id, name: typeof raw['name'] === 'string' ? raw['name'] : null, is_active: active, time_zone: typeof raw['time_zone'] === 'string' ? raw['time_zone'] : null, discovered_at: now })
          .onConflict((oc) => oc.columns(['connection', 'family', 'organization_id']).doUpdateSet({ name: typeof raw['name'] === 'string' ? raw['name'] : null, is_active: active, discovered_at: now }))
          .execute();
      }
    });
    for (const raw of records) {
      const id = String(raw['organization_id']);
      if (wanted && !wanted.includes(id)) continue;
      if (raw['is_org_active'] === false) {
        ctx.logger.info({ family, organization_id: id }, 'organization is inactive; only its organization record is kept');
        continue;
      }
      const families = found.get(id) ?? [];
      families.push(family);
      found.set(id, families);
    }
  }
  if (found.size === 0 && errors.length > 0 && errors.length === ctx.connection.families.length) throw errors[0];
  if (wanted) {
    const missing = wanted.filter((id) => !found.has(id));
    if (missing.length) {
      ctx.logger.warn({ organizations: missing }, `organization(s) ${missing.join(', ')} not listed by any configured family for this connection`);
      if (found.size === 0) {
        throw new ConfigError(`Organization ${missing.join(', ')} is not reachable through connection ${ctx.connection.name}.`, [], {
          hint: 'Check the organization id (svcsync check lists the reachable ones) and the connection\'s region.',
        });
      }
    }
  }
  return found;
}
