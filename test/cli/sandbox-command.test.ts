import { describe, expect, it } from 'vitest';
import { configSnippet, sandboxCommand } from '../../src/cli/sandbox-command.js';

async function parseError(args: string[]): Promise<string> {
  const cmd = sandboxCommand()
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  try {
    await cmd.parseAsync(args, { from: 'user' });
  } catch (e) {
    return String((e as Error).message);
  }
  return 'no error';
}

describe('svcsync sandbox command', () => {
  it('names the invalid option', async () => {
    expect(await parseError(['--scale', '-3'])).toContain('--scale');
    expect(await parseError(['--scale', '2000000'])).toContain('--scale');
    expect(await parseError(['--port', '70000'])).toContain('--port');
    expect(await parseError(['--time-scale', '0'])).toContain('--time-scale');
    expect(await parseError(['--fault-5xx', '1.2'])).toContain('--fault-5xx');
    expect(await parseError(['--plan', 'gold'])).toContain('free');
  });

  it('prints a config snippet with limits scaled by the time scale', () => {
    const text = configSnippet(
      'http://127.0.0.1:4010',
      { client_id: 'id', client_secret: 'sec', refresh_token: 'rt', redirect_uri: 'http://x/cb' },
      { plan: 'standard', timeScale: 60, unlimited: false },
      [{ organization_id: '123', name: 'Org "One"' }],
    );
    expect(text).toContain('accounts_url: "http://127.0.0.1:4010"');
    expect(text).toContain('window_ms: 1000');
    expect(text).toContain('per_day: 2000');
    expect(text).toContain('concurrency: 10');
    expect(text).toContain('organizations: ["123"]');
  });
});
