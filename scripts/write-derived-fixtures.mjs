#!/usr/bin/env node
// Writes test/fixtures/derived/: what a fresh warehouse, migrated by this build, holds of the
// objects svcsync derives from the catalog (views, dictionary rows, Postgres comments and foreign
// keys), one JSON file per dialect; test/loaders/derived-fixtures.test.ts compares warehouses with it.
// With --dumps it also writes an SQL dump of the whole migrated warehouse per dialect
// (legacy-sqlite.sql, legacy-postgres.sql), which the same test loads to upgrade it. The committed
// dumps were written by the build whose migrations still created the views and the dictionary
// themselves (the commit that added this script): they stand for warehouses migrated that way, so
// rewrite them only to move that starting point on purpose.
// Usage: npm run build && node scripts/write-derived-fixtures.mjs [--dumps]
// Postgres: SVCSYNC_TEST_PG or postgres://postgres@127.0.0.1:5432/test (a schema of its own, dropped after).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { migrateToLatest } from '../dist/src/loaders/migrate.js';
import { openWarehouse } from '../dist/src/loaders/warehouse.js';
import { derivedSnapshot, rewritePgDump, snapshotText, sqliteDump } from '../test/helpers/warehouse-snapshot.mjs';

const dumps = process.argv.includes('--dumps');
const out = new URL('../test/fixtures/derived/', import.meta.url);
mkdirSync(out, { recursive: true });
const write = (name, text) => {
  writeFileSync(new URL(name, out), text);
  process.stderr.write(`wrote test/fixtures/derived/${name}\n`);
};
const queryOf = (warehouse) => async (text) => (await warehouse.db.executeQuery(CompiledQuery.raw(text))).rows;

// SQLite: a new file.
{
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-fixture-'));
  const warehouse = await openWarehouse(`sqlite:${join(dir, 'warehouse.db')}`);
  try {
    await migrateToLatest(warehouse);
    const query = queryOf(warehouse);
    write('sqlite.json', snapshotText(await derivedSnapshot('sqlite', query)));
    if (dumps) write('legacy-sqlite.sql', await sqliteDump(query));
  } finally {
    await warehouse.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// Postgres: a schema of its own.
{
  const base = process.env['SVCSYNC_TEST_PG'] ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `svcsync_fixture_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  const warehouse = await openWarehouse(`${base}?options=${encodeURIComponent(`-c search_path=${schema}`)}`, { poolSize: 2 });
  try {
    await migrateToLatest(warehouse);
    const query = queryOf(warehouse);
    write('postgres.json', snapshotText(await derivedSnapshot('postgres', query)));
    if (dumps) {
      const filled = [];
      for (const { name } of await query(
        "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE '\\_svcsync\\_%' ORDER BY 1",
      )) {
        if ((await query(`SELECT 1 FROM "${name}" LIMIT 1`)).length > 0) filled.push(name);
      }
      const pgDump = (args) =>
        execFileSync('pg_dump', [...args, '--no-owner', '--no-privileges', `--dbname=${base}`], { encoding: 'utf8' });
      const ddl = pgDump(['--schema-only', `--schema=${schema}`]);
      const data = pgDump(['--data-only', '--inserts', ...filled.map((t) => `--table=${schema}.${t}`)]);
      write('legacy-postgres.sql', rewritePgDump(`${ddl}\n${data}`, schema));
    }
  } finally {
    await warehouse.close();
    await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    await admin.end();
  }
}
