import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../migrations/index.js';
import { CATALOG, tableDefinitions, type StreamSpec, type TableDef } from '../../src/catalog/index.js';
import { freezeTables, missingTables, renderTablesMigration, tablesFrozenIn } from '../../src/loaders/frozen-schema.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { migratedWarehouse } from '../helpers/dialects.js';

/** A stream the catalog does not have, with one child array: two new tables. */
const GHOSTS: StreamSpec = {
  name: 'ghosts',
  family: 'books',
  path: '/ghosts',
  recordsKey: ['ghosts'],
  primaryKey: 'ghost_id',
  paginated: true,
  kind: 'transaction',
  columns: [{ name: 'ghost_id', type: 'id' }],
  children: [{ field: 'sightings', columns: [{ name: 'place', type: 'text' }] }],
  spec: 'test',
  description: 'Ghosts.',
};

const table = (name: string): TableDef => ({ name, stream: 'books.x', primaryKey: ['organization_id'], columns: [], description: '' });
const names = (defs: readonly TableDef[]): string[] => defs.map((d) => d.name);

describe('missingTables: the catalog tables no earlier migration creates', () => {
  const defs = [table('a'), table('a__items'), table('b'), table('c')];

  it.each<[string, string[], string[]]>([
    ['no migration yet: every table', [], ['a', 'a__items', 'b', 'c']],
    ['everything frozen: none', ['a', 'a__items', 'b', 'c'], []],
    ['some frozen: the rest, in catalog order', ['b'], ['a', 'a__items', 'c']],
    ['a new child table of a frozen parent', ['a', 'b', 'c'], ['a__items']],
    ['tables migrations created that the catalog no longer has are ignored', ['a', 'a__items', 'b', 'c', 'gone'], []],
  ])('%s', (_case, created, expected) => {
    expect(names(missingTables(defs, new Set(created)))).toEqual(expected);
  });

  it('is nothing for the catalog as it stands: every table is in a migration (else run scripts/freeze-warehouse-tables.mjs)', () => {
    expect(names(missingTables(tableDefinitions(CATALOG), tablesFrozenIn(MIGRATIONS)))).toEqual([]);
  });

  it('is exactly a new stream\u2019s table and its child tables when one is added', () => {
    const missing = missingTables(tableDefinitions([...CATALOG, GHOSTS]), tablesFrozenIn(MIGRATIONS));
    expect(names(missing)).toEqual(['books_ghosts', 'books_ghosts__sightings']);
    const text = renderTablesMigration(freezeTables(missing), 'Ghosts.');
    expect(text).toContain('name: "books_ghosts",');
    expect(text).toContain('name: "books_ghosts__sightings",');
    expect(text).not.toContain('"books_users"');
  });
});

describe('tablesFrozenIn: the tables migrations create, from their TABLES lists', () => {
  it('collects every TABLES entry and skips migrations without one', () => {
    const migrations = {
      '1-state': { up: () => Promise.resolve() },
      '2-tables': { up: () => Promise.resolve(), TABLES: [{ name: 'a' }, { name: 'b' }] },
      '3-more': { up: () => Promise.resolve(), TABLES: [{ name: 'c' }] },
    };
    expect([...tablesFrozenIn(migrations)].sort()).toEqual(['a', 'b', 'c']);
  });

  it.each<[string, object, RegExp]>([
    ['TABLES that is not an array', { TABLES: { name: 'a' } }, /migration m: TABLES is not an array/],
    ['an entry without a name', { TABLES: [{ columns: [] }] }, /migration m: a TABLES entry has no name/],
  ])('refuses %s', (_case, module, message) => {
    expect(() => tablesFrozenIn({ m: module })).toThrow(message);
  });

  describe('against a migrated warehouse', () => {
    let wh: Warehouse | undefined;
    afterEach(async () => {
      await wh?.close();
    });

    it('names exactly the data tables migrating creates (hand-written migrations create only _svcsync_ tables)', async () => {
      wh = await (await migratedWarehouse('sqlite')).open();
      await migrateToLatest(wh);
      const data = (await wh.db.introspection.getTables())
        .filter((t) => !t.isView)
        .map((t) => t.name)
        .filter((n) => !n.startsWith('_svcsync_'));
      expect(data.sort()).toEqual([...tablesFrozenIn(MIGRATIONS)].sort());
    });
  });
});
