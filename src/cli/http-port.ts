import type { Config } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import type { Warehouse } from '../loaders/warehouse.js';
import type { HookResult, HookTarget } from '../scheduler/hooks.js';
import { serveHttp, type HttpServer } from '../scheduler/http-server.js';
import type { DaemonMetrics } from '../scheduler/metrics.js';
import { collectStatusDocument, type LiveStatus, type StatusDocument } from '../scheduler/status-document.js';
import { renderStatusPage } from '../scheduler/status-page.js';

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
  healthy: () => boolean;
  /** The daemon's live state for `/status.json`; a worker has none (the queue stands for it). */
  live?: () => LiveStatus;
  hookSecret: (connection: string) => string | undefined;
  receiveHook: (target: HookTarget) => Promise<HookResult>;
}

/** The status page, /status.json, webhooks, /healthz and /metrics of `svcsync daemon` and `svcsync worker`. */
export function serveSyncHttp(
  source: HttpSource,
  config: Config,
  warehouse: Warehouse,
  clock: Clock,
  address: { port: number; host?: string },
): Promise<HttpServer> {
  const status = (): Promise<StatusDocument> => collectStatusDocument(config, warehouse, clock.now(), source.live?.() ?? null);
  return serveHttp(
    {
      metrics: source.metrics,
      healthy: source.healthy,
      status,
      page: async (query) => renderStatusPage(await status(), query, clock.now()),
      hooks: { settings: config.daemon.hooks, secretFor: source.hookSecret, receive: source.receiveHook },
    },
    { port: address.port, host: address.host, auth: config.daemon.http_auth, clock },
  );
}
