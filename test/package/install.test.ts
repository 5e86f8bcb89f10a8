import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const NPM_ENV = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

/**
 * `npm pack` and a global install into a clean prefix, as a user installs svcsync. The install
 * runs from npm's cache (`--offline`); a cache that lacks the metadata a global install reads
 * (a new machine) is filled from the registry once (`--prefer-offline`). better-sqlite3's build
 * script is not run: compiling it takes minutes, and the checkout's node_modules holds the same
 * version compiled for this Node, which is what the install would compile.
 */
describe('the npm package', () => {
  let dir: string;
  let tarball: string;
  let prefix: string;
  let files: string[];
  beforeAll(async () => {
    expect(existsSync(join(ROOT, 'dist/src/cli/main.js')), 'run `npm run build` first').toBe(true);
    dir = mkdtempSync(join(tmpdir(), 'svcsync-pack-'));
    // dist/ is what the tests run, already built: the prepare script need not build it again.
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: ROOT, env: NPM_ENV });
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    tarball = join(dir, info!.filename);
    files = info!.files.map((f) => f.path);
    prefix = join(dir, 'prefix');
    const install = (mode: string) =>
      run('npm', ['install', '--global', '--prefix', prefix, tarball, mode, '--ignore-scripts'], {
        cwd: dir,
        env: NPM_ENV,
        maxBuffer: 16 * 1024 * 1024,
      });
    try {
      await install('--offline');
    } catch (error) {
      if (!/ENOTCACHED/.test(String((error as { stderr?: string }).stderr ?? error))) throw error;
      await install('--prefer-offline');
    }
    const installed = join(prefix, 'lib/node_modules/svcsync/node_modules/better-sqlite3');
    const version = (p: string) => (JSON.parse(readFileSync(join(p, 'package.json'), 'utf8')) as { version: string }).version;
    const built = join(ROOT, 'node_modules/better-sqlite3');
    expect(version(installed)).toBe(version(built));
    mkdirSync(join(installed, 'build/Release'), { recursive: true });
    copyFileSync(join(built, 'build/Release/better_sqlite3.node'), join(installed, 'build/Release/better_sqlite3.node'));
  }, 600_000);
  // The prefix holds a whole install (tens of MB): gone with the test.
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('holds the compiled command, sandbox and migrations, and no sources or tests', () => {
    for (const f of [
      'bin/svcsync.js',
      'dist/src/cli/main.js',
      // Not compiled but copied by the build: the status page inlines them.
      'dist/src/scheduler/surface/status-page/status-page.js',
      'dist/src/scheduler/surface/status-page/status-page.css',
      'dist/sandbox/index.js',
      'dist/migrations/index.js',
      'config/svcsync.example.yaml',
      'README.md',
    ])
      expect(files).toContain(f);
    expect(files.filter((f) => /^(src|test|sandbox|migrations|bench|scripts)\/|\.map$|^dist\/bench\//.test(f))).toEqual([]);
  });

  it('installs a svcsync command that prints its version and runs the demo', async () => {
    const bin = join(prefix, 'bin', 'svcsync');
    expect(existsSync(bin)).toBe(true);
    const version = await run(bin, ['--version']);
    expect(version.stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
    const cwd = join(dir, 'demo');
    mkdirSync(cwd);
    const demo = await run(bin, ['demo'], { cwd, env: { ...process.env, SVCSYNC_LOG_LEVEL: 'error' }, maxBuffer: 16 * 1024 * 1024 });
    expect(demo.stdout).toMatch(/report_sales_order_lines/);
    expect(demo.stdout).toContain('or   svcsync schema');
    expect(existsSync(join(cwd, 'svcsync-demo.db'))).toBe(true);
  }, 120_000);
});
