import { Command } from 'commander';
import { ConfigError, ExitCode } from '../../core/errors.js';
import { Daemon } from '../../scheduler/daemon.js';
import { serveMetrics, type MetricsServer } from '../../scheduler/metrics.js';
import { loadRuntime, openConfiguredWarehouse, type Cli } from '../runtime.js';

interface DaemonFlags {
  backfill?: boolean;
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
    .option('--metrics-port <port>', 'serve /healthz and Prometheus /metrics on this port')
    .option('--metrics-host <host>', 'address for the metrics endpoint (default 127.0.0.1)')
    .option('--grace-ms <ms>', 'shutdown bound: running jobs finish their page within this (default daemon.shutdown_grace_ms, 30000)')
    .action(async (flags: DaemonFlags) => {
      const rt = loadRuntime(cli.global());
      const port = intFlag('metrics-port', flags.metricsPort, 65535) ?? rt.config.daemon.metrics_port;
      const graceMs = intFlag('grace-ms', flags.graceMs, 3_600_000) ?? rt.config.daemon.shutdown_grace_ms;
      const warehouse = await openConfiguredWarehouse(rt.config);
      const daemon = new Daemon({
        config: rt.config,
        warehouse,
        clock: rt.clock,
        logger: rt.logger,
        secrets: rt.secrets,
        backfill: flags.backfill ?? rt.config.daemon.backfill,
      });
      let metrics: MetricsServer | null = null;
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
          metrics = await serveMetrics(daemon.metrics, {
            port,
            host: flags.metricsHost ?? rt.config.daemon.metrics_host,
            healthy: () => !daemon.isStopping(),
          });
          rt.logger.info({ url: metrics.url }, 'metrics endpoint listening');
        }
        await daemon.start();
        rt.logger.info({ jobs: daemon.jobs().length, organizations: daemon.knownOrganizations().length }, 'daemon started');
        await done;
        await daemon.stop(graceMs);
        rt.logger.info('daemon stopped');
        cli.exit(ExitCode.ok);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await metrics?.close();
        await warehouse.close();
      }
    });
}
