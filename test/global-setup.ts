import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { dropTemplates, makeTemplates, runDatabasePrefix } from './helpers/templates.js';

const BASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Both integration projects (shared modules, and isolated) name this setup, so that either runs
 * alone; in one run of both it works once, and its teardown once, after the last test (the count
 * lives in the main process's environment: each project may load this module afresh).
 */
function users(delta: number): number {
  const n = Number(process.env['SVCSYNC_TEST_SETUP_USERS'] ?? 0) + delta;
  process.env['SVCSYNC_TEST_SETUP_USERS'] = String(n);
  return n;
}

/**
 * Each test run works in a Postgres database of its own, made here and dropped at the end;
 * inside it every test file has its own schema, dropped with the database.
 *
 * Why a database per run, not only a schema per test: kysely's migrator introspects the tables
 * of every schema in the database, and a schema another run dropped under that query failed
 * the migration ("schema … does not exist"). Two runs at once (a developer's and CI's, or
 * the Node lines) can no longer see each other's schemas. With SVCSYNC_TEST_PG set, the run uses
 * that database as it is and drops only its own schemas.
 *
 * The run also migrates one warehouse of each dialect, which tests copy (test/helpers/templates.ts);
 * the Postgres template and its copies are databases of the run's own, so only a run that made its
 * database (it may create databases) has one.
 */
export async function setup(): Promise<void> {
  if (users(1) > 1) return;
  const run = (process.env['SVCSYNC_TEST_RUN'] ??= randomBytes(4).toString('hex'));
  if (process.env['SVCSYNC_TEST_PG']) {
    await makeTemplates(run, undefined);
    return;
  }
  const database = runDatabasePrefix(run);
  const admin = new pg.Client({ connectionString: BASE_URL });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE "${database}"`);
    const url = new URL(BASE_URL);
    url.pathname = `/${database}`;
    process.env['SVCSYNC_TEST_PG'] = url.toString();
    process.env['SVCSYNC_TEST_OWN_DATABASE'] = database;
  } catch (error) {
    // No Postgres here: the Postgres tests fail on their own and say so; the SQLite half still runs.
    console.warn(`could not create this run's test database: ${(error as Error).message}`);
  } finally {
    await admin.end().catch(() => undefined);
  }
  await makeTemplates(run, process.env['SVCSYNC_TEST_OWN_DATABASE'] ? BASE_URL : undefined);
}

export async function teardown(): Promise<void> {
  if (users(-1) > 0) return;
  const run = process.env['SVCSYNC_TEST_RUN'];
  const own = process.env['SVCSYNC_TEST_OWN_DATABASE'];
  if (!run) return;
  try {
    await dropTemplates(run, BASE_URL);
  } catch (error) {
    console.warn(`could not drop this run's templates: ${(error as Error).message}`);
  }
  const client = new pg.Client({ connectionString: own ? BASE_URL : (process.env['SVCSYNC_TEST_PG'] ?? BASE_URL) });
  try {
    await client.connect();
    if (own) {
      await client.query(`DROP DATABASE IF EXISTS "${own}" WITH (FORCE)`);
      return;
    }
    const { rows } = await client.query<{ name: string }>('SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE $1', [
      `t\\_${run}\\_%`,
    ]);
    for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  } catch (error) {
    console.warn(`could not drop this run's test database or schemas: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
