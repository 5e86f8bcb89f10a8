import { afterEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { migrateToLatest, migrationStatus, scopedIntrospector } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { DIALECTS, freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';

describe.each(DIALECTS)('migrations on %s', (dialect) => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  it('applies every migration once and is a no-op the second time', async () => {
    tw = await freshWarehouse(dialect);
    wh = await tw.open();
    const first = await migrateToLatest(wh);
    expect(first.applied.length).toBeGreaterThan(0);
    expect(first.pending).toEqual([]);
    const second = await migrateToLatest(wh);
    expect(second.applied).toEqual([]);
    const status = await migrationStatus(wh);
    expect(status.every((m) => m.executedAt instanceof Date)).toBe(true);
    // The state tables exist and accept a row.
    await wh.db
      .insertInto('_svcsync_usage')
      .values({ organization_id: '1', day: '2026-11-22', count: 3, blocked_until: null, updated_at: '2026-11-22T00:00:00.000Z' })
      .execute();
    const rows = await sql<{ count: number }>`SELECT count FROM _svcsync_usage`.execute(wh.db);
    expect(Number(rows.rows[0]!.count)).toBe(3);
  });
});

describe('the migrator on postgres looks only in the warehouse schema', () => {
  const made: TestWarehouse[] = [];
  const opened: Warehouse[] = [];
  afterEach(async () => {
    for (const w of opened.splice(0)) await w.close();
    for (const t of made.splice(0)) await t.drop();
  });

  it('sees its bookkeeping tables in its own schema only, and a second warehouse in the same database migrates on its own', async () => {
    for (let i = 0; i < 2; i++) made.push(await freshWarehouse('postgres'));
    const [a, b] = await Promise.all(made.map((t) => t.open()));
    opened.push(a!, b!);
    const schemaOf = async (w: Warehouse): Promise<string> => (await w.sql.migrationSchema(w.db))!;
    const [sa, sb] = [await schemaOf(a!), await schemaOf(b!)];
    expect(sa).not.toBe(sb);

    const before = await scopedIntrospector(b!.db, sb).getTables();
    expect(before).toEqual([]);
    expect(await scopedIntrospector(b!.db, sb).getSchemas()).toEqual([{ name: sb }]);

    expect((await migrateToLatest(a!)).pending).toEqual([]);
    // A's tables (hundreds, in another schema) are not B's: B still has everything to apply.
    expect(await scopedIntrospector(b!.db, sb).getTables()).toEqual([]);
    const tablesOfA = await scopedIntrospector(a!.db, sa).getTables();
    expect(tablesOfA.map((t) => t.name).sort()).toEqual(['_svcsync_migrations', '_svcsync_migrations_lock']);
    expect(tablesOfA.every((t) => t.schema === sa)).toBe(true);
    const applied = await migrateToLatest(b!);
    expect(applied.applied.length).toBeGreaterThan(10);
    expect((await migrationStatus(b!)).every((m) => m.executedAt instanceof Date)).toBe(true);
    expect(await scopedIntrospector(a!.db, 'no_such_schema_here').getSchemas()).toEqual([]);
  });
});
