import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { serveSyncHttp } from '../../src/cli/http-port.js';
import { parseConfig } from '../../src/config/load.js';
import { FakeClock } from '../../src/core/clock.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import type { HealthReport, JobLoopState, ReadinessReport } from '../../src/scheduler/surface/health.js';
import { DEFAULT_HOOK_SETTINGS } from '../../src/scheduler/surface/hooks.js';
import { serveHttp, type HttpServer, type HttpTarget } from '../../src/scheduler/surface/http-server.js';
import type { DaemonMetrics } from '../../src/scheduler/surface/metrics.js';
import { recordAuthorization } from '../../src/state/connection-auth.js';
import { DIALECTS, migratedWarehouse } from '../helpers/dialects.js';

/** Just the parts of the daemon's metrics the server touches. */
function metrics(): DaemonMetrics {
  const registry = new Registry();
  const hooksRejected = new Counter({ name: 'svcsync_hooks_rejected_total', help: 'h', labelNames: ['reason'], registers: [registry] });
  return { registry, hooksRejected } as unknown as DaemonMetrics;
}

describe('the HTTP port', () => {
  const servers: HttpServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });

  async function serve(over: Partial<HttpTarget> = {}, auth?: { username: string; password: string }): Promise<string> {
    const received: unknown[] = [];
    const target: HttpTarget = {
      metrics: metrics(),
      health: () => Promise.resolve({ healthy: true, body: { status: 'ok' } }),
      fleetHealth: () => Promise.resolve({ healthy: true, body: { status: 'ok' } }),
      status: (only) => Promise.resolve({ organizations: [], only: only ?? null }),
      page: (q) => Promise.resolve(`<p>page ${q}</p>`),
      hooks: {
        settings: DEFAULT_HOOK_SETTINGS,
        secretFor: (c) => (c === 'main' ? 'the-secret-of-main-0123' : undefined),
        receive: (t) => {
          received.push(t);
          return Promise.resolve({ kind: 'accepted', runAt: 0, coalesced: false });
        },
      },
      ...over,
    };
    const s = await serveHttp(target, { port: 0, auth, clock: new FakeClock(0) });
    servers.push(s);
    return s.url;
  }

  it('binds to 127.0.0.1 unless told otherwise', async () => {
    const url = await serve();
    expect(new URL(url).hostname).toBe('127.0.0.1');
  });

  it('with http_auth, the page, /status.json and /metrics ask for basic auth; /healthz stays open', async () => {
    const url = await serve({}, { username: 'ops', password: 'pa:ss word' });
    const basic = (u: string, p: string): Record<string, string> => ({
      authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`,
    });
    for (const path of ['/', '/status.json', '/metrics']) {
      const none = await fetch(`${url}${path}`);
      expect(none.status, path).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm="svcsync"/);
      expect((await fetch(`${url}${path}`, { headers: basic('ops', 'wrong') })).status, path).toBe(401);
      expect((await fetch(`${url}${path}`, { headers: basic('ops', 'pa:ss word') })).status, path).toBe(200);
    }
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    // Hooks use their own secret, not basic auth.
    expect((await fetch(`${url}/hooks/main/books/1?secret=the-secret-of-main-0123`, { method: 'POST' })).status).toBe(202);
    // A webhook may be set up with PUT or DELETE (spec 2.10): the same hook.
    for (const method of ['PUT', 'DELETE'])
      expect((await fetch(`${url}/hooks/main/books/1?secret=the-secret-of-main-0123`, { method })).status, method).toBe(202);
  });

  it('answers unknown paths with 404, wrong methods with 405, and renders the page with the filter from ?q=', async () => {
    const url = await serve();
    expect((await fetch(`${url}/nope`)).status).toBe(404);
    expect((await fetch(`${url}/status.json`, { method: 'POST' })).status).toBe(405);
    const get = await fetch(`${url}/hooks/main/books/1`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, PUT, DELETE');
    const page = await fetch(`${url}/?q=acme`);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await page.text()).toBe('<p>page acme</p>');
    expect(await (await fetch(`${url}/status.json`)).json()).toEqual({ organizations: [], only: null });
    // One organization's document, for the page's detail of it.
    expect(await (await fetch(`${url}/status.json?connection=main&organization=42`)).json()).toEqual({
      organizations: [],
      only: { connection: 'main', organizationId: '42' },
    });
  });

  it('/healthz and /healthz/fleet answer 503 with a JSON body naming what fails; /livez answers 200 while the process lives', async () => {
    const body = { status: 'failing', reasons: ['the warehouse cannot be read: gone'] };
    const fleet = { status: 'failing', failingConnections: [{ connection: 'broken', error: 'refused' }] };
    const url = await serve(
      { health: () => Promise.resolve({ healthy: false, body }), fleetHealth: () => Promise.resolve({ healthy: false, body: fleet }) },
      { username: 'ops', password: 'secret' },
    );
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(503);
    expect(health.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await health.json()).toEqual(body);
    const fleetHealth = await fetch(`${url}/healthz/fleet`);
    expect(fleetHealth.status).toBe(503);
    expect(await fleetHealth.json()).toEqual(fleet);
    // All three stay open without basic auth, for load balancers, orchestrators and probes.
    const live = await fetch(`${url}/livez`);
    expect(live.status).toBe(200);
    expect(await live.text()).toBe('ok\n');
  });

  it('gzips a large page or document for a client that accepts it', async () => {
    const big = `<p>${'organization '.repeat(2_000)}</p>`;
    const url = await serve({ page: () => Promise.resolve(big) });
    const res = await fetch(`${url}/`, { headers: { 'accept-encoding': 'gzip' } });
    expect(res.headers.get('content-encoding')).toBe('gzip');
    // fetch unzips it: the same page.
    expect(await res.text()).toBe(big);
    const plain = await new Promise<{ encoding: string | undefined; length: number }>((resolve, reject) => {
      import('node:http')
        .then(({ get }) =>
          get(`${url}/`, (r) => {
            let length = 0;
            r.on('data', (c: Buffer) => (length += c.length));
            r.on('end', () => resolve({ encoding: r.headers['content-encoding'], length }));
          }).on('error', reject),
        )
        .catch(reject);
    });
    expect(plain).toEqual({ encoding: undefined, length: big.length });
  });

  it('a hook: too large is refused before the secret, a wrong secret before the organization is looked up', async () => {
    let looked = 0;
    const url = await serve({
      hooks: {
        settings: { ...DEFAULT_HOOK_SETTINGS, max_body_bytes: 10 },
        secretFor: () => 'the-secret-of-main-0123',
        receive: () => {
          looked++;
          return Promise.resolve({ kind: 'unknown', message: 'organization 1 is not known' });
        },
      },
    });
    const big = await fetch(`${url}/hooks/main/books/1?secret=the-secret-of-main-0123`, { method: 'POST', body: 'x'.repeat(11) });
    expect(big.status).toBe(413);
    const wrong = await fetch(`${url}/hooks/main/books/1?secret=nope`, { method: 'POST', body: '{}' });
    expect(wrong.status).toBe(401);
    expect(looked).toBe(0);
    const unknown = await fetch(`${url}/hooks/main/books/1`, {
      method: 'POST',
      headers: { 'x-svcsync-secret': 'the-secret-of-main-0123' },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('not known');
    expect(looked).toBe(1);
  });
});

describe.each(DIALECTS)('readiness per process, the fleet apart (serveSyncHttp, %s)', (dialect) => {
  const NOW = Date.parse('2026-11-23T12:00:00Z');
  const servers: HttpServer[] = [];
  const warehouses: Warehouse[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
    // A test may have closed its warehouse already, on purpose.
    for (const w of warehouses.splice(0)) await w.close().catch(() => undefined);
  });

  /** A process on a warehouse where another process's run found connection `broken` refused. */
  async function syncProcess(jobs: () => JobLoopState) {
    const tw = await migratedWarehouse(dialect);
    const warehouse = await tw.open();
    warehouses.push(warehouse);
    await migrateToLatest(warehouse);
    const conn = { client_id: 'id', client_secret: 'secret', refresh_token: 'refresh' };
    const config = parseConfig(
      {
        warehouse: tw.url,
        connections: [
          { name: 'main', ...conn },
          { name: 'broken', ...conn },
        ],
      },
      { env: {} },
    );
    await recordAuthorization(warehouse.db, {
      connection: 'broken',
      result: 'refused',
      at: NOW - 60_000,
      error: 'the token request was refused (invalid_client)',
      hint: 'check client_id and client_secret',
    });
    const clock = new FakeClock(NOW);
    const http = await serveSyncHttp(
      { metrics: metrics(), jobs, hookSecret: () => undefined, receiveHook: () => Promise.resolve({ kind: 'unknown', message: 'none' }) },
      config,
      warehouse,
      clock,
      { port: 0 },
    );
    servers.push(http);
    return { url: http.url, warehouse, clock };
  }
  const get = async <T>(url: string): Promise<{ status: number; body: T }> => {
    const res = await fetch(url);
    return { status: res.status, body: (await res.json()) as T };
  };

  it('a connection that cannot log in leaves /healthz 200 on every process; /healthz/fleet answers 503 naming it', async () => {
    const p = await syncProcess(() => ({ state: 'running', tickSince: null }));
    const ready = await get<ReadinessReport>(`${p.url}/healthz`);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok', reasons: [], jobs: { state: 'running' }, warehouse: { reachable: true } });
    const fleet = await get<HealthReport>(`${p.url}/healthz/fleet`);
    expect(fleet.status).toBe(503);
    expect(fleet.body.status).toBe('failing');
    expect(fleet.body.failingConnections).toEqual([
      expect.objectContaining({ connection: 'broken', error: 'the token request was refused (invalid_client)' }),
    ]);
  });

  it('/healthz answers 503 while the job loop starts, when its tick hangs, when shutdown began, and without its warehouse', async () => {
    let jobs: JobLoopState = { state: 'starting', tickSince: null };
    const p = await syncProcess(() => jobs);
    expect(await get<ReadinessReport>(`${p.url}/healthz`)).toMatchObject({ status: 503, body: { status: 'starting' } });
    jobs = { state: 'running', tickSince: NOW - 11 * 60_000 };
    const hung = await get<ReadinessReport>(`${p.url}/healthz`);
    expect(hung.status).toBe(503);
    expect(hung.body.reasons).toEqual([`the scheduler's tick has run for 11 min: no job starts until it ends; restart the process`]);
    jobs = { state: 'running', tickSince: NOW - 30_000 };
    expect((await get<ReadinessReport>(`${p.url}/healthz`)).status).toBe(200);
    await p.warehouse.close();
    const gone = await get<ReadinessReport>(`${p.url}/healthz`);
    expect(gone.status).toBe(503);
    expect(gone.body.status).toBe('failing');
    expect(gone.body.warehouse.reachable).toBe(false);
    expect(gone.body.reasons[0]).toMatch(/^the warehouse cannot be read: /);
    jobs = { state: 'stopping', tickSince: null };
    expect(await get(`${p.url}/healthz`)).toEqual({ status: 503, body: { status: 'stopping' } });
  });
});
