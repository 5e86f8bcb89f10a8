import type { Config } from '../../src/config/schema.js';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { Daemon, type DaemonContext } from '../../src/scheduler/daemon.js';
import type { SchedulerEvent } from '../../src/scheduler/timing/scheduler.js';
import type { E2E } from './e2e.js';

/** A daemon on an end-to-end run's warehouse and sandbox clock, its log captured and its scheduler's events kept. */
export function newDaemon(
  e: E2E,
  config: Config,
  extra: Pick<DaemonContext, 'backfill' | 'fetch'> = {},
): { daemon: Daemon; events: SchedulerEvent[]; log: CapturedLog } {
  const log = new CapturedLog();
  const logger = createLogger({ level: 'info', secrets: e.secrets, destination: log });
  const events: SchedulerEvent[] = [];
  const daemon = new Daemon({
    config,
    warehouse: e.warehouse,
    clock: e.sandbox.clock,
    logger,
    secrets: e.secrets,
    onEvent: (ev) => events.push(ev),
    ...extra,
  });
  return { daemon, events, log };
}
