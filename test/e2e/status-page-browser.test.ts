import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fleetConfig, fleetShape, seedFleet } from '../../bench/status-fleet.js';
import { serveDaemonHttp } from '../../src/cli/commands/daemon.js';
import { serveSyncHttp, serveWorkerHttp } from '../../src/cli/http-port.js';
import { main } from '../../src/cli/main.js';
import type { Config } from '../../src/config/schema.js';
import { FakeClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { Daemon } from '../../src/scheduler/daemon.js';
import type { HealthReport } from '../../src/scheduler/surface/health.js';
import type { HttpServer } from '../../src/scheduler/surface/http-server.js';
import { JobRunner } from '../../src/scheduler/job-runner.js';
import type { StatusDocument } from '../../src/scheduler/surface/status-document.js';
import { Worker } from '../../src/scheduler/worker.js';
import { migratedWarehouse } from '../helpers/dialects.js';
import { startE2E, type E2E } from '../helpers/e2e.js';

/** Debian's chromium (`apt-get install chromium`; .ci/run installs it when missing), or CHROMIUM_PATH. */
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const OUTPUT = resolve('test-results');
const SECRET = 'status-page-webhook-secret-0123456789';
/** The heat map's colours (status-page/status-page.js), as canvas pixels. */
const RED = [0xc9, 0x2a, 0x2a];
const GREEN = [0x2f, 0x9e, 0x55];

const silent = (secrets: SecretRegistry) => createLogger({ level: 'silent', secrets });

/** `svcsync status` (or `--json`) run through the command line against the test's warehouse: stdout, once it exits with `exit`. */
async function statusCommand(config: Config, json: boolean, exit: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-status-'));
  const path = join(dir, 'svcsync.yaml');
  const connections = config.connections.map((c) =>
    [
      `  - name: ${c.name}`,
      `    client_id: x`,
      `    client_secret: y`,
      `    refresh_token: z`,
      `    families: [${c.families.join(', ')}]`,
    ].join('\n'),
  );
  writeFileSync(path, [`warehouse: "${config.warehouse.url}"`, 'connections:', ...connections, ''].join('\n'));
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    const code = await main(['node', 'svcsync', 'status', ...(json ? ['--json'] : []), '--config', path, '--log-level', 'silent']);
    expect(code).toBe(exit);
  } finally {
    spy.mockRestore();
  }
  return out;
}

/** A heat-map cell's colour: organization column `col`, stream row `row` (the canvas exposes its layout). */
async function cellColour(page: Page, col: number, row: number): Promise<number[]> {
  return page.evaluate(`(() => {
    const canvas = document.querySelector('#map'), d = canvas.dataset, dpr = window.devicePixelRatio || 1, per = Number(d.per);
    const x = Number(d.label) + (${col} % per) * Number(d.cw) + 0.5;
    const y = Math.floor(${col} / per) * Number(d.band) + ${row} * Number(d.cell) + 2;
    return [...canvas.getContext('2d').getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data].slice(0, 3);
  })()`);
}

/** The heat map's layout, as its script leaves it on the canvas. */
async function mapLayout(page: Page): Promise<Record<string, string>> {
  return page.locator('#map').evaluate((c) => ({ ...(c as unknown as { dataset: Record<string, string> }).dataset }));
}

const isOpen = async (d: ReturnType<Page['locator']>): Promise<boolean> => (await d.getAttribute('open')) !== null;

/** Where on the page an organization's column (row: a stream's, or -1 for its label) is. */
async function mapPoint(page: Page, col: number, row: number): Promise<{ x: number; y: number }> {
  const box = (await page.locator('#map').boundingBox())!;
  const d = await mapLayout(page);
  const per = Number(d['per']);
  const x = col < 0 ? 10 : Number(d['label']) + (col % per) * Number(d['cw']) + Number(d['cw']) / 2;
  const y = Math.floor(Math.max(0, col) / per) * Number(d['band']) + Math.max(0, row) * Number(d['cell']) + Number(d['cell']) / 2;
  return { x: box.x + x, y: box.y + y };
}

/** Clicks the heat map on an organization's column (row: a stream's, or -1 for its label). */
async function clickMap(page: Page, col: number, row: number): Promise<void> {
  const p = await mapPoint(page, col, row);
  await page.mouse.click(p.x, p.y);
}

const visible = (page: Page) => page.locator('details.org:visible');

/**
 * The filter box's placeholder against the room the box has: the text typed in instead, which
 * takes the same font, scrolls the box (scrollWidth > clientWidth) when it would be cut off. An
 * empty box's scrollWidth ignores its placeholder.
 */
async function placeholderRoom(page: Page): Promise<{ scrollWidth: number; clientWidth: number }> {
  return page.evaluate(`(() => {
    const box = document.querySelector('#filter'), kept = box.value;
    box.value = box.placeholder;
    const out = { scrollWidth: box.scrollWidth, clientWidth: box.clientWidth };
    box.value = kept;
    return out;
  })()`);
}

/** Every count the page shows, as its value and its text. */
async function counts(page: Page): Promise<Array<{ value: number; text: string }>> {
  return page.evaluate(`[...document.querySelectorAll('data[value]')].map((d) => ({ value: Number(d.value), text: d.textContent }))`);
}

describe('the status page in a real browser (chromium via playwright-core)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  describe('a daemon with a connection that cannot log in, and an organization whose requests fail', () => {
    let e: E2E;
    let daemon: Daemon;
    let http: HttpServer;
    let config: Config;
    let failing: string;
    let healthy: string[];

    beforeAll(async () => {
      e = await startE2E(
        'sqlite',
        { scale: 12, organizations: 3, timeScale: 1 },
        { connection: { webhook_secret: SECRET, families: ['inventory'], streams: ['inventory.sales_orders'] }, sync: { max_retries: 0 } },
      );
      const orgs = e.sandbox.organizations().map((o) => o.organization_id);
      failing = orgs[1]!;
      healthy = orgs.filter((o) => o !== failing);
      const good = e.config.connections[0]!;
      config = {
        ...e.config,
        // A second connection whose client secret is wrong: it can never log in.
        connections: [good, { ...good, name: 'broken', client_secret: 'not-the-client-secret', webhook_secret: undefined }],
        daemon: { ...e.config.daemon, schedules: { incremental: '0 3 * * *', settings: '0 4 * * *', reconcile: 'off', backfill: 'off' } },
        history: ['inventory.sales_orders'],
      };
      // The network fails for one organization only: its requests get a 500 (no retries configured).
      const fetchSeam: typeof fetch = (input, init) => {
        const url = input instanceof Request ? input.url : String(input);
        if (url.includes(`organization_id=${failing}`))
          return Promise.resolve(new Response('{"code":1,"message":"internal error"}', { status: 500 }));
        return fetch(input, init);
      };
      daemon = new Daemon({
        config,
        warehouse: e.warehouse,
        clock: e.sandbox.clock,
        logger: silent(e.secrets),
        secrets: e.secrets,
        fetch: fetchSeam,
      });
      await daemon.start();
      await daemon.scheduler.idle();
      for (const job of daemon.runner.jobs().filter((j) => j.jobClass === 'incremental')) await daemon.runNow(job);
      http = await serveDaemonHttp(daemon, config, e.warehouse, e.sandbox.clock, { port: 0 });
    }, 120_000);

    afterAll(async () => {
      await http?.close();
      await daemon?.stop(1_000);
      await e?.close();
    });

    it('lists the connection that cannot log in first, with its error and hint; /healthz/fleet names it, /healthz is 200', async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const external: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(http.url)) external.push(r.url());
      });
      expect((await page.goto(`${http.url}/`))?.status()).toBe(200);
      await expect(page.title()).resolves.toBe('svcsync status');
      const connections = page.locator('#connections li');
      await expect(connections.count()).resolves.toBe(2);
      await expect(connections.first().getAttribute('data-connection')).resolves.toBe('broken');
      await expect(connections.first().getAttribute('data-state')).resolves.toBe('failing');
      const broken = await connections.first().innerText();
      expect(broken).toContain('cannot authorize');
      expect(broken).toMatch(/invalid_client|client secret|client_secret/i);
      expect(broken).toMatch(/→ \S/);
      expect(broken).toContain('webhooks off');
      expect(await connections.nth(1).innerText()).toMatch(/ok\s+e2e — authorized .* ago/);
      expect(await page.locator('#states').innerText()).toContain('1 of 2 connections cannot authorize');
      expect(external).toEqual([]);

      const health = await fetch(`${http.url}/healthz/fleet`);
      expect(health.status).toBe(503);
      const report = (await health.json()) as HealthReport;
      expect(report.status).toBe('failing');
      expect(report.failingConnections.map((c) => c.connection)).toEqual(['broken']);
      expect(report.failingConnections[0]!.hint).toBeTruthy();
      // The process itself can work: the fleet's fault is no reason to take it out of service.
      expect((await fetch(`${http.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${http.url}/livez`)).status).toBe(200);

      const doc = (await (await fetch(`${http.url}/status.json`)).json()) as StatusDocument;
      expect(doc.connections.map((c) => [c.connection, c.state, c.authorization?.result])).toEqual([
        ['broken', 'failing', 'refused'],
        ['e2e', 'ok', 'ok'],
      ]);
      expect(doc.organizations.map((o) => o.organizationId).sort()).toEqual([failing, ...healthy].sort());

      // svcsync status, another process's view: read from the warehouse. It exits 3: a connection cannot log in.
      const text = await statusCommand(config, false, 3);
      expect(text.split('\n')[0]).toMatch(/^connection broken: FAILING — cannot authorize/);
      expect(text).toMatch(/\n {2}→ \S/);
      const json = JSON.parse(await statusCommand(config, true, 3)) as StatusDocument;
      expect(json.connections[0]).toMatchObject({ connection: 'broken', state: 'failing', authorization: { result: 'refused' } });
      await page.close();
    }, 60_000);

    it('summarizes the fleet, lists organizations collapsed with the failing first, and filters from the heat map', async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${http.url}/`);
      const orgs = page.locator('details.org');
      await expect(orgs.count()).resolves.toBe(3);
      for (let i = 0; i < 3; i++) await expect(isOpen(orgs.nth(i))).resolves.toBe(false);
      await expect(orgs.first().getAttribute('data-state')).resolves.toBe('failing');
      await expect(orgs.first().getAttribute('data-id')).resolves.toBe(failing);
      for (const id of healthy) await expect(page.locator(`details.org[data-id="${id}"]`).getAttribute('data-state')).resolves.toBe('ok');
      // One budget bar per organization, today's requests against the budget, and where the day is heading.
      const bars = page.locator('.bar[role="meter"]');
      await expect(bars.count()).resolves.toBe(3);
      expect(Number(await bars.first().getAttribute('aria-valuemax'))).toBeGreaterThan(0);
      expect(await orgs.nth(1).locator('summary').innerText()).toMatch(/~\d+ by day's end/);
      // Times read "N ago", with the local time on hover.
      const synced = orgs.nth(1).locator('summary time').first();
      expect(await synced.innerText()).toMatch(/ ago$/);
      // Hovered, it shows the browser's local rendering of the instant.
      await synced.hover();
      const title = (await synced.getAttribute('title'))!;
      const datetime = (await synced.getAttribute('datetime'))!;
      expect(title).not.toBe(datetime);
      expect(title).toBe(await page.evaluate(`new Date(${JSON.stringify(datetime)}).toLocaleString()`));

      // The heat map: the failing organization's column is red, a healthy one's green.
      expect(await cellColour(page, 0, 0)).toEqual(RED);
      expect(await cellColour(page, 1, 0)).toEqual(GREEN);
      // Hovering a cell names the organization, the stream and its state.
      const cell = await mapPoint(page, 0, 0);
      await page.mouse.move(cell.x, cell.y);
      await expect(page.locator('#tip').isVisible()).resolves.toBe(true);
      const name = await orgs.first().locator('summary b').nth(1).innerText();
      await expect(page.locator('#tip').innerText()).resolves.toBe(`${name} — inventory.sales_orders: failed`);
      // Click a healthy organization's column: only it shows, opened, with its streams.
      await clickMap(page, 2, 0);
      await expect(visible(page).count()).resolves.toBe(1);
      const shown = visible(page).first();
      await expect(isOpen(shown)).resolves.toBe(true);
      await shown.locator('table.streams tr[data-stream="inventory.sales_orders"]').waitFor();
      expect(await shown.locator('tr[data-stream="inventory.sales_orders"]').innerText()).toMatch(/ok/);
      expect(await shown.locator('.detail').innerText()).toContain('webhooks on');
      // Click the stream's label: the organizations where that stream is not fresh.
      await clickMap(page, -1, 0);
      await expect(page.locator('#filter').inputValue()).resolves.toBe('stream:inventory.sales_orders');
      await expect(visible(page).count()).resolves.toBe(1);
      await expect(visible(page).first().getAttribute('data-id')).resolves.toBe(failing);
      // The state buttons filter too, and the address keeps the filter.
      await page.fill('#filter', '');
      await page.locator('#states .chip[data-state="ok"]').click();
      await expect(visible(page).count()).resolves.toBe(2);
      expect(page.url()).toContain('state=ok');
      await page.locator('#states .chip[data-state=""]').click();
      await page.fill('#filter', healthy[0]!);
      await expect(visible(page).count()).resolves.toBe(1);
      await page.fill('#filter', '');
      // The failing organization, opened: its error and the hint.
      await orgs.first().locator('summary').click();
      const err = orgs.first().locator('.detail .err');
      await err.waitFor();
      expect(await err.innerText()).toMatch(/HTTP 500[^]*→/);
      // A healthy organization, opened: its sales orders keep history, one version per order so far.
      const opened = page.locator(`details.org[data-c="${config.connections[0]!.name}"][data-id="${healthy[0]!}"]`);
      // The heat map's click above may have opened it already.
      if (!(await isOpen(opened))) await opened.locator('summary').click();
      const orders = opened.locator('table.streams tr', { hasText: 'inventory.sales_orders' });
      await orders.waitFor();
      const versions = e.sandbox.count(healthy[0]!, 'inventory', 'sales_orders');
      expect(versions).toBeGreaterThan(0);
      expect(await orders.innerText()).toContain(`on · ${versions} versions`);
      mkdirSync(OUTPUT, { recursive: true });
      const shot = join(OUTPUT, 'status-page.png');
      await page.screenshot({ path: shot, fullPage: true });
      console.info(`[status page] screenshot: ${shot}`);
      await page.close();
    }, 60_000);
  });

  it('a revoked token: the connection fails, shown once, and every one of its organizations with it', async () => {
    const e = await startE2E(
      'sqlite',
      { scale: 4, organizations: 3, timeScale: 1 },
      { connection: { families: ['inventory'], streams: ['inventory.sales_orders'] } },
    );
    let daemon: Daemon | undefined;
    let http: HttpServer | undefined;
    try {
      expect((await e.sync()).exitCode).toBe(0);
      const refresh = e.config.connections[0]!.refresh_token;
      expect((await fetch(`${e.sandbox.url}/oauth/v2/token/revoke?token=${encodeURIComponent(refresh)}`, { method: 'POST' })).status).toBe(
        200,
      );
      const config: Config = {
        ...e.config,
        daemon: { ...e.config.daemon, schedules: { incremental: '0 3 * * *', settings: '0 4 * * *', reconcile: 'off' } },
      };
      daemon = new Daemon({ config, warehouse: e.warehouse, clock: e.sandbox.clock, logger: silent(e.secrets), secrets: e.secrets });
      await daemon.start();
      // One organization's run meets the refused token.
      await daemon.runNow(daemon.runner.jobs().find((j) => j.jobClass === 'incremental')!);
      http = await serveDaemonHttp(daemon, config, e.warehouse, e.sandbox.clock, { port: 0 });
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${http.url}/`);
      const conn = page.locator('#connections li[data-connection="e2e"]');
      await expect(conn.getAttribute('data-state')).resolves.toBe('failing');
      const error = (await conn.locator('.err').innerText()).trim();
      expect(error.length).toBeGreaterThan(10);
      // Not "1 failing · 2 ok": nothing of the connection can sync.
      expect(await page.locator('#states').innerText()).toMatch(/^3 organizations: 3 failing all/);
      for (const d of await page.locator('details.org').all()) {
        await expect(d.getAttribute('data-state')).resolves.toBe('failing');
        expect(await d.locator('summary').innerText()).toContain('connection e2e cannot authorize');
      }
      // The refusal is told once, on the connection.
      const body = await page.locator('body').innerText();
      expect(body.split(error).length - 1).toBe(1);
      expect((await fetch(`${http.url}/healthz/fleet`)).status).toBe(503);
      expect((await fetch(`${http.url}/healthz`)).status).toBe(200);
      await page.close();
    } finally {
      await http?.close();
      await daemon?.stop(1_000);
      await e.close();
    }
  }, 90_000);

  it("a worker's page says webhooks are on while it accepts hooks (postgres, pg-boss)", async () => {
    const e = await startE2E(
      'postgres',
      { scale: 4, organizations: 2, timeScale: 1 },
      { connection: { webhook_secret: SECRET, families: ['inventory'], streams: ['inventory.sales_orders'] } },
    );
    const schema = `t_${process.env['SVCSYNC_TEST_RUN'] ?? 'x'}_pgboss_${randomBytes(4).toString('hex')}`;
    const config: Config = {
      ...e.config,
      daemon: { ...e.config.daemon, schedules: { incremental: '0 3 * * *', settings: '0 4 * * *', reconcile: 'off' } },
      worker: { schema, concurrency: 1, slice_minutes: 10 },
    };
    let warehouse: Warehouse | undefined;
    let worker: Worker | undefined;
    let http: HttpServer | undefined;
    try {
      expect((await e.sync()).exitCode).toBe(0);
      warehouse = await openWarehouse(config.warehouse.url, { poolSize: 4 });
      worker = new Worker({ config, warehouse, clock: e.sandbox.clock, logger: silent(e.secrets), secrets: e.secrets, schedule: false });
      await worker.start();
      http = await serveWorkerHttp(worker, config, warehouse, e.sandbox.clock, { port: 0 });
      // Subscribed to the queue, with its warehouse: ready.
      const ready = await fetch(`${http.url}/healthz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ok', jobs: { state: 'running' } });
      const org = e.sandbox.organizations()[0]!.organization_id;
      const hook = await fetch(`${http.url}/hooks/e2e/inventory/${org}?secret=${SECRET}`, { method: 'POST' });
      expect(hook.status).toBe(202);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${http.url}/`);
      expect(await page.locator('#connections li[data-connection="e2e"]').innerText()).toContain('webhooks on');
      const d = page.locator(`details.org[data-id="${org}"]`);
      await d.locator('summary').click();
      await d.locator('table.streams').waitFor();
      const detail = await d.locator('.detail').innerText();
      expect(detail).toContain('webhooks on');
      expect(detail).not.toContain('webhooks off');
      await page.close();
    } finally {
      await http?.close();
      await worker?.stop(1_000);
      await warehouse?.close();
      await e.close();
    }
  }, 120_000);

  it('1,000 organizations: a summary first, one collapsed line each, the heat map in bands, filtering by click', async () => {
    const tw = await migratedWarehouse('sqlite');
    const warehouse = await tw.open();
    const config = fleetConfig(tw.url);
    const now = Date.parse('2026-11-23T12:00:00Z');
    const clock = new FakeClock(now);
    const secrets = new SecretRegistry();
    let http: HttpServer | undefined;
    try {
      const streams = await seedFleet(warehouse, config, 1_000, now);
      const runner = new JobRunner({ config, warehouse, clock, logger: silent(secrets), secrets });
      http = await serveSyncHttp(
        {
          metrics: runner.metrics,
          jobs: () => ({ state: 'running', tickSince: null }),
          hookSecret: () => undefined,
          receiveHook: () => Promise.resolve({ kind: 'unknown', message: 'no hooks' }),
        },
        config,
        warehouse,
        clock,
        { port: 0 },
      );
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
      const res = await page.goto(`${http.url}/`);
      expect(res?.status()).toBe(200);
      const orgs = page.locator('details.org');
      await expect(orgs.count()).resolves.toBe(1_000);
      // Counts are grouped in the reader's locale, never "1000"; the filter box shows its whole placeholder.
      expect(await page.locator('#states').innerText()).toMatch(/^1,000 organizations: /);
      const large = (await counts(page)).filter((c) => c.value >= 1_000);
      expect(large.length).toBeGreaterThan(1);
      for (const c of large) expect(c.text).toBe(c.value.toLocaleString('en-US'));
      const room = await placeholderRoom(page);
      expect(room.scrollWidth).toBeLessThanOrEqual(room.clientWidth);
      await expect(page.locator('details.org[open]').count()).resolves.toBe(0);
      // Counts by state, as the seeded shapes make them; failing first, then stale, waiting, ok.
      const shapes = Array.from({ length: 1_000 }, (_, i) => fleetShape(i));
      const expected = {
        failing: shapes.filter((s) => s === 'failing').length,
        stale: shapes.filter((s) => s === 'stale').length,
        waiting: shapes.filter((s) => s === 'never').length,
      };
      for (const [state, n] of Object.entries(expected))
        await expect(page.locator(`#states .chip[data-state="${state}"]`).innerText()).resolves.toBe(`${n} ${state}`);
      const order = await orgs.evaluateAll((ds) => ds.map((d) => (d as unknown as { dataset: Record<string, string> }).dataset['state']));
      const rank = { failing: 0, stale: 1, waiting: 2, ok: 3 } as Record<string, number>;
      expect(order.map((s) => rank[s!])).toEqual([...order.map((s) => rank[s!])].sort((a, b) => a! - b!));
      // The heat map holds every organization × stream, in bands no wider than the page.
      const map = await mapLayout(page);
      expect(map['streams']!.split(',')).toEqual(streams);
      expect(Number(map['per']) * Number(map['bands'])).toBeGreaterThanOrEqual(1_000);
      expect(Number(map['bands'])).toBeGreaterThan(1);
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(1280);
      expect(await cellColour(page, 0, streams.length - 1)).not.toEqual([255, 255, 255]);
      mkdirSync(OUTPUT, { recursive: true });
      await page.screenshot({ path: join(OUTPUT, 'status-page-fleet.png') });
      // Click organization 600's column: only it shows, opened, with every stream.
      const id = await orgs.nth(600).getAttribute('data-id');
      await clickMap(page, 600, 0);
      await expect(visible(page).count()).resolves.toBe(1);
      await expect(visible(page).first().getAttribute('data-id')).resolves.toBe(id);
      await visible(page).first().locator('table.streams').waitFor();
      await expect(visible(page).first().locator('table.streams tbody tr').count()).resolves.toBe(streams.length);
      // The page stays small: the streams load when an organization is opened.
      const raw = await (await fetch(`${http.url}/`, { headers: { 'accept-encoding': 'identity' } })).text();
      expect(raw.length).toBeLessThan(1_000_000);
      await page.close();

      // A German reader on a phone: the same counts grouped the German way, those the server wrote
      // and those the script writes, and the placeholder still whole.
      const de = await browser.newPage({ viewport: { width: 390, height: 844 }, locale: 'de-DE' });
      await de.goto(`${http.url}/`);
      expect(await de.locator('#states').innerText()).toMatch(/^1\.000 organizations: /);
      for (const c of (await counts(de)).filter((x) => x.value >= 1_000)) expect(c.text).toBe(c.value.toLocaleString('de-DE'));
      const narrow = await placeholderRoom(de);
      expect(narrow.scrollWidth).toBeLessThanOrEqual(narrow.clientWidth);
      await de.fill('#filter', 'Müller');
      expect(await de.locator('#shown').innerText()).toBe('100 of 1.000 shown');
      await de.fill('#filter', '');
      mkdirSync(OUTPUT, { recursive: true });
      await de.screenshot({ path: join(OUTPUT, 'status-page-phone.png') });
      await de.close();
    } finally {
      await http?.close();
      await warehouse.close();
    }
  }, 120_000);
});
