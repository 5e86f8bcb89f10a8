import { CompiledQuery } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { CATALOG, relationships, sqlType, tableDefinitions } from '../../src/catalog/index.js';
import { viewDefinitions } from '../../src/catalog/views.js';
import { columnComment, literal } from '../../src/loaders/derived/derived-objects.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { DIALECTS, migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';

const defs = tableDefinitions(CATALOG);
const rels = relationships(CATALOG);
const foreignKeys = rels.filter((r) => r.kind === 'foreign_key');
const views = viewDefinitions(CATALOG);

describe('the relationships behind the dictionary', () => {
  it('has a foreign key for every child table, and none for a stream table', () => {
    const children = defs.filter((d) => d.parentTable !== undefined);
    expect(foreignKeys.map((r) => r.fromTable).sort()).toEqual(children.map((d) => d.name).sort());
    for (const r of foreignKeys) {
      const child = defs.find((d) => d.name === r.fromTable)!;
      const parent = defs.find((d) => d.name === r.toTable)!;
      expect(r.toTable).toBe(child.parentTable);
      // The referenced columns are the parent's whole primary key, which is unique.
      expect(r.toColumns).toEqual(parent.primaryKey);
      expect(r.fromColumns).toEqual(child.primaryKey.slice(0, parent.primaryKey.length));
    }
  });
});

describe('comment literals', () => {
  it.each([
    ['plain', "'plain'"],
    ["the contact's persons", "'the contact''s persons'"],
    ['a \\ backslash', "E'a \\\\ backslash'"],
    ["it's \\n", "E'it''s \\\\n'"],
  ])('%s', (text, expected) => {
    expect(literal(text)).toBe(expected);
  });

  it('refuses a NUL character', () => {
    expect(() => literal('a\0b')).toThrow(/NUL/);
  });

  it('a column comment is the description and the API field', () => {
    expect(columnComment('billing_address.city', null)).toBe('API field: billing_address.city.');
    expect(columnComment('discount', 'As sent.')).toBe('As sent. API field: discount.');
    expect(columnComment('(svcsync)', 'When svcsync last wrote the row.')).toBe('When svcsync last wrote the row.');
  });
});

interface ColumnRow {
  table_name: string;
  column_name: string;
  position: number | string;
  type: string;
  catalog_type: string;
  nullable: number | string;
  api_field: string;
  description: string | null;
  references_table: string | null;
  references_column: string | null;
  relationship: string | null;
}

describe.each(DIALECTS)('the dictionary after migrateToLatest on %s', (dialect) => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  async function rows<T>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await wh.db.executeQuery<T>(CompiledQuery.raw(text, params))).rows;
  }

  it('_svcsync_tables and _svcsync_columns describe every catalog table and column, with its references', async () => {
    tw = await migratedWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);

    const tables = await rows<{ table_name: string; stream: string; parent_table: string | null; description: string }>(
      "SELECT table_name, stream, parent_table, description FROM _svcsync_tables WHERE kind = 'table' ORDER BY table_name",
    );
    expect(tables).toEqual(
      defs
        .map((d) => ({ table_name: d.name, stream: d.stream, parent_table: d.parentTable ?? null, description: d.description }))
        .sort((a, b) => (a.table_name < b.table_name ? -1 : 1)),
    );

    const columns = (await rows<ColumnRow>('SELECT * FROM _svcsync_columns')).filter((c) => !views.some((v) => v.name === c.table_name));
    expect(columns.length).toBe(defs.reduce((n, d) => n + d.columns.length, 0));
    const byKey = new Map(columns.map((c) => [`${c.table_name}.${c.column_name}`, c]));
    for (const d of defs) {
      d.columns.forEach((c, i) => {
        const row = byKey.get(`${d.name}.${c.name}`);
        expect(row, `${d.name}.${c.name}`).toBeDefined();
        expect(Number(row!.position)).toBe(i);
        expect(row!.type).toBe(sqlType(c.type, dialect));
        expect(row!.catalog_type).toBe(c.type);
        expect(Number(row!.nullable)).toBe(c.nullable ? 1 : 0);
        expect(row!.api_field).toBe(c.source);
        expect(row!.description).toBe(c.description ?? null);
      });
    }
    // Every relationship shows on its columns (organization_id, shared by all, is left out).
    for (const r of rels) {
      r.fromColumns.forEach((column, i) => {
        if (column === 'organization_id') return;
        const row = byKey.get(`${r.fromTable}.${column}`)!;
        expect([row.references_table, row.references_column, row.relationship], `${r.fromTable}.${column}`).toEqual([
          r.toTable,
          r.toColumns[i],
          r.kind,
        ]);
      });
    }
    const marked = columns.filter((c) => c.references_table !== null).length;
    expect(marked).toBe(rels.reduce((n, r) => n + r.fromColumns.filter((c) => c !== 'organization_id').length, 0));
    // The dictionary answers a BI user's question in plain SQL.
    const sales = await rows<{ column_name: string }>(
      "SELECT column_name FROM _svcsync_columns WHERE table_name = 'inventory_sales_orders' AND references_table = 'inventory_contacts'",
    );
    expect(sales.map((r) => r.column_name)).toEqual(['customer_id']);
  });
});

// Constraints and comments exist on Postgres only (SQLite cannot add constraints to existing
// tables, and has no comments); the same setup as above, on Postgres.
describe('the Postgres constraints and comments after migrateToLatest', () => {
  const dialect = 'postgres';
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  async function rows<T>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await wh.db.executeQuery<T>(CompiledQuery.raw(text, params))).rows;
  }

  it('Postgres has a foreign key from every child table to its parent, with ON DELETE CASCADE', async () => {
    tw = await migratedWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);
    const found = await rows<{ name: string; from_table: string; from_columns: string; to_table: string; to_columns: string; del: string }>(
      `SELECT c.conname AS name, c.conrelid::regclass::text AS from_table, c.confrelid::regclass::text AS to_table,
              (SELECT string_agg(a.attname, ',' ORDER BY k.i) FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
                 JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n) AS from_columns,
              (SELECT string_agg(a.attname, ',' ORDER BY k.i) FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
                 JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n) AS to_columns,
              c.confdeltype AS del
         FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`,
    );
    const expected = foreignKeys.map((r) => ({
      name: r.name,
      from_table: r.fromTable,
      from_columns: r.fromColumns.join(','),
      to_table: r.toTable,
      to_columns: r.toColumns.join(','),
      del: 'c',
    }));
    const order = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : 1);
    expect(found.sort(order)).toEqual(expected.sort(order));
    // information_schema, which BI tools read through JDBC/ODBC, sees them too.
    const info = await rows<{ n: string }>(
      'SELECT count(*) AS n FROM information_schema.table_constraints ' +
        "WHERE constraint_type = 'FOREIGN KEY' AND table_schema = current_schema()",
    );
    expect(Number(info[0]!.n)).toBe(foreignKeys.length);

    // Enforced: a child row without its parent is refused; removing a parent by hand takes its children along.
    const child = foreignKeys.find((r) => r.fromTable === 'inventory_sales_orders__taxes')!;
    const insertChild =
      `INSERT INTO ${child.fromTable} (organization_id, salesorder_id, _position, _synced_at) ` + "VALUES ('o', 's1', 0, now())";
    await expect(rows(insertChild)).rejects.toThrow(/foreign key/);
    await rows(`INSERT INTO ${child.toTable} (organization_id, salesorder_id, _synced_at) VALUES ('o', 's1', now())`);
    await rows(insertChild);
    await rows(`DELETE FROM ${child.toTable} WHERE salesorder_id = 's1'`);
    expect(await rows(`SELECT 1 FROM ${child.fromTable}`)).toEqual([]);
  });

  it('Postgres carries every description as a table or column comment', async () => {
    tw = await migratedWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);
    const tableComments = await rows<{ name: string; comment: string | null }>(
      `SELECT c.relname AS name, obj_description(c.oid, 'pg_class') AS comment FROM pg_class c
        WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace`,
    );
    const byTable = new Map(tableComments.map((t) => [t.name, t.comment]));
    for (const d of defs) expect(byTable.get(d.name), d.name).toBe(d.description);
    expect(byTable.get('_svcsync_columns')).toMatch(/API field/);

    const columnComments = await rows<{ t: string; c: string; comment: string | null }>(
      `SELECT c.relname AS t, a.attname AS c, col_description(c.oid, a.attnum) AS comment
         FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace`,
    );
    const byColumn = new Map(columnComments.map((r) => [`${r.t}.${r.c}`, r.comment]));
    for (const d of defs) {
      for (const c of d.columns) {
        expect(byColumn.get(`${d.name}.${c.name}`), `${d.name}.${c.name}`).toBe(columnComment(c.source, c.description ?? null));
      }
    }
    // System columns are described too, and quotes survive (the catalog's descriptions hold ’ and ').
    expect(byColumn.get('inventory_sales_orders._deleted_at')).toMatch(/never removed/);
    expect(byColumn.get('inventory_sales_orders._hash')).toMatch(/SHA-1/);
    expect(byColumn.get('billing_plans.plan_code')).toContain('plan\u2019s id');
  });
});

/**
 * Whether a description tells a BI user more than the API field's name: at least three words once
 * the name and the "API field: ..." part are taken out ("API field: salesorder_number" is none).
 */
export function saysMore(text: string | null | undefined, column: string): boolean {
  if (!text) return false;
  const rest = text.replace(/API field: \S+/g, '').replaceAll(column, '');
  return (rest.match(/[A-Za-z]{2,}/g) ?? []).length >= 3;
}

describe('saysMore', () => {
  it.each<[string | null, string, boolean]>([
    [null, 'salesorder_number', false],
    ['API field: salesorder_number.', 'salesorder_number', false],
    ['salesorder_number as sent. API field: salesorder_number.', 'salesorder_number', false],
    ['The order’s number as the customer sees it. API field: salesorder_number.', 'salesorder_number', true],
  ])('%s', (text, column, expected) => {
    expect(saysMore(text, column)).toBe(expected);
  });
});

/** Columns a BI user reads as data: not svcsync's own bookkeeping (`_raw`, `_synced_at`, `_position`, ...). */
const isData = (column: string): boolean => !column.startsWith('_');

describe.each(DIALECTS)('what a BI user sees on %s is described, views included', (dialect) => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  async function rows<T>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await wh.db.executeQuery<T>(CompiledQuery.raw(text, params))).rows;
  }

  /** The warehouse's views and their columns, in order, as the database itself reports them. */
  async function actualViews(): Promise<Map<string, Array<{ name: string; type: string }>>> {
    const found =
      dialect === 'postgres'
        ? await rows<{ t: string; name: string; type: string }>(
            `SELECT c.table_name AS t, c.column_name AS name, c.data_type AS type FROM information_schema.columns c
               JOIN information_schema.views v ON v.table_schema = c.table_schema AND v.table_name = c.table_name
              WHERE c.table_schema = current_schema() ORDER BY c.table_name, c.ordinal_position`,
          )
        : await rows<{ t: string; name: string; type: string }>(
            `SELECT m.name AS t, p.name AS name, p.type AS type FROM sqlite_master m, pragma_table_info(m.name) p
              WHERE m.type = 'view' ORDER BY m.name, p.cid`,
          );
    const out = new Map<string, Array<{ name: string; type: string }>>();
    for (const r of found) out.set(r.t, [...(out.get(r.t) ?? []), { name: r.name, type: r.type }]);
    return out;
  }

  it('every view is in _svcsync_tables (kind view) and _svcsync_columns, column for column, and described', async () => {
    tw = await migratedWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);
    const listed = await rows<{ table_name: string; description: string; stream: string }>(
      "SELECT table_name, description, stream FROM _svcsync_tables WHERE kind = 'view' ORDER BY table_name",
    );
    const actual = await actualViews();
    expect(listed.map((v) => v.table_name)).toEqual([...actual.keys()].sort());
    expect(listed.length).toBe(views.length);
    for (const v of listed) {
      expect(saysMore(v.description, v.table_name), `${v.table_name}: ${v.description}`).toBe(true);
      expect(v.stream, v.table_name).toMatch(/^[a-z]+\.[a-z_]+(, [a-z]+\.[a-z_]+)*$/);
    }
    const columns = await rows<ColumnRow>(
      `SELECT c.* FROM _svcsync_columns c JOIN _svcsync_tables t ON t.table_name = c.table_name WHERE t.kind = 'view'
        ORDER BY c.table_name, c.position`,
    );
    for (const [view, shown] of actual) {
      const own = columns.filter((c) => c.table_name === view);
      expect(
        own.map((c) => c.column_name),
        `${view}: the dictionary's columns are the view's`,
      ).toEqual(shown.map((c) => c.name));
      // Postgres reports each column's type: the dictionary's must be it.
      if (dialect === 'postgres') {
        const name = (type: string): string => (type === 'timestamp with time zone' ? 'timestamptz' : type);
        expect(
          own.map((c) => c.type),
          `${view}: the dictionary's types are the view's`,
        ).toEqual(shown.map((c) => name(c.type)));
      }
    }
    // A live view's columns join as its table's do, to the live views: a BI user shown only the views joins them alone.
    const joins = columns.filter((c) => c.references_table !== null);
    expect(joins.length).toBe(rels.reduce((n, r) => n + r.fromColumns.filter((c) => c !== 'organization_id').length, 0));
    for (const r of rels) {
      r.fromColumns.forEach((column, i) => {
        if (column === 'organization_id') return;
        const row = joins.find((c) => c.table_name === `${r.fromTable}_live` && c.column_name === column);
        expect([row?.references_table, row?.references_column, row?.relationship], `${r.fromTable}_live.${column}`).toEqual([
          `${r.toTable}_live`,
          r.toColumns[i],
          r.kind,
        ]);
        expect(actual.has(`${r.toTable}_live`), `${r.toTable}_live exists`).toBe(true);
      });
    }
  });

  it('at least 90 % of the data columns of the tables and views have a description that says more than the field name', async () => {
    tw = await migratedWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);
    const columns = (await rows<ColumnRow>('SELECT * FROM _svcsync_columns')).filter((c) => isData(c.column_name));
    const described = columns.filter((c) => saysMore(c.description, c.column_name));
    const viewColumns = columns.filter((c) => views.some((v) => v.name === c.table_name));
    expect(viewColumns.length).toBeGreaterThan(800);
    expect(described.length / columns.length).toBeGreaterThanOrEqual(0.9);
    const reports = columns.filter((c) => c.table_name.startsWith('report_'));
    expect(reports.length).toBeGreaterThan(50);
    expect(reports.filter((c) => !saysMore(c.description, c.column_name)).map((c) => `${c.table_name}.${c.column_name}`)).toEqual([]);
  });
});

describe('on Postgres, a BI tool reading comments sees the same descriptions', () => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  it('every view carries a comment, and 90 % of the data columns of tables and views one that says more than the field name', async () => {
    tw = await migratedWarehouse('postgres');
    wh = await tw.open();
    await migrateToLatest(wh);
    const run = async <T>(text: string): Promise<T[]> => (await wh.db.executeQuery<T>(CompiledQuery.raw(text))).rows;
    const relations = await run<{ name: string; kind: string; comment: string | null }>(
      `SELECT c.relname AS name, c.relkind AS kind, obj_description(c.oid, 'pg_class') AS comment FROM pg_class c
        WHERE c.relkind IN ('r', 'v') AND c.relnamespace = current_schema()::regnamespace`,
    );
    const viewsFound = relations.filter((r) => r.kind === 'v');
    expect(viewsFound.length).toBe(views.length);
    for (const v of viewsFound) expect(saysMore(v.comment, v.name), `${v.name}: ${v.comment}`).toBe(true);
    const columns = await run<{ t: string; c: string; comment: string | null }>(
      `SELECT c.relname AS t, a.attname AS c, col_description(c.oid, a.attnum) AS comment
         FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE c.relkind IN ('r', 'v') AND c.relnamespace = current_schema()::regnamespace
          AND c.relname NOT LIKE '\\_svcsync\\_%' AND a.attname NOT LIKE '\\_%'`,
    );
    const onViews = columns.filter((c) => viewsFound.some((v) => v.name === c.t));
    expect(onViews.length).toBeGreaterThan(800);
    const described = columns.filter((c) => saysMore(c.comment, c.c));
    expect(described.length / columns.length).toBeGreaterThanOrEqual(0.9);
    expect(onViews.filter((c) => !saysMore(c.comment, c.c)).length / onViews.length).toBeLessThanOrEqual(0.1);
  });
});
