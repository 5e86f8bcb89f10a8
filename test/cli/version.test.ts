import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LimiterRegistry } from '../../src/api/limiter.js';
import { MemoryUsageStore } from '../../src/api/usage-store.js';
import { FakeClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { svcsyncVersion } from '../../src/core/version.js';
import { openWarehouse } from '../../src/loaders/warehouse.js';
import { DaemonMetrics } from '../../src/scheduler/surface/metrics.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';

// These tests spawn the compiled command (dist/): `npm run build` first.
const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SVCSYNC_LOG_LEVEL: 'warn', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe("svcsync's version", () => {
  it('is read from package.json', () => {
    expect(svcsyncVersion()).toBe(PACKAGE_VERSION);
  });

  it('--version and -V print it and exit 0; no configuration is needed', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await cli([flag, '--config', '/nonexistent/svcsync.yaml']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(`${PACKAGE_VERSION}\n`);
      expect(r.stderr).toBe('');
    }
  });

  it('is svcsync_build_info{version} on /metrics', async () => {
    const warehouse = await openWarehouse(`sqlite:${join(mkdtempSync(join(tmpdir(), 'svcsync-version-')), 'w.db')}`);
    try {
      const clock = new FakeClock(0);
      const logger = createLogger({ level: 'silent', secrets: new SecretRegistry() });
      const metrics = new DaemonMetrics({
        clock,
        limiters: new LimiterRegistry({ clock, store: new MemoryUsageStore(), logger }),
        warehouse,
        quota: { organizations: () => [], limiter: () => Promise.resolve(null), jobs: () => [] },
      });
      const text = await metrics.registry.getSingleMetricAsString('svcsync_build_info');
      expect(text).toMatch(new RegExp(`svcsync_build_info\\{version="${PACKAGE_VERSION.replace(/\./g, '\\.')}",node="[^"]+"\\} 1`));
    } finally {
      await warehouse.close();
    }
  });
});

describe('every --json output names the version', () => {
  let sandbox: Sandbox;
  let config: string;
  const env = (): Record<string, string> => ({ SVC_REFRESH_TOKEN: sandbox.credentials.refresh_token });
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, scale: 2, organizations: 1, unlimited: true });
    const dir = mkdtempSync(join(tmpdir(), 'svcsync-version-'));
    config = join(dir, 'svcsync.yaml');
    writeFileSync(
      config,
      [
        `warehouse: sqlite:${join(dir, 'w.db')}`,
        'connections:',
        '  - name: acme',
        `    accounts_url: ${sandbox.url}`,
        `    client_id: ${sandbox.credentials.client_id}`,
        `    client_secret: ${sandbox.credentials.client_secret}`,
        '    refresh_token: ${SVC_REFRESH_TOKEN}',
        '    plan: enterprise',
        '    limits: { per_minute: 100000, per_day: 1000000 }',
        '    families: [inventory]',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => sandbox?.stop());

  it('sync, verify, status, schema, schema --drift and plan', async () => {
    const commands = [
      ['sync', '--json'],
      ['verify', '--json', '--stream', 'inventory.contacts'],
      ['status', '--json'],
      ['schema', '--json'],
      ['schema', '--drift', '--json'],
      ['plan', '--json'],
      ['plan', '--fit', '--json'],
    ];
    for (const args of commands) {
      const r = await cli([...args, '--config', config], env());
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      const doc = JSON.parse(r.stdout) as { version?: unknown };
      expect(doc.version, args.join(' ')).toBe(PACKAGE_VERSION);
    }
  }, 60_000);
});
