import { Command } from 'commander';
import { ConfigError, ExitCode } from '../../core/errors.js';
import { serveMetrics } from '../../scheduler/metrics.js';
import type { HttpServer } from '../../scheduler/http-server.js';
import { assertWorkerWarehouse, Worker } from '../../scheduler/worker.js';
import { loadRuntime, openConfiguredWarehouse, type Cli } from '../runtime.js';

interface WorkerFlags {
  metricsPort?: string;
  metricsHost?: string;
  graceMs?: string;
  concurrency?: string;
}

function intFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`--${name}: expected a whole number from ${min} to ${max}`, []);
  return n;
}

export function workerCommand(cli: Cli): Command {
  return new Command('worker')
    .description(
      'one of any number of equal sync processes on a Postgres warehouse, coordinated through pg-boss (docs/scale-out.md); ' +
        'SIGTERM/SIGINT stop it gracefully',
    )
    .option('--concurrency <n>', 'sync jobs this process runs at once (default worker.concurrency, 4)')
    .option('--metrics-port <port>', 'serve /healthz and Prometheus /metrics on this port')
    .option('--metrics-host <host>', 'address for the metrics endpoint (default 127.0.0.1)')
    .option('--grace-ms <ms>', 'shutdown bound: running jobs finish their page within this (default daemon.shutdown_grace_ms, 30000)')
    .action(async (flags: WorkerFlags) => {
      const rt = loadRuntime(cli.global());
      // Before anything opens: a SQLite warehouse cannot hold the shared queue.
      assertWorkerWarehouse(rt.config.warehouse);
      const port = intFlag('metrics-port', flags.metricsPort, 0, 65535) ?? rt.config.daemon.metrics_port;
      const graceMs = intFlag('grace-ms', flags.graceMs, 0, 3_600_000) ?? rt.config.daemon.shutdown_grace_ms;
      const concurrency = intFlag('concurrency', flags.concurrency, 1, 64) ?? rt.config.worker.concurrency;
      const config = { ...rt.config, worker: { ...rt.config.worker, concurrency } };
      const warehouse = await openConfiguredWarehouse(config);
      const worker = new Worker({ config, warehouse, clock: rt.clock, logger: rt.logger, secrets: rt.secrets });
      let metrics: HttpServer | null = null;
      let signals = 0;
      let stopped: (() => void) | null = null;
      const done = new Promise<void>((resolve) => (stopped = resolve));
      const onSignal = (sig: NodeJS.Signals): void => {
        signals++;
        if (signals > 1) {
          // Each page commits in one transaction; pg-boss retries the jobs left active after they expire.
          rt.logger.warn({ signal: sig }, 'second signal: exiting at once');
          process.exit(130);
        }
        rt.logger.warn({ signal: sig, grace_ms: graceMs }, 'stopping: no new jobs; running jobs finish their page and are queued again');
        process.stderr.write(
          `\nsvcsync worker: ${sig} received, stopping within ${Math.round(graceMs / 1000)} s. Send it again to exit at once.\n`,
        );
        stopped?.();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        if (port !== undefined) {
          metrics = await serveMetrics(worker.daemon.metrics, {
            port,
            host: flags.metricsHost ?? config.daemon.metrics_host,
            healthy: () => !worker.isStopping(),
          });
          rt.logger.info({ url: metrics.url }, 'metrics endpoint listening');
        }
        await worker.start();
        await done;
        await worker.stop(graceMs);
        cli.exit(ExitCode.ok);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await metrics?.close();
        await warehouse.close();
      }
    });
}
