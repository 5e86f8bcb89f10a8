import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';

const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));

/** Runs the built command in `cwd` with exactly this environment (plus PATH and HOME). */
function cli(args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env['PATH'] ?? '', HOME: join(cwd, 'home'), SVCSYNC_LOG_LEVEL: 'error', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('svcsync check: the configuration from the environment', () => {
  let sandbox: Sandbox;
  let root: string;
  const config = (path: string, warehouse: string): string => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(
      path,
      [
        `warehouse: sqlite:${warehouse}`,
        'connections:',
        '  - name: acme',
        `    accounts_url: ${sandbox.url}`,
        `    client_id: ${sandbox.credentials.client_id}`,
        `    client_secret: ${sandbox.credentials.client_secret}`,
        `    refresh_token: ${sandbox.credentials.refresh_token}`,
        '    plan: enterprise',
        '',
      ].join('\n'),
    );
    return path;
  };
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, scale: 2, organizations: 1, unlimited: true });
    root = mkdtempSync(join(tmpdir(), 'svcsync-cfg-cli-'));
  });
  afterAll(async () => sandbox?.stop());

  it('finds $XDG_CONFIG_HOME/svcsync/svcsync.yaml when the directory has none, and says so', async () => {
    const cwd = join(root, 'xdg-run');
    mkdirSync(cwd, { recursive: true });
    const xdg = join(root, 'xdg');
    const file = config(join(xdg, 'svcsync', 'svcsync.yaml'), join(root, 'xdg.db'));
    const r = await cli(['check', '--no-streams'], cwd, { XDG_CONFIG_HOME: xdg });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`configuration: ${file} (found by the lookup (${join(cwd, 'svcsync.yaml')}, then ${file}, then`);
    expect(r.stdout).not.toContain('SVCSYNC_WAREHOUSE');
    expect(existsSync(join(root, 'xdg.db'))).toBe(true);

    // ./svcsync.yaml comes first.
    const local = config(join(cwd, 'svcsync.yaml'), join(root, 'local.db'));
    const again = await cli(['check', '--no-streams'], cwd, { XDG_CONFIG_HOME: xdg });
    expect(again.stdout).toContain(`configuration: ${local} (found by the lookup`);
  });

  it('reads the file SVCSYNC_CONFIG names, and the warehouse SVCSYNC_WAREHOUSE names', async () => {
    const cwd = join(root, 'container');
    mkdirSync(cwd, { recursive: true });
    const file = config(join(root, 'mounted', 'svcsync.yaml'), join(root, 'file.db'));
    const r = await cli(['check', '--no-streams'], cwd, {
      SVCSYNC_CONFIG: file,
      SVCSYNC_WAREHOUSE: `sqlite:${join(root, 'env.db')}`,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`configuration: ${file} (named by SVCSYNC_CONFIG)`);
    expect(r.stdout).toContain("warehouse: from SVCSYNC_WAREHOUSE, in place of the file's warehouse URL");
    expect(existsSync(join(root, 'env.db'))).toBe(true);
    expect(existsSync(join(root, 'file.db'))).toBe(false);
  });

  it('with no file anywhere it names every place it looked (exit 2)', async () => {
    const cwd = join(root, 'empty');
    mkdirSync(cwd, { recursive: true });
    const r = await cli(['check'], cwd, { XDG_CONFIG_HOME: join(root, 'nothing') });
    // /etc/svcsync is the machine's; only when it holds no file is the answer certain.
    if (existsSync('/etc/svcsync/svcsync.yaml')) return;
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(join(cwd, 'svcsync.yaml'));
    expect(r.stderr).toContain(join(root, 'nothing', 'svcsync', 'svcsync.yaml'));
    expect(r.stderr).toContain('/etc/svcsync/svcsync.yaml');
    expect(r.stderr).toContain('SVCSYNC_CONFIG');
  });
});
