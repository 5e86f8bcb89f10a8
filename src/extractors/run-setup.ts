import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { ApiClient, TokenCacheRegistry, type ApiClientOptions, type RequestEvent } from '../api/client.js';
import { LimiterRegistry } from '../api/limiter.js';
import { CATALOG } from '../catalog/index.js';
import type { StreamSpec } from '../catalog/types.js';
import type { Config, ConnectionConfig } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { ensureHistory } from '../loaders/derived/ensure-history.js';
import { historyPlan, historySettingOf, type HistoryPlan } from '../loaders/derived/history-tables.js';
import { HistoryWriter } from '../loaders/history-writer.js';
import { migrateToLatest } from '../loaders/migrate.js';
import { KEEP_CLAIMS_MS, pruneClaims } from '../loaders/applied-units.js';
import type { Warehouse } from '../loaders/warehouse.js';
import type { HistorySink } from '../loaders/history-sink.js';
import { WarehouseUsageStore } from '../state/usage-store.js';
import { Stamp } from './context.js';
import { RecordBudget } from './record-budget.js';

/** What `sync` and `verify` both start from. */
export interface RunInputs {
  config: Config;
  warehouse: Warehouse;
  clock: Clock;
  logger: Logger;
  secrets: SecretRegistry;
  signal: AbortSignal;
  connection?: string | undefined;
  catalog?: readonly StreamSpec[];
  fetch?: typeof fetch;
  limiters?: LimiterRegistry;
  tokens?: TokenCacheRegistry;
  /** The process's cap on records in flight, when it outlives a run (the daemon's, a worker's). */
  records?: RecordBudget;
  /** Test seams: a random source, request events. */
  random?: () => number;
  onRequest?: (e: RequestEvent) => void;
}

/** A run's shared parts: the organizations' limiters and the connections' tokens outlive a branch. */
export interface RunSetup {
  runId: string;
  stamp: Stamp;
  catalog: readonly StreamSpec[];
  limiters: LimiterRegistry;
  tokens: TokenCacheRegistry;
  records: RecordBudget;
  connections: ConnectionConfig[];
  /** Each connection's history (by name), for the streams that keep it; absent when none does. */
  history: ReadonlyMap<string, HistorySink>;
}

/**
 * Migrates the warehouse and builds what every connection's branch of a run shares. Limiters and
 * token caches come from the caller when it has them (the daemon's outlive a run).
 */
export async function setUpRun(options: RunInputs): Promise<RunSetup> {
  const { config, warehouse, clock, logger } = options;
  // Every request in flight listens to the run's signal; many at once is expected.
  setMaxListeners(0, options.signal);
  await migrateToLatest(warehouse);
  // Claims of units older than any retry can be (wall time, as the warehouse's retries run).
  await pruneClaims(warehouse.db, warehouse.sql, new Date(Date.now() - KEEP_CLAIMS_MS).toISOString());
  const store = (): WarehouseUsageStore => new WarehouseUsageStore(warehouse, () => clock.now());
  const runId = `${new Date(clock.now()).toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomUUID().slice(0, 8)}`;
  const catalog = options.catalog ?? CATALOG;
  const connections = selectConnections(config, options.connection);
  // Every connection of the configuration, not only the run's: a run of one connection must not mark another's history off.
  const plans = new Map<string, HistoryPlan>(
    config.connections.map((c) => [c.name, historyPlan(catalog, historySettingOf(config.history, c.history))]),
  );
  // History tables exist before the first page (and a table newly turned on starts from the current rows).
  if (await ensureHistory(warehouse, plans, new Date(clock.now()).toISOString(), runId)) {
    // New history tables: the data dictionary and the comments describe them from now on.
    await migrateToLatest(warehouse);
  }
  const writer = new HistoryWriter(warehouse.sql);
  const history = new Map<string, HistorySink>();
  for (const [name, plan] of plans) if (plan.size > 0) history.set(name, { plan, writer });
  return {
    runId,
    stamp: new Stamp(clock),
    catalog,
    // A shared registry (the daemon's) is seen through a view, so the run's flush touches only its organizations.
    limiters: options.limiters?.forRun() ?? new LimiterRegistry({ clock, store: store(), logger }),
    tokens:
      options.tokens ??
      new TokenCacheRegistry({
        clock,
        secrets: options.secrets,
        logger,
        regions: config.regions,
        timeoutMs: config.sync.request_timeout_ms,
        fetch: options.fetch,
      }),
    records: options.records ?? new RecordBudget(config.sync.max_records_in_flight),
    connections,
    history,
  };
}

/**
 * The API client of one connection in a run: the run's limiters and token caches (shared
 * across the run's connections, and with the daemon's when it outlives the run), the run's
 * test seams. `make` builds a subclass (verify's client that keeps to `--max-requests`).
 */
export function clientFor<C extends ApiClient = ApiClient>(
  setup: Pick<RunSetup, 'limiters' | 'tokens'>,
  inputs: Pick<RunInputs, 'config' | 'clock' | 'logger' | 'secrets' | 'fetch' | 'random' | 'onRequest'>,
  connection: ConnectionConfig,
  make: (options: ApiClientOptions) => C = (options) => new ApiClient(options) as C,
): C {
  return make({
    connection,
    settings: inputs.config.sync,
    clock: inputs.clock,
    logger: inputs.logger,
    secrets: inputs.secrets,
    limiters: setup.limiters,
    fetch: inputs.fetch,
    random: inputs.random,
    onRequest: inputs.onRequest,
    tokens: setup.tokens.for(connection, inputs.config.connections.indexOf(connection)),
  });
}

/** The configured connections, or the one `--connection` names. */
export function selectConnections(config: Config, name: string | undefined): ConnectionConfig[] {
  const connections = config.connections.filter((c) => !name || c.name === name);
  if (name && connections.length === 0) {
    throw new ConfigError(`--connection ${name}: no connection has that name`, [], {
      hint: `Configured: ${config.connections.map((c) => c.name).join(', ')}.`,
    });
  }
  return connections;
}
