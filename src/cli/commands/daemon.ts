import { Command } from 'commander';
import { ConfigError, ExitCode } from '../../core/errors.js';
import { Daemon } from '../../scheduler/daemon.js';
import { hookSecret } from '../../scheduler/surface/hooks.js';
import type { HttpServer } from '../../scheduler/surface/http-server.js';
import { httpAddress, serveSyncHttp } from '../http-port.js';
import { loadRuntime, openConfiguredWarehouse, type Cli } from '../runtime.js';
import type { Config } from '../../config/schema.js';
import type { Clock } from '../../core/clock.js';
import type { Warehouse } from '../../loaders/warehouse.js';

interface DaemonFlags {
  backfill?: boolean;
  httpPort?: string;
  httpHost?: string;
  metricsPort?: string;
  metricsHost?: string;
  graceMs?: string;
}

function intFlag(name: string, value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > max) throw new ConfigError(`--${name}: expected a whole number from 0 to ${max}`, []);
  return n;
}

export function daemonCommand(cli: Cli): Command {
  return new Command('daemon')
    .description(
      "keep the warehouse current on the configured schedules within each organization's daily budget (SIGTERM/SIGINT stop it gracefully)",
    )
    .option('--backfill', 'also backfill every stream, spread over days on the budget the schedule leaves')
    .option('--http-port <port>', 'serve the status page (/), /status.json, webhooks (/hooks/...), /healthz and /metrics on this port')
    .option('--http-host <host>', 'address the HTTP port binds to (default 127.0.0.1: this machine only)')
    .option('--metrics-port <port>', 'the same as --http-port (its older name)')
    .option('--metrics-host <host>', 'the same as --http-host (its older name)')
    .option('--grace-ms <ms>', 'shutdown bound: running jobs finish their page within this (default daemon.shutdown_grace_ms, 30000)')
    .action(async (flags: DaemonFlags) => {
      const rt = loadRuntime(cli.global());
      const { port, host } = httpAddress(
        {
          httpPort: intFlag('http-port', flags.httpPort, 65535),
          metricsPort: intFlag('metrics-port', flags.metricsPort, 65535),
          ...(flags.httpHost !== undefined ? { httpHost: flags.httpHost } : {}),
          ...(flags.metricsHost !== undefined ? { metricsHost: flags.metricsHost } : {}),
        },
        rt.config,
      );
      const graceMs = intFlag('grace-ms', flags.graceMs, 3_600_000) ?? rt.config.daemon.shutdown_grace_ms;
      const warehouse = await openConfiguredWarehouse(rt.config, rt.logger);
      const daemon = new Daemon({
        config: rt.config,
        warehouse,
        clock: rt.clock,
        logger: rt.logger,
        secrets: rt.secrets,
        backfill: flags.backfill ?? rt.config.daemon.backfill,
      });
      let http: HttpServer | null = null;
      let signals = 0;
      let stopped: (() => void) | null = null;
      const done = new Promise<void>((resolve) => (stopped = resolve));
      const onSignal = (sig: NodeJS.Signals): void => {
        signals++;
        if (signals > 1) {
          // Each page commits in one transaction, so exiting now loses nothing committed.
          rt.logger.warn({ signal: sig }, 'second signal: exiting at once');
          daemon.scheduler.abortAll();
          process.exit(130);
        }
        rt.logger.warn(
          { signal: sig, grace_ms: graceMs },
          'stopping: no new jobs; running jobs finish their page (signal again to exit at once)',
        );
        process.stderr.write(
          `\nsvcsync daemon: ${sig} received, stopping within ${Math.round(graceMs / 1000)} s. Send it again to exit at once.\n`,
        );
        stopped?.();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        if (port !== undefined) {
          http = await serveDaemonHttp(daemon, rt.config, warehouse, rt.clock, { port, host });
          rt.logger.info({ url: http.url }, 'status page, webhooks and metrics listening');
        }
        await daemon.start();
        rt.logger.info({ jobs: daemon.runner.jobs().length, organizations: daemon.runner.knownOrganizations().length }, 'daemon started');
        await done;
        await daemon.stop(graceMs);
        rt.logger.info('daemon stopped');
        cli.exit(ExitCode.ok);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await http?.close();
        await warehouse.close();
      }
    });
}

/** The daemon's HTTP port: status page, /status.json (with what it is doing now), webhooks, /healthz and /metrics. */
export function serveDaemonHttp(
  daemon: Daemon,
  config: Config,
  warehouse: Warehouse,
  clock: Clock,
  address: { port: number; host?: string },
): Promise<HttpServer> {
  return serveSyncHttp(
    {
      metrics: daemon.runner.metrics,
      jobs: () => daemon.jobLoop(),
      live: () => daemon.liveStatus(),
      hookSecret: (connection) => hookSecret(config.connections, connection),
      receiveHook: (target) => daemon.receiveHook(target),
    },
    config,
    warehouse,
    clock,
    address,
  );
}
