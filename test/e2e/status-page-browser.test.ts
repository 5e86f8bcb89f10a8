import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveDaemonHttp } from '../../src/cli/commands/daemon.js';
import type { Config } from '../../src/config/schema.js';
import { createLogger } from '../../src/core/logger.js';
import { Daemon } from '../../src/scheduler/daemon.js';
import type { HttpServer } from '../../src/scheduler/http-server.js';
import { startE2E, type E2E } from '../helpers/e2e.js';

/** Debian's chromium (`apt-get install chromium`; .ci/run installs it when missing), or CHROMIUM_PATH. */
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const OUTPUT = resolve('test-results');
const SECRET = 'status-page-webhook-secret-0123456789';

describe('the status page in a real browser (chromium via playwright-core)', () => {
  let e: E2E;
  let daemon: Daemon;
  let http: HttpServer;
  let browser: Browser;
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
    const config: Config = {
      ...e.config,
      daemon: { ...e.config.daemon, schedules: { incremental: '0 3 * * *', settings: '0 4 * * *', reconcile: 'off', backfill: 'off' } },
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
      logger: createLogger({ level: 'silent', secrets: e.secrets }),
      secrets: e.secrets,
      fetch: fetchSeam,
    });
    await daemon.start();
    await daemon.scheduler.idle();
    for (const job of daemon.runner.jobs().filter((j) => j.jobClass === 'incremental')) await daemon.runNow(job);
    http = await serveDaemonHttp(daemon, config, e.warehouse, e.sandbox.clock, { port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await http?.close();
    await daemon?.stop(1_000);
    await e?.close();
  });

  it('shows every organization, the failing one first with its hint, the budget bars, and filters', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const external: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(http.url)) external.push(r.url());
    });
    const res = await page.goto(`${http.url}/`);
    expect(res?.status()).toBe(200);
    await expect(page.title()).resolves.toBe('svcsync status');
    const groups = page.locator('tbody[data-org]');
    await expect(groups.count()).resolves.toBe(3);
    // The failing organization sorts to the top, with the error and its hint.
    const first = groups.first();
    await expect(first.getAttribute('data-health')).resolves.toBe('failing');
    const firstText = await first.innerText();
    expect(firstText).toContain(failing);
    expect(firstText).toMatch(/→/);
    for (const id of healthy) expect(await page.locator(`tbody[data-org*="${id}"]`).getAttribute('data-health')).toBe('ok');
    // One budget bar per organization, with today's requests against the budget.
    const bars = page.locator('.bar[role="meter"]');
    await expect(bars.count()).resolves.toBe(3);
    const max = await bars.first().getAttribute('aria-valuemax');
    expect(Number(max)).toBeGreaterThan(0);
    expect(firstText).toContain('webhooks on');
    // The filter box keeps only the organizations that match.
    await page.fill('#filter', healthy[0]!);
    await expect(page.locator('tbody[data-org]:visible').count()).resolves.toBe(1);
    expect(await page.locator('tbody[data-org]:visible').innerText()).toContain(healthy[0]!);
    await page.fill('#filter', '');
    await expect(page.locator('tbody[data-org]:visible').count()).resolves.toBe(3);
    mkdirSync(OUTPUT, { recursive: true });
    const shot = join(OUTPUT, 'status-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.info(`[status page] screenshot: ${shot}`);
    // Nothing is fetched from anywhere else: the page works offline.
    expect(external).toEqual([]);
    // /status.json is the same data.
    const doc = (await (await fetch(`${http.url}/status.json`)).json()) as { organizations: Array<{ organizationId: string }> };
    expect(doc.organizations.map((o) => o.organizationId).sort()).toEqual([failing, ...healthy].sort());
    await page.close();
  }, 60_000);
});
