import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Clock } from '../../core/clock.js';
import {
  AddressRateLimit,
  parseHookUrl,
  presentedSecret,
  secretMatches,
  type HookResult,
  type HookSettings,
  type HookTarget,
} from './hooks.js';
import type { DaemonMetrics } from './metrics.js';

/** The methods a webhook may use (spec 2.10). */
const HOOK_METHODS = ['POST', 'PUT', 'DELETE'];

/** The daemon (or a worker) seen from the HTTP port. */
export interface HttpTarget {
  metrics: DaemonMetrics;
  /** `/healthz`, whether this process can work: 200, else 503; the body (JSON) says what fails. */
  health: () => Promise<{ healthy: boolean; body: unknown }>;
  /** `/healthz/fleet`, whether the fleet's connections and organizations are healthy: 200, else 503, the body saying why. */
  fleetHealth: () => Promise<{ healthy: boolean; body: unknown }>;
  /**
   * The status document (`/status.json`, or one organization's with `?connection=&organization=`)
   * and the page rendered from it (`/`); absent: no status page.
   */
  status?: (only?: { connection: string; organizationId: string }) => Promise<unknown>;
  page?: (query: string) => Promise<string>;
  /** Webhooks; absent: /hooks/... is 404. */
  hooks?: {
    settings: HookSettings;
    /** The connection's webhook secret; undefined for an unknown connection or one without hooks. */
    secretFor: (connection: string) => string | undefined;
    receive: (target: HookTarget) => Promise<HookResult>;
  };
}

export interface HttpServerOptions {
  port: number;
  host?: string;
  /** Basic auth for everything but /healthz, /healthz/fleet, /livez and the hooks (which have their own secret). */
  auth?: { username: string; password: string } | undefined;
  clock: Clock;
}

export interface HttpServer {
  url: string;
  close(): Promise<void>;
}

const text = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers }).end(body);
};
const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(`${JSON.stringify(body, null, 2)}\n`);
};

const gzipAsync = promisify(gzip);
/** Bodies smaller than this go as they are: compressing them saves nothing worth the time. */
const GZIP_FROM = 2048;

/** A large body, gzipped when the client accepts it (the page at 1,000 organizations is about ten times smaller so). */
async function sendLarge(req: IncomingMessage, res: ServerResponse, headers: Record<string, string>, body: string): Promise<void> {
  const accepts = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  if (!accepts || body.length < GZIP_FROM) {
    res.writeHead(200, { ...headers, vary: 'accept-encoding' }).end(body);
    return;
  }
  const zipped = await gzipAsync(body);
  res.writeHead(200, { ...headers, vary: 'accept-encoding', 'content-encoding': 'gzip' }).end(zipped);
}

function authorized(req: IncomingMessage, auth: HttpServerOptions['auth']): boolean {
  if (!auth) return true;
  const h = req.headers.authorization ?? '';
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(h);
  const presented = m ? Buffer.from(m[1]!, 'base64').toString('utf8') : undefined;
  return secretMatches(presented, `${auth.username}:${auth.password}`);
}

/** Reads at most `max` bytes of a body; null when it is longer (the rest is not read). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > max) {
        done = true;
        resolve(null);
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks));
    });
    req.on('error', (err) => {
      if (!done) reject(err);
    });
  });
}

/** What answering a hook needs: the target's hooks (present) and the per-address rate limit. */
interface HookDesk {
  hooks: NonNullable<HttpTarget['hooks']>;
  metrics: DaemonMetrics;
  rate: AddressRateLimit;
}

/**
 * A hook, checked cheapest first: the caller's rate, the body's size, the secret (constant time;
 * the same 401 whether the connection exists or not), and only then whether the organization is
 * known (404). The body is never used.
 */
async function onHook(desk: HookDesk, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { hooks, rate } = desk;
  const rejected = (reason: string): void => desk.metrics.hooksRejected.inc({ reason });
  if (!rate.allow(req.socket.remoteAddress ?? 'unknown')) {
    rejected('rate_limited');
    text(res, 429, 'too many hooks from this address; try again in a minute\n', { 'retry-after': '60' });
    return;
  }
  const max = hooks.settings.max_body_bytes;
  const declared = Number(req.headers['content-length'] ?? 0);
  const body = declared > max ? null : await readBody(req, max);
  if (body === null) {
    rejected('too_large');
    res.setHeader('connection', 'close');
    text(res, 413, `hook body over ${max} bytes\n`);
    return;
  }
  const hook = parseHookUrl(url);
  if (!hook || !secretMatches(presentedSecret(req.headers, url), hook ? hooks.secretFor(hook.connection) : undefined)) {
    rejected('unauthorized');
    text(res, 401, 'unauthorized\n');
    return;
  }
  answerHook(res, await hooks.receive(hook), rejected);
}

function answerHook(res: ServerResponse, result: HookResult, rejected: (reason: string) => void): void {
  if (result.kind === 'unknown') {
    rejected('unknown_organization');
    text(res, 404, `${result.message}\n`);
  } else if (result.kind === 'invalid') {
    rejected('bad_request');
    text(res, 400, `${result.message}\n`);
  } else if (result.kind === 'fallback') {
    json(res, 202, { accepted: true, run: 'at the next scheduled fire', reason: result.reason });
  } else {
    json(res, 202, { accepted: true, run: new Date(result.runAt).toISOString(), coalesced: result.coalesced });
  }
}

/** `/status.json`, or one organization's with `?connection=&organization=`. */
async function sendStatus(target: HttpTarget, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const connection = url.searchParams.get('connection');
  const organizationId = url.searchParams.get('organization');
  const only = connection !== null && organizationId !== null ? { connection, organizationId } : undefined;
  const doc = await target.status!(only);
  await sendLarge(
    req,
    res,
    { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
    `${JSON.stringify(doc, null, 2)}\n`,
  );
}

async function sendPage(target: HttpTarget, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const html = await target.page!(url.searchParams.get('q') ?? '');
  await sendLarge(
    req,
    res,
    {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // Everything is inline and nothing is fetched from elsewhere; the script reads /status.json.
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'",
    },
    html,
  );
}

/** The requests a process answers without the basic auth: liveness, readiness, the fleet's health. */
async function answerOpen(target: HttpTarget, res: ServerResponse, path: string): Promise<boolean> {
  // Liveness: the process answers. Readiness: it can do its work. The fleet's health: what every process reads alike
  // from the warehouse, for alerting (docs/daemon.md, "Health").
  if (path === '/livez') {
    text(res, 200, 'ok\n');
    return true;
  }
  if (path === '/healthz' || path === '/healthz/fleet') {
    const h = await (path === '/healthz' ? target.health() : target.fleetHealth());
    json(res, h.healthy ? 200 : 503, h.body);
    return true;
  }
  return false;
}

/** One request: a hook, an open health check, or (behind the basic auth) the metrics, the status document or the page. */
async function handle(
  target: HttpTarget,
  desk: HookDesk | null,
  auth: HttpServerOptions['auth'],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://svcsync.invalid');
  const path = url.pathname;
  if (path.startsWith('/hooks/') && desk) {
    // A webhook's method is the user's choice among POST, PUT and DELETE (spec 2.10); every one means "something changed".
    if (!HOOK_METHODS.includes(req.method ?? ''))
      return text(res, 405, 'hooks take POST, PUT or DELETE\n', { allow: HOOK_METHODS.join(', ') });
    return onHook(desk, req, res, url);
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'method not allowed\n', { allow: 'GET' });
  if (await answerOpen(target, res, path)) return;
  const known = path === '/metrics' || ((path === '/' || path === '/status.json') && target.status !== undefined);
  if (!known)
    return text(res, 404, `not found: try ${target.status ? '/, /status.json, ' : ''}/metrics, /healthz, /healthz/fleet or /livez\n`);
  if (!authorized(req, auth)) {
    return text(res, 401, 'authentication required\n', { 'www-authenticate': 'Basic realm="svcsync", charset="UTF-8"' });
  }
  if (path === '/metrics') {
    const body = await target.metrics.registry.metrics();
    res.writeHead(200, { 'content-type': target.metrics.registry.contentType }).end(body);
    return;
  }
  if (path === '/status.json') return sendStatus(target, req, res, url);
  return sendPage(target, req, res, url);
}

/**
 * The daemon's one HTTP port: `/` (status page), `/status.json`, `POST /hooks/...`, `/healthz`,
 * `/healthz/fleet`, `/livez` and `/metrics`.
 */
export async function serveHttp(target: HttpTarget, options: HttpServerOptions): Promise<HttpServer> {
  const desk = target.hooks
    ? {
        hooks: target.hooks,
        metrics: target.metrics,
        rate: new AddressRateLimit(options.clock, target.hooks.settings.per_address_per_minute),
      }
    : null;
  const server: Server = createServer((req, res) => {
    handle(target, desk, options.auth, req, res).catch((err: unknown) => {
      if (!res.headersSent) text(res, 500, `failed: ${err instanceof Error ? err.message : String(err)}\n`);
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    url: `http://${host}:${a.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
