import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { exchangeMessage, REFRESH_TOKENS_PER_USER } from '../../src/cli/commands/auth.js';
import { main } from '../../src/cli/main.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';

/** Runs the command line in this process; its exit code and what it wrote to stdout. */
async function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const code = await main(['node', 'svcsync', '--log-level', 'silent', ...args]);
    return { code, stdout };
  } finally {
    spy.mockRestore();
    process.env = saved;
  }
}

describe('auth exchange', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 1, scale: 1, organizations: 1, unlimited: true });
  });
  afterAll(async () => sandbox?.stop());

  it('says the service keeps 20 refresh tokens per user and how not to lose this one', () => {
    const text = exchangeMessage({ refresh_token: '1000.r', api_domain: 'https://api.example' }, 'acme');
    expect(REFRESH_TOKENS_PER_USER).toBe(20);
    expect(text).toContain('the service keeps at most 20 refresh tokens per user');
    expect(text).toMatch(/deletes the oldest, even one in use/);
    expect(text).toContain('one refresh token per user per integration');
    expect(text).toMatch(/give this one to every svcsync process and\nconnection of this user instead of exchanging again/);
    expect(text).toMatch(/run `svcsync auth exchange` again only if it is\nlost or revoked/);
  });

  it('prints it with the token it obtained', async () => {
    const code = sandbox.issueGrantCode();
    const r = await run(
      [
        'auth',
        'exchange',
        '--code',
        code,
        '--accounts-url',
        sandbox.url,
        '--redirect-uri',
        sandbox.credentials.redirect_uri,
        '--config',
        '/nonexistent/svcsync.yaml',
      ],
      { SVC_CLIENT_ID: sandbox.credentials.client_id, SVC_CLIENT_SECRET: sandbox.credentials.client_secret },
    );
    expect(r.code).toBe(0);
    const token = /export SVC_REFRESH_TOKEN='([^']+)'/.exec(r.stdout)?.[1];
    expect(token).toBeTruthy();
    expect(r.stdout).toContain('at most 20 refresh tokens per user');
    expect(r.stdout).toContain('one refresh token per user per integration');
  });
});
