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
