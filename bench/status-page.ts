/**
 * `npm run bench -- --only status-page` (or `node dist/bench/status-page.js`): the status page
 * at a fleet's size. Seeds a SQLite warehouse with N organizations' state (bench/status-fleet.ts),
 * serves the page as the daemon does, and measures in Chromium (Debian's chromium through
 * playwright-core, or CHROMIUM_PATH):
 *
 *   - the page's size as sent (gzip) and unpacked, and /status.json's;
 *   - the server's time to read the status document and render the page;
 *   - in the browser: time to the first byte, DOMContentLoaded, the heat map drawn, load;
 *   - opening one organization: its streams fetched and shown.
 *
 * Each figure is the median of --repeat runs (default 5). Options: --orgs 1000,100 (sizes),
 * --repeat N, --json FILE.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { serveSyncHttp } from '../src/cli/http-port.js';
import { FakeClock } from '../src/core/clock.js';
import { createLogger } from '../src/core/logger.js';
import { SecretRegistry } from '../src/core/secrets.js';
import { openWarehouse } from '../src/loaders/warehouse.js';
import { JobRunner } from '../src/scheduler/job-runner.js';
import { collectStatusDocument } from '../src/scheduler/surface/status-document.js';
import { renderStatusPage } from '../src/scheduler/surface/status-page.js';
import { fleetConfig, seedFleet } from './status-fleet.js';

interface Figures {
  organizations: number;
  streams: number;
  htmlBytes: number;
  htmlGzipBytes: number;
  jsonBytes: number;
  jsonGzipBytes: number;
  collectMs: number;
  renderMs: number;
  firstByteMs: number;
  domContentLoadedMs: number;
  mapDrawnMs: number;
  /** The page's script, from its first line to the page being ready (filter applied, heat map drawn). */
  scriptMs: number;
  loadMs: number;
  openOrganizationMs: number;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

async function measure(organizations: number, repeat: number): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-bench-status-'));
  const url = `sqlite:${join(dir, 'warehouse.db')}`;
  const warehouse = await openWarehouse(url);
  const config = fleetConfig(url);
  const now = Date.parse('2026-11-23T12:00:00Z');
  const clock = new FakeClock(now);
  const secrets = new SecretRegistry();
  const logger = createLogger({ level: 'silent', secrets });
  const browser = await chromium.launch({ executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  try {
    const streams = await seedFleet(warehouse, config, organizations, now);
    const runner = new JobRunner({ config, warehouse, clock, logger, secrets });
    const http = await serveSyncHttp(
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
    const runs: Array<Omit<Figures, 'organizations' | 'streams'>> = [];
    try {
      for (let r = 0; r < repeat; r++) {
        let t = performance.now();
        const doc = await collectStatusDocument(config, warehouse, now);
        const collectMs = performance.now() - t;
        t = performance.now();
        const html = renderStatusPage(doc, '', now);
        const renderMs = performance.now() - t;
        const json = `${JSON.stringify(doc, null, 2)}\n`;
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        await page.goto(`${http.url}/`, { waitUntil: 'load' });
        const timing = await page.evaluate(`(() => {
          const n = performance.getEntriesByType('navigation')[0];
          const at = (name) => { const m = performance.getEntriesByName(name)[0]; return m ? m.startTime : -1; };
          return { ttfb: n.responseStart, dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd, drawn: at('svcsync-map-drawn'),
            script: at('svcsync-ready') - at('svcsync-script') };
        })()`);
        const { ttfb, dcl, load, drawn, script } = timing as { ttfb: number; dcl: number; load: number; drawn: number; script: number };
        const d = page.locator('details.org').nth(Math.floor(organizations / 2));
        t = performance.now();
        await d.locator('summary').click();
        await d.locator('table.streams').waitFor();
        const openOrganizationMs = performance.now() - t;
        await page.close();
        runs.push({
          htmlBytes: Buffer.byteLength(html),
          htmlGzipBytes: gzipSync(html).length,
          jsonBytes: Buffer.byteLength(json),
          jsonGzipBytes: gzipSync(json).length,
          collectMs,
          renderMs,
          firstByteMs: ttfb,
          domContentLoadedMs: dcl,
          mapDrawnMs: drawn,
          scriptMs: script,
          loadMs: load,
          openOrganizationMs,
        });
      }
    } finally {
      await http.close();
    }
    const pick = (k: keyof (typeof runs)[number]): number => Math.round(median(runs.map((x) => x[k])));
    return {
      organizations,
      streams: streams.length,
      htmlBytes: pick('htmlBytes'),
      htmlGzipBytes: pick('htmlGzipBytes'),
      jsonBytes: pick('jsonBytes'),
      jsonGzipBytes: pick('jsonGzipBytes'),
      collectMs: pick('collectMs'),
      renderMs: pick('renderMs'),
      firstByteMs: pick('firstByteMs'),
      domContentLoadedMs: pick('domContentLoadedMs'),
      mapDrawnMs: pick('mapDrawnMs'),
      scriptMs: pick('scriptMs'),
      loadMs: pick('loadMs'),
      openOrganizationMs: pick('openOrganizationMs'),
    };
  } finally {
    await browser.close();
    await warehouse.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const kb = (n: number): string => `${(n / 1024).toFixed(0)} KB`;

async function main(): Promise<void> {
  const sizes = arg('orgs', '1000,100')
    .split(',')
    .map((s) => Number(s));
  const repeat = Number(arg('repeat', '5'));
  const results: Figures[] = [];
  for (const n of sizes) {
    const f = await measure(n, repeat);
    results.push(f);
    console.log(
      `${f.organizations} organizations × ${f.streams} streams: page ${kb(f.htmlGzipBytes)} gzip (${kb(f.htmlBytes)} unpacked), ` +
        `status.json ${kb(f.jsonGzipBytes)} gzip (${kb(f.jsonBytes)}); server: document ${f.collectMs} ms, render ${f.renderMs} ms; ` +
        `Chromium: first byte ${f.firstByteMs} ms, DOMContentLoaded ${f.domContentLoadedMs} ms, ` +
        `heat map drawn ${f.mapDrawnMs} ms (script ${f.scriptMs} ms), load ${f.loadMs} ms; ` +
        `one organization opened in ${f.openOrganizationMs} ms`,
    );
  }
  console.log(`(median of ${repeat}; ${cpus().length} cores, ${cpus()[0]?.model ?? 'unknown CPU'}, load ${loadavg()[0]!.toFixed(1)})`);
  const json = arg('json', '');
  if (json) writeFileSync(json, JSON.stringify(results, null, 2));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
