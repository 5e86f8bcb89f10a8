import { Command } from 'commander';
import { ConfigError, ExitCode } from '../../core/errors.js';
import type { HttpServer } from '../../scheduler/surface/http-server.js';
import { httpAddress, serveWorkerHttp } from '../http-port.js';
import { assertWorkerWarehouse, Worker } from '../../scheduler/worker.js';
import { loadRuntime, openConfiguredWarehouse, type Cli } from '../runtime.js';

interface WorkerFlags {
  httpPort?: string;
  httpHost?: string;
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
    .option('--http-port <port>', 'serve the status page (/), /status.json, webhooks (/hooks/...), /healthz and /metrics on this port')
    .option('--http-host <host>', 'address the HTTP port binds to (default 127.0.0.1: this machine only)')
    .option('--metrics-port <port>', 'the same as --http-port (its older name)')
    .option('--metrics-host <host>', 'the same as --http-host (its older name)')
    .option('--grace-ms <ms>', 'shutdown bound: running jobs finish their page within this (default daemon.shutdown_grace_ms, 30000)')
    .action(async (flags: WorkerFlags) => {
      const rt = loadRuntime(cli.global());
      // Before anything opens: a SQLite warehouse cannot hold the shared queue.
      assertWorkerWarehouse(rt.config.warehouse.url);
      const { port, host } = httpAddress(
        {
          httpPort: intFlag('http-port', flags.httpPort, 0, 65535),
          metricsPort: intFlag('metrics-port', flags.metricsPort, 0, 65535),
          ...(flags.httpHost !== undefined ? { httpHost: flags.httpHost } : {}),
          ...(flags.metricsHost !== undefined ? { metricsHost: flags.metricsHost } : {}),
        },
        rt.config,
      );
      const graceMs = intFlag('grace-ms', flags.graceMs, 0, 3_600_000) ?? rt.config.daemon.shutdown_grace_ms;
      const concurrency = intFlag('concurrency', flags.concurrency, 1, 64) ?? rt.config.worker.concurrency;
      const config = { ...rt.config, worker: { ...rt.config.worker, concurrency } };
      const warehouse = await openConfiguredWarehouse(config, rt.logger);
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
        await worker.start();
        // After start: hooks queue jobs in pg-boss, which start() installs.
        if (port !== undefined) {
          metrics = await serveWorkerHttp(worker, config, warehouse, rt.clock, { port, host });
          rt.logger.info({ url: metrics.url }, 'status page, webhooks and metrics listening');
        }
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
