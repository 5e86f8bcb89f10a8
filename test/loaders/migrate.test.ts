import { afterEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { migrateToLatest, migrationStatus } from '../../src/loaders/migrate.js';
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
