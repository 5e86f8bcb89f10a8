import { afterEach, describe, expect, it } from 'vitest';
import { serveDaemonHttp } from '../../src/cli/commands/daemon.js';
import type { Config } from '../../src/config/schema.js';
import { createLogger } from '../../src/core/logger.js';
import { Daemon } from '../../src/scheduler/daemon.js';
import type { HttpServer } from '../../src/scheduler/surface/http-server.js';
import type { SchedulerEvent } from '../../src/scheduler/timing/scheduler.js';
import type { StatusDocument } from '../../src/scheduler/surface/status-document.js';
import { DIALECTS } from '../helpers/dialects.js';
import { instant, startE2E, type E2E } from '../helpers/e2e.js';

const SECRET = 'webhook-secret-for-the-e2e-tests-0123456789';
const DEBOUNCE_MS = 10_000;
const LIST = 'GET /inventory/v1/salesorders';
const DETAIL = 'GET /inventory/v1/salesorders/{id}';

/** The sales orders of one organization, id → last modified instant, in the warehouse and in the truth. */
async function orders(e: E2E, org: string): Promise<{ warehouse: Map<string, number>; truth: Map<string, number> }> {
  const p = e.warehouse.sql.param(1);
  const rows = await e.query<{ id: string; m: string }>(
    `SELECT salesorder_id AS id, last_modified_time AS m FROM inventory_sales_orders WHERE organization_id = ${p} AND _deleted_at IS NULL`,
    [org],
  );
  return {
    warehouse: new Map(rows.map((r) => [String(r.id), instant(r.m)])),
    truth: new Map(
      e.sandbox.truth(org, 'inventory', 'sales_orders').map((r) => [String(r['salesorder_id']), instant(r['last_modified_time'])]),
    ),
  };
}

async function until(what: string, timeoutMs: number, probe: () => Promise<boolean> | boolean): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

for (const dialect of DIALECTS) {
  describe(`webhook-triggered runs on the daemon's HTTP port (${dialect})`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
    });

    async function setUp(hooks: Partial<Config['daemon']['hooks']> = {}) {
      const e = await startE2E(
        dialect,
        { scale: 12, organizations: 2, timeScale: 1 },
        { connection: { webhook_secret: SECRET, families: ['inventory'], streams: ['inventory.sales_orders'] } },
      );
      cleanups.push(() => e.close());
      const first = await e.sync();
      expect(first.exitCode).toBe(0);
      const config: Config = {
        ...e.config,
        daemon: {
          ...e.config.daemon,
          // Schedules far away, so every run in the test is a hook's.
          schedules: { incremental: '0 3 * * *', settings: '0 4 * * *', reconcile: 'off', backfill: 'off' },
          hooks: { debounce_ms: DEBOUNCE_MS, per_address_per_minute: 5_000, max_body_bytes: 64 * 1024, ...hooks },
        },
      };
      const events: SchedulerEvent[] = [];
      const daemon = new Daemon({
        config,
        warehouse: e.warehouse,
        clock: e.sandbox.clock,
        logger: createLogger({ level: 'silent', secrets: e.secrets }),
        secrets: e.secrets,
        onEvent: (ev) => events.push(ev),
      });
      await daemon.start();
      cleanups.push(() => daemon.stop(1_000));
      const http: HttpServer = await serveDaemonHttp(daemon, config, e.warehouse, e.sandbox.clock, { port: 0 });
      cleanups.push(() => http.close());
      const org = e.sandbox.organizations()[0]!.organization_id;
      const started = (): SchedulerEvent[] => events.filter((ev) => ev.type === 'started');
      return { e, config, daemon, http, org, events, started };
    }

    it('a record changed and announced by a hook is in the warehouse after the debounce and one run, at the minimum requests', async () => {
      const { e, daemon, http, org, started } = await setUp();
      e.sandbox.advanceClock(60_000);
      const mutation = e.sandbox.mutate({ organizationId: org, modify: 1, streams: ['sales_orders'] });
      expect(mutation.modified).toBe(1);
      e.sandbox.resetRequestLog();
      const before = e.sandbox.now();
      const res = await fetch(`${http.url}/hooks/e2e/inventory/${org}/sales_orders`, {
        method: 'POST',
        headers: { 'x-svcsync-secret': SECRET, 'content-type': 'application/json' },
        body: JSON.stringify({ event: 'salesorder.updated', ignored: 'the payload is never used' }),
      });
      expect(res.status).toBe(202);
      const body = (await res.json()) as { accepted: boolean; run: string; coalesced: boolean };
      expect(body.accepted).toBe(true);
      expect(body.coalesced).toBe(false);
      expect(Date.parse(body.run) - before).toBeGreaterThanOrEqual(DEBOUNCE_MS);
      expect(Date.parse(body.run) - before).toBeLessThan(DEBOUNCE_MS + 5_000);
      // Nothing before the delay.
      expect(e.sandbox.requestLog().total).toBe(0);
      e.sandbox.advanceClock(DEBOUNCE_MS);
      await until('the hook run', 30_000, () => started().length === 1);
      await daemon.scheduler.idle();
      const o = await orders(e, org);
      expect(o.warehouse).toEqual(o.truth);
      const log = e.sandbox.requestLog();
      // One page of the list and the changed order's record: the minimum, for this organization and stream only.
      expect(log.byEndpoint[LIST]).toBe(1);
      expect(log.byEndpoint[DETAIL]).toBe(1);
      expect(log.total - log.token.refresh).toBe(2);
      expect(started()[0]!.type === 'started' && started()[0]!.job.trees).toEqual(['inventory.sales_orders']);
      // Done within the delay plus one run, in sandbox time.
      expect(e.sandbox.now() - before).toBeLessThan(DEBOUNCE_MS + 30_000);
    }, 90_000);

    it('1,000 hooks in a burst start one run; a flood, a wrong secret and a large body get 429, 401 and 413, no API request', async () => {
      const { e, config, daemon, http, org, started } = await setUp();
      e.sandbox.resetRequestLog();
      const url = `${http.url}/hooks/e2e/inventory/${org}?secret=${SECRET}`;
      const statuses: number[] = [];
      for (let i = 0; i < 1_000; i += 50) {
        const batch = await Promise.all(Array.from({ length: 50 }, () => fetch(url, { method: 'POST', body: '{}' })));
        statuses.push(...batch.map((r) => r.status));
        await Promise.all(batch.map((r) => r.arrayBuffer()));
      }
      expect(statuses.filter((s) => s !== 202)).toEqual([]);
      expect(daemon.liveStatus().hookRunsDue.map((d) => d.organizationId)).toEqual([org]);
      e.sandbox.advanceClock(DEBOUNCE_MS);
      await until('the hook run', 30_000, () => started().length >= 1);
      await daemon.scheduler.idle();
      expect(started()).toHaveLength(1);
      // No stream named: every incremental stream of the family, one page each (nothing changed).
      const run = started()[0]!;
      const trees = run.type === 'started' ? run.job.trees : [];
      expect(trees).toContain('inventory.sales_orders');
      expect(trees.every((t) => t.startsWith('inventory.'))).toBe(true);
      const log = e.sandbox.requestLog();
      expect(log.total - log.token.refresh).toBe(trees.length);
      const metrics = await (await fetch(`${http.url}/metrics`)).text();
      expect(metrics).toContain('svcsync_hooks_received_total{connection="e2e"} 1000');
      expect(metrics).toContain('svcsync_hooks_coalesced_total{connection="e2e"} 999');
      expect(metrics).toContain('svcsync_hook_runs_total{connection="e2e",result="started"} 1');
      expect(metrics).toMatch(/svcsync_build_info\{version="[^"]+",node="[^"]+"\} 1/);
      expect(metrics).toMatch(
        /svcsync_stream_last_success_timestamp_seconds\{connection="e2e",organization="[^"]+",stream="inventory\.sales_orders"\} \d+/,
      );

      e.sandbox.resetRequestLog();
      const post = (path: string, init: RequestInit = {}): Promise<Response> => fetch(`${http.url}${path}`, { method: 'POST', ...init });
      // Wrong or missing secret: 401, the same for a connection that does not exist.
      const wrong = await post(`/hooks/e2e/inventory/${org}?secret=not-the-secret`);
      const missing = await post(`/hooks/e2e/inventory/${org}`);
      const noConnection = await post(`/hooks/nope/inventory/${org}?secret=${SECRET}`);
      expect([wrong.status, missing.status, noConnection.status]).toEqual([401, 401, 401]);
      expect(await noConnection.text()).toBe(await wrong.text());
      // An unknown organization only after a valid secret: 404.
      expect((await post(`/hooks/e2e/inventory/999999999?secret=${SECRET}`)).status).toBe(404);
      expect((await post(`/hooks/e2e/inventory/${org}/not_a_stream?secret=${SECRET}`)).status).toBe(400);
      // Over 64 KiB: 413.
      expect((await post(`/hooks/e2e/inventory/${org}?secret=${SECRET}`, { body: 'x'.repeat(65 * 1024) })).status).toBe(413);
      // A flood from one address: 429 past the limit, before any secret is looked at.
      const strict = await serveDaemonHttp(
        daemon,
        { ...config, daemon: { ...config.daemon, hooks: { ...config.daemon.hooks, per_address_per_minute: 3 } } },
        e.warehouse,
        e.sandbox.clock,
        { port: 0 },
      );
      cleanups.push(() => strict.close());
      const flood: number[] = [];
      for (let i = 0; i < 6; i++)
        flood.push((await fetch(`${strict.url}/hooks/e2e/inventory/${org}?secret=wrong`, { method: 'POST' })).status);
      expect(flood).toEqual([401, 401, 401, 429, 429, 429]);
      expect(daemon.liveStatus().hookRunsDue).toEqual([]);
      e.sandbox.advanceClock(DEBOUNCE_MS * 2);
      await new Promise((r) => setTimeout(r, 300));
      await daemon.scheduler.idle();
      expect(started()).toHaveLength(1);
      expect(e.sandbox.requestLog().total).toBe(0);
      const rejected = await (await fetch(`${http.url}/metrics`)).text();
      // Three wrong secrets, then the flood's first three (both ports share the daemon's metrics).
      expect(rejected).toContain('svcsync_hooks_rejected_total{reason="unauthorized"} 6');
      expect(rejected).toContain('svcsync_hooks_rejected_total{reason="rate_limited"} 3');
      expect(rejected).toContain('svcsync_hooks_rejected_total{reason="too_large"} 1');
      expect(rejected).toContain('svcsync_hooks_rejected_total{reason="unknown_organization"} 1');
    }, 120_000);

    it('when the budget is low, hooks fall back to the schedule, and /status.json says so', async () => {
      const { e, daemon, http, org, started } = await setUp();
      // The day is all but spent (by other integrations, say): one request left of svcsync's budget.
      const p = e.warehouse.sql.param;
      await e.query(`UPDATE _svcsync_usage SET count = ${p(1)} WHERE organization_id = ${p(2)}`, [899, org]);
      const limiter = (await daemon.runner.limiterFor('e2e', org))!;
      expect(limiter.remainingToday()).toBe(1);
      e.sandbox.resetRequestLog();
      const res = await fetch(`${http.url}/hooks/e2e/inventory/${org}?secret=${SECRET}`, { method: 'POST' });
      expect(res.status).toBe(202);
      e.sandbox.advanceClock(DEBOUNCE_MS);
      await until('the fallback', 30_000, () => daemon.liveStatus().hookFallbacks.length === 1);
      expect(started()).toHaveLength(0);
      expect(e.sandbox.requestLog().total).toBe(0);
      const doc = (await (await fetch(`${http.url}/status.json`)).json()) as StatusDocument;
      expect(doc.daemon?.hookFallbacks[0]?.organizationId).toBe(org);
      expect(doc.daemon?.hookFallbacks[0]?.reason).toMatch(/fall back to the schedule/);
      expect(doc.organizations.map((o) => o.organizationId).sort()).toEqual(
        e.sandbox
          .organizations()
          .map((o) => o.organization_id)
          .sort(),
      );
      // While it lasts, further hooks are answered at once with the fallback.
      const again = (await (await fetch(`${http.url}/hooks/e2e/inventory/${org}?secret=${SECRET}`, { method: 'POST' })).json()) as {
        run: string;
      };
      expect(again.run).toBe('at the next scheduled fire');
      const metrics = await (await fetch(`${http.url}/metrics`)).text();
      expect(metrics).toContain('svcsync_hook_runs_total{connection="e2e",result="fallback"} 1');
    }, 90_000);
  });
}
