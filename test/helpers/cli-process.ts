import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliRun {
  child: ChildProcess;
  done: Promise<CliResult>;
}

/**
 * Starts `svcsync ARGS` as its own process (the compiled CLI: `npm run build` first). With
 * `unprivileged`, a process run as root is started in a user namespace of its own
 * (`unshare -U`), where it keeps its files but loses root's right to write any file: the only
 * way to show a root test run a read-only file or folder as a user meets it.
 */
export function startCli(args: readonly string[], options: { env?: NodeJS.ProcessEnv; unprivileged?: boolean } = {}): CliRun {
  const env = { ...process.env, SVCSYNC_LOG_LEVEL: 'info', ...options.env };
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const [command, argv] =
    options.unprivileged && asRoot ? ['unshare', ['-U', process.execPath, BIN, ...args]] : [process.execPath, [BIN, ...args]];
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

export function runCli(args: readonly string[], options: { env?: NodeJS.ProcessEnv; unprivileged?: boolean } = {}): Promise<CliResult> {
  return startCli(args, options).done;
}

export interface KilledRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real command line. With killAfterPages, SIGKILLs it as soon as its log shows that
 * many committed pages: the kill lands at a point of the work, whatever the machine's speed.
 */
export function runCliKilledAfterPages(args: string[], killAfterPages?: number): Promise<KilledRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SVCSYNC_LOG_LEVEL: killAfterPages === undefined ? 'warn' : 'debug' },
    });
    let stdout = '';
    let stderr = '';
    let pages = 0;
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => {
      const text = String(d);
      stderr += text;
      pages += text.split('"msg":"page committed"').length - 1;
      if (killAfterPages !== undefined && pages >= killAfterPages) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr: stderr.slice(-2000) }));
  });
}

/** A stack trace's frame line, which no classified error may print. */
export const STACK_FRAME = /^\s+at .+\(.+:\d+:\d+\)$|^\s+at .+:\d+:\d+$/m;

/**
 * The configuration of a CLI run that is killed and run again against the sandbox: the whole
 * catalog, 25 records a page, the client's limits lifted (the sandbox is unlimited and the CLI
 * runs on real time) and a one-second window, so the wait after each takeover from a killed run
 * (one window) stays short. The client secret reaches the process through `secretEnv`, as a
 * user's would. `extra` lines go before the connections.
 */
export function writeKilledRunConfig(
  sandbox: { url: string; credentials: { client_id: string; client_secret: string; refresh_token: string } },
  warehouseUrl: string,
  options: { prefix: string; secretEnv: string; extra?: readonly string[] },
): string {
  const path = join(mkdtempSync(join(tmpdir(), options.prefix)), 'svcsync.yaml');
  writeFileSync(
    path,
    [
      `warehouse: "${warehouseUrl}"`,
      'sync: { per_page: 25 }',
      ...(options.extra ?? []),
      'connections:',
      '  - name: crash',
      `    accounts_url: ${sandbox.url}`,
      `    client_id: ${sandbox.credentials.client_id}`,
      `    client_secret: \${${options.secretEnv}}`,
      `    refresh_token: ${sandbox.credentials.refresh_token}`,
      '    plan: enterprise',
      '    limits: { per_minute: 1000000, per_day: 100000000, concurrency: 10, window_ms: 1000 }',
      '',
    ].join('\n'),
  );
  process.env[options.secretEnv] = sandbox.credentials.client_secret;
  return path;
}
