import { readFileSync } from 'node:fs';
import { CompiledQuery } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { historyTableDefinitions } from '../../src/catalog/history.js';
import { CATALOG, renderWarehouseMarkdown, sqlType, tableDefinitions } from '../../src/catalog/index.js';
import { viewDefinitions } from '../../src/catalog/views.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { DIALECTS, migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';

const defs = tableDefinitions(CATALOG);

describe.each(DIALECTS)('migrated schema on %s', (dialect) => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  it('has exactly the catalog tables and columns, with the catalog types (a catalog change needs a migration)', async () => {
    tw = await migratedWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);
    // Views (the `_live` and `report_` views) are checked in test/loaders/derived-fixtures.test.ts and test/e2e/views.test.ts.
    let tables = (await wh.db.introspection.getTables()).filter((t) => !t.isView);
    if (dialect === 'postgres') {
      const own = await wh.db.executeQuery<{ s: string }>(CompiledQuery.raw('SELECT current_schema() AS s'));
      tables = tables.filter((t) => t.schema === own.rows[0]!.s);
    }
    const byName = new Map(tables.map((t) => [t.name, t]));
    for (const def of defs) {
      const table = byName.get(def.name);
      expect(table, `table ${def.name}`).toBeDefined();
      expect(table!.columns.map((c) => c.name).sort(), `columns of ${def.name}`).toEqual(def.columns.map((c) => c.name).sort());
      for (const c of def.columns) {
        const actual = table!.columns.find((x) => x.name === c.name)!;
        const expected = sqlType(c.type, dialect).toLowerCase();
        // Postgres reports int8 for bigint and timestamptz as timestamptz; SQLite echoes the declared type.
        const normalized = actual.dataType
          .toLowerCase()
          .replace(/^int8$/, 'bigint')
          .replace(/^bool$/, 'boolean');
        expect(normalized, `${def.name}.${c.name}`).toBe(expected);
        expect(actual.isNullable, `${def.name}.${c.name} nullable`).toBe(c.nullable);
      }
    }
    const dataTables = tables
      .filter((t) => !t.name.startsWith('_svcsync_'))
      .map((t) => t.name)
      .sort();
    expect(dataTables).toEqual(defs.map((d) => d.name).sort());
  });
});

describe('docs/warehouse.md', () => {
  it('ends with the table reference the catalog generates (run scripts/write-warehouse-doc.mjs)', () => {
    const text = readFileSync(new URL('../../docs/warehouse.md', import.meta.url), 'utf8');
    const marker = text.indexOf('<!-- Everything below is generated');
    expect(marker).toBeGreaterThan(0);
    const generated = text.slice(text.indexOf('\n', marker) + 1).trim();
    expect(generated).toBe(renderWarehouseMarkdown(defs, viewDefinitions(CATALOG), historyTableDefinitions(CATALOG)).trim());
  });
});
