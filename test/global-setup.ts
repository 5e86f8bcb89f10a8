import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * Postgres test schemas are dropped once, after every test file has finished. Dropping one
 * while another file's migration runs broke that migration now and then: kysely's migrator
 * introspects the tables of every schema in the database, and a schema dropped under that
 * query fails it ("relation … does not exist"). Each run names its schemas after its own id.
 */
export function setup(): void {
  process.env['SVCSYNC_TEST_RUN'] ??= randomBytes(4).toString('hex');
}

export async function teardown(): Promise<void> {
  const run = process.env['SVCSYNC_TEST_RUN'];
  if (!run) return;
  const client = new pg.Client({ connectionString: process.env['SVCSYNC_TEST_PG'] ?? 'postgres://postgres@127.0.0.1:5432/test' });
  try {
    await client.connect();
    const { rows } = await client.query<{ name: string }>('SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE $1', [`t\\_${run}\\_%`]);
    for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  } catch (error) {
    console.warn(`could not drop this run's test schemas: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
