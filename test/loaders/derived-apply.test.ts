import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery, sql, type Migration } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../migrations/index.js';
import { CATALOG, qualifiedName, type StreamSpec } from '../../src/catalog/index.js';
import { WarehouseError } from '../../src/core/errors.js';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { MIGRATION_LOCK_KEY } from '../../src/loaders/derived/apply-derived.js';
import { DERIVED_REVISION, derivedObjectsOf, deriveObjects } from '../../src/loaders/derived/derived-objects.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { runCli } from '../helpers/cli-process.js';
import { DIALECTS, freshWarehouse, migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';

/** CATALOG with inventory.contacts' columns changed. */
function withContacts(change: (columns: StreamSpec['columns']) => StreamSpec['columns']): StreamSpec[] {
  return CATALOG.map((s) => (qualifiedName(s) === 'inventory.contacts' ? { ...s, columns: change(s.columns) } : s));
}

/** A new column, and a changed description, as a catalog change brings them. */
const CHANGED = withContacts((cols) => [
  ...cols.map((c) => (c.name === 'contact_name' ? { ...c, description: 'The contact’s name, as changed by this test.' } : c)),
  { name: 'x_loyalty_tier', type: 'text', description: 'Loyalty tier (a column this test adds).' },
]);

/** The hand-written migration that comes with it. */
const ADD_COLUMN: Record<string, Migration> = {
  ...MIGRATIONS,
  '20991231T000000-loyalty-tier': {
    up: async (db) => db.schema.alterTable('inventory_contacts').addColumn('x_loyalty_tier', 'text').execute(),
  },
};

interface Recorded {
  revision: number;
  hash: string;
  views: string[];
  applied_at: string;
  svcsync_version: string;
}

async function rows<T>(wh: Warehouse, text: string): Promise<T[]> {
  return (await wh.db.executeQuery<T>(CompiledQuery.raw(text))).rows;
}

async function recorded(wh: Warehouse): Promise<Recorded[]> {
  const r = await rows<Recorded>(wh, 'SELECT revision, hash, views, applied_at, svcsync_version FROM _svcsync_derived');
  return r.map((x) => ({ ...x, revision: Number(x.revision), views: JSON.parse(x.views as unknown as string) as string[] }));
}

async function columnRow(wh: Warehouse, column: string): Promise<{ description: string | null } | undefined> {
  const r = await rows<{ description: string | null }>(
    wh,
    `SELECT description FROM _svcsync_columns WHERE table_name = 'inventory_contacts' AND column_name = '${column}'`,
  );
  return r[0];
}

async function liveColumns(wh: Warehouse): Promise<string[]> {
  if (wh.dialect === 'sqlite') {
    return (await rows<{ name: string }>(wh, "SELECT name FROM pragma_table_info('inventory_contacts_live')")).map((r) => r.name);
  }
  return (
    await rows<{ name: string }>(
      wh,
      'SELECT column_name AS name FROM information_schema.columns ' +
        "WHERE table_schema = current_schema() AND table_name = 'inventory_contacts_live'",
    )
  ).map((r) => r.name);
}

/** Another session holds the lock migrations take (SQLite: the write lock; Postgres: kysely's advisory lock) until released. */
async function holdMigrationLock(url: string): Promise<() => Promise<void>> {
  if (url.startsWith('sqlite:')) {
    const db = new SQLite(url.slice('sqlite:'.length));
    db.exec('BEGIN IMMEDIATE');
    return () => {
      db.exec('ROLLBACK');
      db.close();
      return Promise.resolve();
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('SELECT pg_advisory_lock(3853314791062309107)');
  return () => client.end();
}

/**
 * Whether a migrate is seen waiting for the lock another session holds, within 10 s: Postgres
 * lists its request for the key, not granted, in pg_locks; SQLite's writer meets "database is
 * locked" and warns that it retries.
 */
async function lockWaitSeen(url: string, log: CapturedLog): Promise<boolean> {
  const client = url.startsWith('sqlite:') ? null : new pg.Client({ connectionString: url });
  await client?.connect();
  const key = BigInt(MIGRATION_LOCK_KEY);
  try {
    for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
      if (client) {
        const r = await client.query(
          "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND objid = $2 " +
            'AND database = (SELECT oid FROM pg_database WHERE datname = current_database())',
          [String(key >> 32n), String(key & 0xffffffffn)],
        );
        if (r.rowCount) return true;
      } else if (log.records.some((r) => r['fault'] === 'locked')) return true;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return false;
  } finally {
    await client?.end();
  }
}

describe.each(DIALECTS)('the derived objects on %s', (dialect) => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  async function migrated(): Promise<Warehouse> {
    tw = await freshWarehouse(dialect);
    wh = await tw.open();
    expect((await migrateToLatest(wh)).derived).toBe('applied');
    return wh;
  }

  it('are recorded in _svcsync_derived when built, and a second migrate only reads', async () => {
    await migrated();
    const objects = derivedObjectsOf(CATALOG, dialect);
    const [record, ...more] = await recorded(wh);
    expect(more).toEqual([]);
    expect(record).toMatchObject({ revision: DERIVED_REVISION, hash: objects.hash, views: objects.views.map((v) => v.name) });
    expect(record!.svcsync_version).toMatch(/^\d+\.\d+\.\d+/);
    expect(await migrateToLatest(wh)).toEqual({ applied: [], pending: [], derived: 'current' });
    expect(await recorded(wh)).toEqual([record]);
  });

  it('when current, take no lock: another session holding the migrations\u2019 lock does not hold up a migrate', async () => {
    await migrated();
    const release = await holdMigrationLock(tw.url);
    try {
      const quick = await openWarehouse(tw.url, { busyTimeoutMs: 50, retryMs: 0 });
      try {
        const report = await Promise.race([
          migrateToLatest(quick),
          new Promise((resolve) => setTimeout(() => resolve('held up by the lock'), 5_000)),
        ]);
        expect(report).toEqual({ applied: [], pending: [], derived: 'current' });
      } finally {
        await quick.close();
      }
    } finally {
      await release();
    }
  });

  it('wait for the migrations\u2019 lock held by another session, for pending migrations and for a rebuild alike', async () => {
    tw = await freshWarehouse(dialect);
    const log = new CapturedLog();
    wh = await openWarehouse(tw.url, {
      busyTimeoutMs: 50,
      logger: createLogger({ level: 'warn', secrets: new SecretRegistry(), destination: log }),
    });
    const described = withContacts((cols) => cols.map((c) => (c.name === 'contact_name' ? { ...c, description: 'Described anew.' } : c)));
    for (const options of [{}, { catalog: described }]) {
      log.lines.length = 0;
      const release = await holdMigrationLock(tw.url);
      const run = migrateToLatest(wh, options);
      let finished = false;
      run.then(
        () => (finished = true),
        () => (finished = true),
      );
      const seen = await lockWaitSeen(tw.url, log);
      await release();
      expect({ seen, finished }).toEqual({ seen: true, finished: false });
      expect((await run).derived).toBe('applied');
    }
    expect(await columnRow(wh, 'contact_name')).toEqual({ description: 'Described anew.' });
  });

  it('follow a catalog change: the view shows the new column, the dictionary the new description; again, nothing', async () => {
    await migrated();
    const [before] = await recorded(wh);
    const report = await migrateToLatest(wh, { catalog: CHANGED, migrations: ADD_COLUMN });
    expect(report).toEqual({ applied: ['20991231T000000-loyalty-tier'], pending: [], derived: 'applied' });
    await wh.db.executeQuery(
      CompiledQuery.raw(
        'INSERT INTO inventory_contacts (organization_id, contact_id, x_loyalty_tier, _synced_at) ' +
          "VALUES ('o1', 'c1', 'gold', '2026-11-25T00:00:00Z')",
      ),
    );
    expect(await rows(wh, 'SELECT contact_id, x_loyalty_tier FROM inventory_contacts_live')).toEqual([
      { contact_id: 'c1', x_loyalty_tier: 'gold' },
    ]);
    expect(await columnRow(wh, 'x_loyalty_tier')).toEqual({ description: 'Loyalty tier (a column this test adds).' });
    expect(await columnRow(wh, 'contact_name')).toEqual({ description: 'The contact’s name, as changed by this test.' });
    if (dialect === 'postgres') {
      const comment = await rows<{ c: string }>(
        wh,
        "SELECT col_description('inventory_contacts'::regclass, attnum) AS c FROM pg_attribute " +
          "WHERE attrelid = 'inventory_contacts'::regclass AND attname = 'contact_name'",
      );
      expect(comment).toEqual([{ c: 'The contact’s name, as changed by this test. API field: contact_name.' }]);
    }
    const [after] = await recorded(wh);
    expect(after!.hash).toBe(deriveObjects(CHANGED, dialect).hash);
    expect(after!.hash).not.toBe(before!.hash);

    expect(await migrateToLatest(wh, { catalog: CHANGED, migrations: ADD_COLUMN })).toEqual({
      applied: [],
      pending: [],
      derived: 'current',
    });
    expect(await recorded(wh)).toEqual([after]);
  });

  it('are out of the way of a migration that drops (or, on Postgres, retypes) a column a view reads', async () => {
    await migrated();
    const withoutWebsite = withContacts((cols) => cols.filter((c) => c.name !== 'website'));
    const migrations: Record<string, Migration> = {
      ...MIGRATIONS,
      '20991231T000000-contacts-reshaped': {
        up: async (db) => {
          await db.schema.alterTable('inventory_contacts').dropColumn('website').execute();
          if (dialect === 'postgres') await sql`ALTER TABLE inventory_contacts ALTER COLUMN contact_name TYPE varchar(400)`.execute(db);
        },
      },
    };
    const report = await migrateToLatest(wh, { catalog: withoutWebsite, migrations });
    expect(report.applied).toEqual(['20991231T000000-contacts-reshaped']);
    expect(report.derived).toBe('applied');
    const shown = await liveColumns(wh);
    expect(shown).toContain('contact_name');
    expect(shown).not.toContain('website');
    expect(await columnRow(wh, 'website')).toBeUndefined();
  });

  it('are left alone by an older svcsync (a lower revision, or migrations it does not know), which warns once; the sync runs', async () => {
    await migrated();
    const [before] = await recorded(wh);
    const log = new CapturedLog();
    const logger = createLogger({ level: 'info', secrets: new SecretRegistry(), destination: log });
    const older = { catalog: CHANGED, migrations: ADD_COLUMN, derivedRevision: DERIVED_REVISION - 1, logger };
    // Its own pending migration runs; the objects a newer revision built stay.
    expect(await migrateToLatest(wh, older)).toMatchObject({ applied: ['20991231T000000-loyalty-tier'], derived: 'newer' });
    expect(await migrateToLatest(wh, older)).toEqual({ applied: [], pending: [], derived: 'newer' });
    expect(await recorded(wh)).toEqual([before]);
    expect(await columnRow(wh, 'x_loyalty_tier')).toBeUndefined();
    expect(await liveColumns(wh)).not.toContain('x_loyalty_tier');
    const warnings = log.records.filter((r) => r['level'] === 'warn');
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0]!['msg'])).toMatch(
      new RegExp(
        `made by svcsync \\S+ \\(derived revision ${DERIVED_REVISION}\\), ` +
          `newer than this svcsync .* \\(derived revision ${DERIVED_REVISION - 1}\\)`,
      ),
    );
    expect(String(warnings[0]!['msg'])).toContain('the sync runs');

    // The newer version rebuilds them; one of the same revision that lacks its migration (the
    // default list) is older too, and leaves them as they are.
    expect((await migrateToLatest(wh, { catalog: CHANGED, migrations: ADD_COLUMN })).derived).toBe('applied');
    const [newer] = await recorded(wh);
    expect(await migrateToLatest(wh)).toEqual({ applied: [], pending: [], derived: 'newer' });
    expect(await recorded(wh)).toEqual([newer]);
    expect(await liveColumns(wh)).toContain('x_loyalty_tier');
  });
});

describe('a view of the user’s own that reads one of svcsync’s views', () => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  it('Postgres: the rebuild stops, naming the view and what to do; nothing changes', async () => {
    tw = await migratedWarehouse('postgres');
    wh = await tw.open();
    await migrateToLatest(wh);
    const [before] = await recorded(wh);
    await wh.db.executeQuery(CompiledQuery.raw('CREATE VIEW my_contacts AS SELECT contact_id FROM inventory_contacts_live'));
    const failed = await migrateToLatest(wh, { catalog: CHANGED, migrations: ADD_COLUMN }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(WarehouseError);
    const error = failed as WarehouseError;
    expect(error.message).toContain('svcsync could not re-create its views');
    expect(error.message).toContain('my_contacts');
    expect(error.hint).toContain('svcsync migrate');
    expect(error.hint).toContain('pg_get_viewdef');
    // The migration's transaction rolled back whole: no new column, every view and the record as they were.
    expect(await rows(wh, 'SELECT contact_id FROM my_contacts')).toEqual([]);
    expect(await recorded(wh)).toEqual([before]);
    expect(await liveColumns(wh)).not.toContain('x_loyalty_tier');
  });

  it('SQLite: the rebuild goes through and the view still reads', async () => {
    tw = await migratedWarehouse('sqlite');
    wh = await tw.open();
    await migrateToLatest(wh);
    await wh.db.executeQuery(CompiledQuery.raw('CREATE VIEW my_contacts AS SELECT contact_id FROM inventory_contacts_live'));
    expect((await migrateToLatest(wh, { catalog: CHANGED, migrations: ADD_COLUMN })).derived).toBe('applied');
    expect(await rows(wh, 'SELECT contact_id FROM my_contacts')).toEqual([]);
    expect(await liveColumns(wh)).toContain('x_loyalty_tier');
  });
});

describe.each(DIALECTS)('two processes migrating a fresh %s warehouse at once (the compiled CLI)', (dialect) => {
  it('both succeed; one builds the views and dictionary, the other finds them current', async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const tw = await freshWarehouse(dialect);
      const config = join(mkdtempSync(join(tmpdir(), 'svcsync-derived-')), 'svcsync.yaml');
      writeFileSync(
        config,
        [
          `warehouse: ${JSON.stringify({ url: tw.url, retry_s: 30, busy_timeout_s: 2 })}`,
          'connections:',
          '  - { name: acme, client_id: x, client_secret: y, refresh_token: z, plan: free }',
          '',
        ].join('\n'),
      );
      const [a, b] = await Promise.all([runCli(['migrate', '--config', config]), runCli(['migrate', '--config', config])]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const said = [a.stdout, b.stdout].map((out) => /views and dictionary (.*)$/m.exec(out)?.[1]).sort();
      expect(said).toEqual(['current', 'rebuilt from the catalog']);
      const wh = await tw.open();
      try {
        expect(await recorded(wh)).toHaveLength(1);
        expect((await rows(wh, 'SELECT name FROM _svcsync_migrations')).length).toBe(Object.keys(MIGRATIONS).length);
      } finally {
        await wh.close();
        await tw.drop();
      }
    }
  });
});
