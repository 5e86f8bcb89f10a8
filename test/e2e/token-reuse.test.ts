import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenCacheRegistry } from '../../src/api/client.js';
import { createLogger } from '../../src/core/logger.js';
import { runSync } from '../../src/extractors/sync-run.js';
import { expectExit, startE2E, type E2E } from '../helpers/e2e.js';

describe('runs that share a TokenCacheRegistry', () => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E('sqlite', { scale: 3, organizations: 1 });
  });
  afterAll(async () => e?.close());

  it('refresh the access token once, not once per run', async () => {
    const logger = createLogger({ level: 'silent', secrets: e.secrets });
    const tokens = new TokenCacheRegistry({
      clock: e.sandbox.clock,
      secrets: e.secrets,
      logger,
      timeoutMs: e.config.sync.request_timeout_ms,
    });
    const run = () =>
      runSync({
        config: e.config,
        warehouse: e.warehouse,
        clock: e.sandbox.clock,
        logger,
        secrets: e.secrets,
        signal: new AbortController().signal,
        command: 'sync',
        mode: 'incremental',
        tokens,
      });
    for (let i = 0; i < 3; i++) expectExit(await run(), 0);
    expect(e.sandbox.requestLog().token.refresh).toBe(1);
    // Without it, each run refreshes again.
    expectExit(await e.sync(), 0);
    expect(e.sandbox.requestLog().token.refresh).toBe(2);
  });
});

describe('the scopes that worked, kept with the token cache across runs', () => {
  let e: E2E;
  beforeAll(async () => {
    // Refused tokens are answered 401 code 57, the missing-scope code; a refusal, once switched
    // on, lasts ten arrivals of a request: past the bound of four in a row.
    e = await startE2E('sqlite', { scale: 3, organizations: 1, variants: { refusedTokenCode: 57, spurious401Run: 10 } });
  });
  afterAll(async () => e?.close());

  it('make a later run of the process read endless 401 code 57 as a refused token, not as scopes missing', async () => {
    const logger = createLogger({ level: 'silent', secrets: e.secrets });
    const registry = (): TokenCacheRegistry =>
      new TokenCacheRegistry({ clock: e.sandbox.clock, secrets: e.secrets, logger, timeoutMs: e.config.sync.request_timeout_ms });
    const run = (tokens: TokenCacheRegistry) =>
      runSync({
        config: e.config,
        warehouse: e.warehouse,
        clock: e.sandbox.clock,
        logger,
        secrets: e.secrets,
        signal: new AbortController().signal,
        command: 'sync',
        mode: 'incremental',
        tokens,
      });
    const daemon = registry();
    expectExit(await run(daemon), 0);
    e.sandbox.setRequestVariants({ spurious401Rate: 1 });
    const later = await run(daemon);
    expectExit(later, 3);
    expect(later.skippedFamilies).toEqual([]);
    expect(later.connectionFailures).toHaveLength(1);
    expect(later.connectionFailures[0]!.error).toMatch(
      /refused 4 times in a row.*scope SvcBooks\.settings\.READ has worked for this connection/,
    );
    expect(later.connectionFailures[0]!.error).not.toContain('needs scope');
    // A new process has seen no scope work: the same answers read as the organization lists' scopes missing.
    const fresh = await run(registry());
    expectExit(fresh, 3);
    expect(fresh.connectionFailures).toHaveLength(1);
    expect(fresh.connectionFailures[0]!.error).toContain('needs scope SvcBooks.settings.READ; refused 4 times in a row');
  });
});
