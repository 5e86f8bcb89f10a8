import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode, exitCodeFor, WarehouseError } from '../../src/core/errors.js';
import { openWarehouse } from '../../src/loaders/warehouse.js';
import { freePort } from '../helpers/private-postgres.js';

async function openFailure(url: string, options: Parameters<typeof openWarehouse>[1]): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    const w = await openWarehouse(url, options);
    await w.close();
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  throw new Error('expected the warehouse not to open');
}

/**
 * A Postgres warehouse that cannot be reached when svcsync starts is a setting to check (exit 2,
 * at once, naming host and port), not a lost connection waited out for `warehouse.retry_s`.
 */
describe('opening a Postgres warehouse that cannot be reached', () => {
  let silent: Server | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise((resolve) => (silent ? silent.close(resolve) : resolve(undefined)));
    silent = undefined;
  });

  it('a port nothing listens on: unreachable (exit 2) within seconds, naming host and port and never the password', async () => {
    const port = await freePort();
    const { error, ms } = await openFailure(`postgres://svc:s3cret-pw@127.0.0.1:${port}/test`, { retryMs: 60_000 });
    expect(error).toBeInstanceOf(WarehouseError);
    const e = error as WarehouseError;
    expect(e.fault).toBe('unreachable');
    expect(exitCodeFor(e)).toBe(ExitCode.config);
    expect(ms).toBeLessThan(5_000);
    expect(e.message).toContain(`127.0.0.1:${port}`);
    expect(e.message).not.toMatch(/connection was lost/);
    expect(e.hint).toMatch(/check the host and port in `warehouse:`/);
    expect(e.describe()).not.toContain('s3cret-pw');
  });

  it('a host that never answers (a server that accepts and stays silent): unreachable once the connect timeout passes', async () => {
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const { error, ms } = await openFailure(`postgres://postgres@127.0.0.1:${port}/test`, { retryMs: 60_000, connectTimeoutMs: 300 });
    const e = error as WarehouseError;
    expect(e.fault, String(error)).toBe('unreachable');
    expect(exitCodeFor(e)).toBe(ExitCode.config);
    expect(ms).toBeLessThan(5_000);
    expect(e.message).toContain(`127.0.0.1:${port}`);
    expect(e.message).toMatch(/timeout/);
  });
});
