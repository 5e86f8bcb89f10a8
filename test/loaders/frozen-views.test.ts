import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../migrations/index.js';
import { CATALOG, tableDefinitions } from '../../src/catalog/index.js';
import { liveViewDefinitions, liveViewName, viewDefinitions } from '../../src/catalog/views.js';
import { freezeViews, viewsFrozenIn } from '../../src/loaders/frozen-views.js';

const NEW_MIGRATION =
  'the catalog now generates other views: npm run build && node scripts/freeze-views.mjs "what changed" > ' +
  'migrations/<timestamp>-views.ts, and list it in migrations/index.ts (docs/design.md, "Views")';

describe('frozen views', () => {
  it('the latest views migration creates exactly the views the catalog generates', () => {
    const frozen = viewsFrozenIn(MIGRATIONS);
    expect(frozen, 'no migration exports VIEWS').toBeDefined();
    const current = freezeViews(viewDefinitions(CATALOG));
    expect(
      frozen!.views.map((v) => v.name),
      NEW_MIGRATION,
    ).toEqual(current.map((v) => v.name));
    for (const [i, view] of current.entries()) expect(frozen!.views[i]?.sql, `${view.name}: ${NEW_MIGRATION}`).toEqual(view.sql);
  });

  it('has one live view per table, named {table}_live, after the view of its parent', () => {
    const tables = tableDefinitions(CATALOG);
    const live = liveViewDefinitions(CATALOG);
    expect(live.map((v) => v.name)).toEqual(tables.map((t) => liveViewName(t.name)));
    const names = new Set(tables.map((t) => t.name));
    for (const v of viewDefinitions(CATALOG)) expect(names.has(v.name), `${v.name} is also a table`).toBe(false);
    const seen = new Set<string>();
    for (const v of viewDefinitions(CATALOG)) {
      for (const read of v.sql.join('\n').matchAll(/"([a-z_]+_live)"/g))
        expect(seen.has(read[1]!), `${v.name} reads ${read[1]} before it exists`).toBe(true);
      seen.add(v.name);
    }
  });

  it('keeps lines short enough for a migration file', () => {
    for (const v of viewDefinitions(CATALOG)) for (const line of v.sql) expect(line.length, `${v.name}: ${line}`).toBeLessThanOrEqual(120);
  });

  it('takes the VIEWS of the last migration that exports them, and refuses a VIEWS that is not an array', () => {
    const a = { name: 'a', sql: ['SELECT 1'] };
    const b = { name: 'b', sql: ['SELECT 2'] };
    expect(viewsFrozenIn({ '2-x': { VIEWS: [b] }, '1-x': { VIEWS: [a] }, '3-y': {} })).toEqual({ migration: '2-x', views: [b] });
    expect(viewsFrozenIn({ '1-x': {} })).toBeUndefined();
    expect(() => viewsFrozenIn({ m: { VIEWS: 'x' } })).toThrow(/migration m: VIEWS is not an array/);
  });
});
