import { loadConfig, DEFAULT_CONFIG_PATH } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { systemClock, type Clock } from '../core/clock.js';
import { createLogger, type Logger } from '../core/logger.js';
import { SecretRegistry } from '../core/secrets.js';
import { openWarehouse, type Warehouse } from '../loaders/warehouse.js';

export interface GlobalOptions {
  config?: string;
  logLevel?: string;
}

export interface Runtime {
  config: Config;
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
  const config = loadConfig(global.config ?? DEFAULT_CONFIG_PATH, { secrets });
  const logger = createLogger({ level: logLevelFor(global, config.log_level), secrets });
  return { config, logger, secrets, clock: systemClock };
}

export async function withWarehouse<T>(url: string, fn: (w: Warehouse) => Promise<T>): Promise<T> {
  const warehouse = await openWarehouse(url);
  try {
    return await fn(warehouse);
  } finally {
    await warehouse.close();
  }
}

/**
 * The first SIGINT/SIGTERM aborts the run: pages in flight are abandoned uncommitted and
 * everything committed stays. A second signal exits at once.
 */
export function abortOnSignals(logger: Logger): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  let count = 0;
  const handler = (sig: NodeJS.Signals): void => {
    count++;
    if (count === 1) {
      logger.warn({ signal: sig }, 'stopping: committed pages are kept; the next run resumes where this one stopped (signal again to exit at once)');
      process.stderr.write(`\nsvcsync: ${sig} received, stopping after the current page. Send it again to exit at once.\n`);
      controller.abort(new Error(`interrupted by ${sig}`));
    } else {
      process.exit(130);
    }
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
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
