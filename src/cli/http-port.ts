import type { Config } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { healthVerdict, readinessVerdict, type JobLoopState } from '../scheduler/surface/health.js';
import { hookSecret, type HookResult, type HookTarget } from '../scheduler/surface/hooks.js';
import { serveHttp, type HttpServer } from '../scheduler/surface/http-server.js';
import type { DaemonMetrics } from '../scheduler/surface/metrics.js';
import { WarehouseProbe } from '../scheduler/surface/readiness.js';
import { collectStatusDocument, type StatusDocument } from '../scheduler/surface/status-document.js';
import type { LiveStatus } from '../scheduler/surface/live-status.js';
import { renderStatusPage } from '../scheduler/surface/status-page.js';
import type { Worker } from '../scheduler/worker.js';

/** `--http-port`/`--http-host`, their older names `--metrics-port`/`--metrics-host`, then the config's keys. */
export function httpAddress(
  flags: { httpPort?: number | undefined; metricsPort?: number | undefined; httpHost?: string; metricsHost?: string },
  config: Config,
): { port: number | undefined; host: string } {
  return {
    port: flags.httpPort ?? flags.metricsPort ?? config.daemon.http_port ?? config.daemon.metrics_port,
    host: flags.httpHost ?? flags.metricsHost ?? config.daemon.http_host ?? config.daemon.metrics_host,
  };
}

/** What the port serves from a daemon or a worker: its metrics, health, live state (daemon only) and hooks. */
export interface HttpSource {
  metrics: DaemonMetrics;
  /** The daemon's scheduler or the worker's queue subscription: `/healthz` answers 503 unless it runs (`/livez` stays 200). */
  jobs: () => JobLoopState;
  /** The daemon's live state for `/status.json`; a worker has none (the queue stands for it). */
  live?: () => LiveStatus;
  hookSecret: (connection: string) => string | undefined;
  receiveHook: (target: HookTarget) => Promise<HookResult>;
}

/** The page's row counts may be this old (docs/daemon.md, "Status page"): the page reloads every minute, in every open browser. */
const ROW_COUNTS_MAX_AGE_MS = 2 * 60_000;

/** The daemon's live state cut to one organization, for the page's detail of it. */
function liveFor(live: LiveStatus | null, only: { connection: string; organizationId: string }): LiveStatus | null {
  if (!live) return null;
  const mine = (x: { connection: string; organizationId: string | null }): boolean =>
    x.connection === only.connection && x.organizationId === only.organizationId;
  return {
    startedAt: live.startedAt,
    running: live.running.filter(mine),
    hookRunsDue: live.hookRunsDue.filter(mine),
    hookFallbacks: live.hookFallbacks.filter(mine),
    nextRuns: live.nextRuns.filter(mine),
  };
}

/**
 * `/healthz`, this process's readiness: 503 `stopping` once shutdown began (without asking the
 * warehouse), 503 `starting` until its job loop runs, 503 `failing` when its warehouse does not
 * answer or its scheduler's tick hangs; 200 `ok` otherwise. What the rest of the fleet does
 * (a connection that cannot log in, failing organizations) is `/healthz/fleet`'s.
 */
async function readiness(source: HttpSource, probe: WarehouseProbe, clock: Clock): Promise<{ healthy: boolean; body: unknown }> {
  const jobs = source.jobs();
  if (jobs.state === 'stopping') return { healthy: false, body: { status: 'stopping' } };
  const verdict = readinessVerdict(jobs, await probe.probe(), clock.now());
  return { healthy: verdict.status === 'ok', body: verdict };
}

/**
 * `/healthz/fleet`: 503 `failing` when a connection cannot authorize or more than
 * `daemon.health.max_failing_ratio` of the organizations fail, or when the warehouse cannot be
 * read; 200 `ok` otherwise. Read from the warehouse, so every process answers the same.
 */
async function fleetHealth(config: Config, warehouse: Warehouse, clock: Clock): Promise<{ healthy: boolean; body: unknown }> {
  try {
    const doc = await collectStatusDocument(config, warehouse, clock.now(), null, { light: true });
    const verdict = healthVerdict(doc, config.daemon.health.max_failing_ratio);
    return { healthy: verdict.status === 'ok', body: verdict };
  } catch (error) {
    return { healthy: false, body: { status: 'failing', warehouse: describeError(error) } };
  }
}

/** The status page, /status.json, webhooks, /healthz, /healthz/fleet, /livez and /metrics of `svcsync daemon` and `svcsync worker`. */
export function serveSyncHttp(
  source: HttpSource,
  config: Config,
  warehouse: Warehouse,
  clock: Clock,
  address: { port: number; host?: string },
): Promise<HttpServer> {
  const status = (only?: { connection: string; organizationId: string }): Promise<StatusDocument> => {
    const live = source.live?.() ?? null;
    return collectStatusDocument(config, warehouse, clock.now(), only ? liveFor(live, only) : live, {
      only,
      rowCountsMaxAgeMs: ROW_COUNTS_MAX_AGE_MS,
    });
  };
  const probe = new WarehouseProbe(warehouse);
  return serveHttp(
    {
      metrics: source.metrics,
      health: () => readiness(source, probe, clock),
      fleetHealth: () => fleetHealth(config, warehouse, clock),
      status,
      page: async (query) => renderStatusPage(await status(), query, clock.now()),
      hooks: { settings: config.daemon.hooks, secretFor: source.hookSecret, receive: source.receiveHook },
    },
    { port: address.port, host: address.host, auth: config.daemon.http_auth, clock },
  );
}

/** A worker's HTTP port: the same routes as the daemon's; hooks queue runs in the shared queue. */
export function serveWorkerHttp(
  worker: Worker,
  config: Config,
  warehouse: Warehouse,
  clock: Clock,
  address: { port: number; host?: string },
): Promise<HttpServer> {
  return serveSyncHttp(
    {
      metrics: worker.runner.metrics,
      jobs: () => worker.jobLoop(),
      hookSecret: (connection) => hookSecret(config.connections, connection),
      receiveHook: (target) => worker.receiveHook(target),
    },
    config,
    warehouse,
    clock,
    address,
  );
}
