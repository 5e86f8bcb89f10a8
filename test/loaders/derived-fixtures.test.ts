import { CompiledQuery } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { DERIVED_REVISION, derivedObjectsOf } from '../../src/loaders/derived/derived-objects.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { DIALECTS, freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';
import { derivedFixture, legacyWarehouse, snapshotOf } from '../helpers/legacy-warehouse.js';
import type { DerivedSnapshot } from '../helpers/warehouse-snapshot.mjs';

/** Field by field, so a difference names the part (views, columns, ...) that differs. */
function expectSnapshot(actual: DerivedSnapshot, expected: DerivedSnapshot): void {
  for (const part of ['views', 'tables', 'columns', 'comments', 'foreignKeys'] as const) expect(actual[part], part).toEqual(expected[part]);
}

describe.each(DIALECTS)('the derived objects on %s equal the fixture (test/fixtures/derived)', (dialect) => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  async function record(): Promise<Array<{ revision: number; hash: string }>> {
    const r = await wh.db.executeQuery<{ revision: number | string; hash: string }>(
      CompiledQuery.raw('SELECT revision, hash FROM _svcsync_derived'),
    );
    return r.rows.map((x) => ({ revision: Number(x.revision), hash: x.hash }));
  }

  it('a fresh warehouse, migrated', async () => {
    tw = await freshWarehouse(dialect);
    wh = await tw.open();
    expect((await migrateToLatest(wh)).derived).toBe('applied');
    const fixture = derivedFixture(dialect);
    expect(fixture.views.length).toBeGreaterThan(60);
    expect(fixture.columns.length).toBeGreaterThan(1000);
    expectSnapshot(await snapshotOf(wh), fixture);
  });

  it('a warehouse loaded from the dump of one the earlier migrations made, migrated: the same, and recorded', async () => {
    tw = await legacyWarehouse(dialect);
    wh = await tw.open();
    const report = await migrateToLatest(wh);
    expect(report.applied).toContain('20261126T090000-derived-objects');
    expect(report.derived).toBe('applied');
    expectSnapshot(await snapshotOf(wh), derivedFixture(dialect));
    expect(await record()).toEqual([{ revision: DERIVED_REVISION, hash: derivedObjectsOf(CATALOG, dialect).hash }]);
    expect((await migrateToLatest(wh)).derived).toBe('current');
  });
});
