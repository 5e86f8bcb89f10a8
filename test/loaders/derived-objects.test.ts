import { describe, expect, it } from 'vitest';
import { CATALOG, qualifiedName, tableDefinitions, type StreamSpec } from '../../src/catalog/index.js';
import { liveViewDefinitions, liveViewName, viewDefinitions } from '../../src/catalog/views.js';
import { derivedVerdict, type DerivedVerdict } from '../../src/loaders/derived/apply-derived.js';
import { DERIVED_REVISION, deriveObjects } from '../../src/loaders/derived/derived-objects.js';

/** CATALOG with inventory.contacts changed. */
function withContacts(change: (columns: StreamSpec['columns']) => StreamSpec['columns']): StreamSpec[] {
  return CATALOG.map((s) => (qualifiedName(s) === 'inventory.contacts' ? { ...s, columns: change(s.columns) } : s));
}

describe('derivedVerdict: what a process does with the derived objects in place', () => {
  const ours = { revision: 3, hash: 'h' };
  it.each<[string, { revision: number; hash: string } | undefined, boolean, DerivedVerdict]>([
    ['none recorded (a fresh warehouse, or one from before the record): build them', undefined, false, 'apply'],
    ['the same revision and hash: nothing', { revision: 3, hash: 'h' }, false, 'current'],
    ['the same revision, another hash (the catalog changed): rebuild', { revision: 3, hash: 'other' }, false, 'apply'],
    ['an older revision: rebuild', { revision: 2, hash: 'h' }, false, 'apply'],
    ['a newer revision: leave them alone', { revision: 4, hash: 'other' }, false, 'newer'],
    ['a newer revision with the same hash: still a newer svcsync’s', { revision: 4, hash: 'h' }, false, 'newer'],
    ['migrations this version does not know, another hash: leave them alone', { revision: 3, hash: 'other' }, true, 'newer'],
    ['migrations this version does not know, nothing to do anyway: nothing', { revision: 3, hash: 'h' }, true, 'current'],
  ])('%s', (_case, recorded, newerMigrations, expected) => {
    expect(derivedVerdict(recorded, ours, newerMigrations)).toBe(expected);
  });
});

describe('deriveObjects: the views, dictionary rows, comments and foreign keys of a catalog', () => {
  it('has one live view per table, named {table}_live, after the view of its parent; no view reads one made after it', () => {
    const tables = tableDefinitions(CATALOG);
    const live = liveViewDefinitions(CATALOG);
    expect(live.map((v) => v.name)).toEqual(tables.map((t) => liveViewName(t.name)));
    const names = new Set(tables.map((t) => t.name));
    for (const v of viewDefinitions(CATALOG)) expect(names.has(v.name), `${v.name} is also a table`).toBe(false);
    const seen = new Set<string>();
    for (const v of deriveObjects(CATALOG, 'sqlite').views) {
      for (const read of v.create.matchAll(/"([a-z_]+_live)"/g)) {
        if (read[1] !== v.name) expect(seen.has(read[1]!), `${v.name} reads ${read[1]} before it exists`).toBe(true);
      }
      seen.add(v.name);
    }
  });

  it('is the same for the same catalog, and its hash moves with a description, a column or the dialect', () => {
    const base = deriveObjects(CATALOG, 'postgres');
    expect(deriveObjects(CATALOG, 'postgres')).toEqual(base);
    expect(base.revision).toBe(DERIVED_REVISION);
    const described = deriveObjects(
      withContacts((cols) => cols.map((c) => (c.name === 'contact_name' ? { ...c, description: 'Changed.' } : c))),
      'postgres',
    );
    const added = deriveObjects(
      withContacts((cols) => [...cols, { name: 'x_loyalty_tier', type: 'text' }]),
      'postgres',
    );
    const hashes = new Set([base.hash, described.hash, added.hash, deriveObjects(CATALOG, 'sqlite').hash]);
    expect(hashes.size).toBe(4);
    // A description is in the dictionary and the comments; a column also in its table's view.
    expect(described.views).toEqual(base.views);
    expect(described.comments.find((c) => c.includes('"inventory_contacts"."contact_name"'))).toContain(
      "'Changed. API field: contact_name.'",
    );
    expect(added.views.find((v) => v.name === 'inventory_contacts_live')?.create).toContain('"t"."x_loyalty_tier"');
  });

  it('gives SQLite no comments or foreign keys (it has neither), Postgres one foreign key per child table', () => {
    const sqlite = deriveObjects(CATALOG, 'sqlite');
    const postgres = deriveObjects(CATALOG, 'postgres');
    expect(sqlite.comments).toEqual([]);
    expect(sqlite.foreignKeys).toEqual([]);
    const children = tableDefinitions(CATALOG).filter((t) => t.parentTable !== undefined);
    expect(postgres.foreignKeys.map((fk) => fk.name)).toEqual(children.map((t) => `${t.name}_fk`));
    expect(sqlite.columns.find((c) => c.table_name === 'billing_plans' && c.column_name === 'recurring_price')?.type).toBe('real');
    expect(postgres.columns.find((c) => c.table_name === 'billing_plans' && c.column_name === 'recurring_price')?.type).toBe('numeric');
  });
});
