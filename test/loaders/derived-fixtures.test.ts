import { afterEach, describe, expect, it } from 'vitest';
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

  it('a fresh warehouse, migrated', async () => {
    tw = await freshWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);
    const fixture = derivedFixture(dialect);
    expect(fixture.views.length).toBeGreaterThan(60);
    expect(fixture.columns.length).toBeGreaterThan(1000);
    expectSnapshot(await snapshotOf(wh), fixture);
  });

  it('a warehouse loaded from the dump of one the earlier migrations made, migrated', async () => {
    tw = await legacyWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);
    expectSnapshot(await snapshotOf(wh), derivedFixture(dialect));
  });
});
