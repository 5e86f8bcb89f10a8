import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { type Dialect } from '../../src/loaders/sql-dialect.js';
import { freshWarehouse, PG_BASE_URL, type TestWarehouse } from './dialects.js';
import { derivedSnapshot, SCHEMA_PLACEHOLDER, type DerivedSnapshot } from './warehouse-snapshot.mjs';

const FIXTURES = new URL('../fixtures/derived/', import.meta.url);

/** What a fresh warehouse holds of the derived objects (test/fixtures/derived/{dialect}.json, scripts/write-derived-fixtures.mjs). */
export function derivedFixture(dialect: Dialect): DerivedSnapshot {
  return JSON.parse(readFileSync(new URL(`${dialect}.json`, FIXTURES), 'utf8')) as DerivedSnapshot;
}

/** The derived objects a warehouse holds now. */
export function snapshotOf(warehouse: Warehouse): Promise<DerivedSnapshot> {
  return derivedSnapshot(
    warehouse.dialect,
    async (text) => (await warehouse.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text))).rows,
  );
}

/**
 * A warehouse as the migrations that created the views and the dictionary themselves left it,
 * loaded from its SQL dump (test/fixtures/derived/legacy-{dialect}.sql): a new SQLite file, or a
 * new Postgres schema.
 */
export async function legacyWarehouse(dialect: Dialect): Promise<TestWarehouse> {
  const text = readFileSync(new URL(`legacy-${dialect}.sql`, FIXTURES), 'utf8');
  if (dialect === 'sqlite') {
    const file = join(mkdtempSync(join(tmpdir(), 'svcsync-legacy-')), 'warehouse.db');
    const db = new SQLite(file);
    try {
      // One transaction: statement by statement, each INSERT would wait for its own sync to disk.
      db.exec(`BEGIN;\n${text}COMMIT;`);
    } finally {
      db.close();
    }
    const url = `sqlite:${file}`;
    return { url, open: () => openWarehouse(url), drop: () => Promise.resolve() };
  }
  const tw = await freshWarehouse('postgres');
  const schema = decodeURIComponent(tw.url).replace(/^.*search_path=/, '');
  const client = new pg.Client({ connectionString: PG_BASE_URL });
  await client.connect();
  try {
    await client.query(text.split(`${SCHEMA_PLACEHOLDER}.`).join(`"${schema}".`));
  } finally {
    await client.end();
  }
  return tw;
}
