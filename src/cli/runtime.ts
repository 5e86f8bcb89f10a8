import { existsSync } from 'node:fs';
import { loadLocatedConfig, type ConfigLocation } from '../config/locate.js';
import type { Config } from '../config/schema.js';
import { systemClock, type Clock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import { createLogger, type Logger } from '../core/logger.js';
import { SecretRegistry } from '../core/secrets.js';
import { StopFlag, type StopRequest } from '../extractors/stop.js';
import { migrationState } from '../loaders/migrate.js';
import { openWarehouse, sqliteFileOf, type OpenOptions, type Warehouse } from '../loaders/warehouse.js';

export interface GlobalOptions {
  config?: string;
  logLevel?: string;
}

export interface Runtime {
  config: Config;
  /** The file the configuration came from, and how it was found. */
  configLocation?: ConfigLocation;
  /** Whether SVCSYNC_WAREHOUSE replaced the file's warehouse URL. */
  warehouseFromEnv?: boolean;
  logger: Logger;
  secrets: SecretRegistry;
  clock: Clock;
}

/** Chooses the log level: the flag, then SVCSYNC_LOG_LEVEL, then the file; quieter on a terminal where progress bars speak. */
export function logLevelFor(global: GlobalOptions, fromConfig: string | undefined): string {
  if (global.logLevel) return global.logLevel;
  if (process.env['SVCSYNC_LOG_LEVEL']) return process.env['SVCSYNC_LOG_LEVEL'];
  if (process.stderr.isTTY && (fromConfig === undefined || fromConfig === 'info')) return 'warn';
  return fromConfig ?? 'info';
}

export function loadRuntime(global: GlobalOptions): Runtime {
  const secrets = new SecretRegistry();
  const { config, location, warehouseFromEnv } = loadLocatedConfig(global.config, { secrets });
  const logger = createLogger({ level: logLevelFor(global, config.log_level), secrets });
  return { config, configLocation: location, warehouseFromEnv, logger, secrets, clock: systemClock };
}

/** Opens the configured warehouse with the configured lease timings and fault settings. */
export function openConfiguredWarehouse(config: Config, logger?: Logger): Promise<Warehouse> {
  return openWarehouse(config.warehouse.url, warehouseOptions(config, logger));
}

function warehouseOptions(config: Config, logger?: Logger): OpenOptions {
  return {
    leaseTimings: { ttlMs: config.leases.ttl_seconds * 1000, heartbeatMs: config.leases.heartbeat_seconds * 1000 },
    retryMs: config.warehouse.retry_s * 1000,
    busyTimeoutMs: config.warehouse.busy_timeout_s * 1000,
    pragmas: config.warehouse.pragmas,
    ...(config.warehouse.schema !== undefined ? { schema: config.warehouse.schema } : {}),
    ...(config.warehouse.views_schema !== undefined ? { viewsSchema: config.warehouse.views_schema } : {}),
    ...(logger ? { logger } : {}),
  };
}

export async function withWarehouse<T>(rt: { config: Config; logger?: Logger }, fn: (w: Warehouse) => Promise<T>): Promise<T> {
  const warehouse = await openConfiguredWarehouse(rt.config, rt.logger);
  try {
    return await fn(warehouse);
  } finally {
    await warehouse.close();
  }
}

/**
 * Runs `fn` on the configured warehouse opened only to read (nothing is created, migrated or
 * written), or on null when there is nothing to read: no SQLite file at the path, or a warehouse
 * svcsync never migrated. A warehouse an older svcsync wrote is refused: reading it needs
 * `svcsync migrate` first, which a reader must not run.
 */
export async function withWarehouseToRead<T>(
  rt: { config: Config; logger?: Logger },
  command: string,
  fn: (w: Warehouse | null) => Promise<T>,
): Promise<T> {
  const file = sqliteFileOf(rt.config.warehouse.url);
  // An in-memory database is empty whenever it is opened.
  if (file !== null && (file === ':memory:' || !existsSync(file))) return fn(null);
  const warehouse = await openWarehouse(rt.config.warehouse.url, { ...warehouseOptions(rt.config, rt.logger), readOnly: true });
  try {
    const state = await migrationState(warehouse);
    if (state === 'behind')
      throw new ConfigError(`warehouse: ${warehouse.displayUrl} was written by an older svcsync and needs migrating first`, [], {
        hint:
          `\`svcsync ${command}\` changes nothing in the warehouse: ` +
          `run \`svcsync migrate\` (or a sync), then \`svcsync ${command}\` again.`,
      });
    return await fn(state === 'empty' ? null : warehouse);
  } finally {
    await warehouse.close();
  }
}

/** How a command's run is asked to stop by signals. */
export interface SignalStop {
  /** The hard stop: abandons the page in flight (second signal). */
  signal: AbortSignal;
  /** The cooperative stop: no new request after the page in flight (first signal). */
  stop: StopRequest;
  /** A signal arrived, so a run that ended with an error ended because it was asked to. */
  stopped: () => boolean;
  dispose: () => void;
}

/**
 * The first SIGINT/SIGTERM asks the run to stop: the request in flight is answered and its page
 * committed, and no new request is sent. A second abandons the page in flight (everything
 * committed stays); a third exits at once.
 */
export function stopOnSignals(logger: Logger): SignalStop {
  const controller = new AbortController();
  const stop = new StopFlag();
  let count = 0;
  const handler = (sig: NodeJS.Signals): void => {
    count++;
    if (count === 1) {
      logger.warn(
        { signal: sig },
        'stopping after the page in flight: committed pages are kept; the next run resumes where this one stopped',
      );
      process.stderr.write(
        `\nsvcsync: ${sig} received, stopping after the current page. ` +
          'Send it again to abandon that page (nothing committed is lost), a third time to exit at once.\n',
      );
      stop.request(`interrupted by ${sig}`);
    } else if (count === 2) {
      controller.abort(new Error(`interrupted by ${sig} twice`));
    } else {
      process.exit(130);
    }
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    stop,
    stopped: () => count > 0,
    dispose: () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}

/** What commands share: the global flags, and where to put the exit code. */
export interface Cli {
  global(): GlobalOptions;
  exit(code: number): void;
}
