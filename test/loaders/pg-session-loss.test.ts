import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { freshWarehouse, PG_BASE_URL, type TestWarehouse } from '../helpers/dialects.js';

/** Resolves once the server has ended session `pid`, or after 10 s (then the transaction commits and the test fails). */
async function sessionEnded(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_BASE_URL });
  await admin.connect();
  try {
    for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
      const r = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
      if (r.rowCount === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  } finally {
    await admin.end();
  }
}

describe('a Postgres session the server ends', () => {
  let tw: TestWarehouse | undefined;
  let w: Warehouse | undefined;
  afterEach(async () => {
    await w?.close();
    await tw?.drop();
  });

  it('inside a transaction left idle past the lease time-to-live: the transaction fails, the process and the pool carry on', async () => {
    tw = await freshWarehouse('postgres');
    // The lease time-to-live is also the sessions' idle-in-transaction timeout: 1 s here.
    w = await openWarehouse(tw.url, { poolSize: 2, leaseTimings: { ttlMs: 1_000, heartbeatMs: 200 } });
    const wh = w;
    const outcome = await wh.db
      .transaction()
      .execute(async (trx) => {
        const pid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx)).rows[0]!.pid;
        // A paused process: nothing sent until the server has ended the session for its timeout.
        await sessionEnded(pid);
        await sql`SELECT 2`.execute(trx);
        return 'committed';
      })
      .catch((err: unknown) => `failed: ${String(err)}`);
    expect(outcome).toMatch(/^failed: /);
    // The process is alive (no unhandled 'error' event) and the warehouse answers on a fresh session.
    const r = await sql<{ one: number }>`SELECT 1 AS one`.execute(wh.db);
    expect(r.rows).toEqual([{ one: 1 }]);
  });

  it('idle in the pool, ended by an administrator: the next query gets a fresh session', async () => {
    tw = await freshWarehouse('postgres');
    w = await openWarehouse(tw.url, { poolSize: 1 });
    const wh = w;
    const pid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(wh.db)).rows[0]!.pid;
    const admin = new pg.Client({ connectionString: PG_BASE_URL });
    await admin.connect();
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await admin.end();
    await new Promise((r) => setTimeout(r, 200));
    const again = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(wh.db)).rows[0]!.pid;
    expect(again).not.toBe(pid);
  });
});
