import { describe, expect, it } from 'vitest';
import { CATALOG, renderDictionary, renderWarehouseMarkdown, tableDefinitions } from '../../src/catalog/index.js';
import { viewDefinitions } from '../../src/catalog/views.js';

const DEFS = tableDefinitions(CATALOG);
const VIEWS = viewDefinitions(CATALOG);

describe('renderDictionary', () => {
  it('json lists every table and column with the dialect\u2019s type and its source', () => {
    const doc = JSON.parse(renderDictionary(DEFS, 'postgres', 'json')) as {
      dialect: string;
      tables: { name: string; parent: string | null; primaryKey: string[]; columns: { name: string; type: string; source: string }[] }[];
    };
    expect(doc.dialect).toBe('postgres');
    expect(doc.tables.map((t) => t.name)).toEqual(DEFS.map((d) => d.name));
    const so = doc.tables.find((t) => t.name === 'inventory_sales_orders');
    expect(so?.primaryKey).toEqual(['organization_id', 'salesorder_id']);
    expect(so?.columns.find((c) => c.name === 'last_modified_time')).toMatchObject({ type: 'timestamptz', source: 'last_modified_time' });
    expect(doc.tables.find((t) => t.name === 'billing_plans__addons__price_brackets')?.parent).toBe('billing_plans__addons');
  });

  it('text shows each table\u2019s description, key, parent and columns in the dialect\u2019s types', () => {
    const text = renderDictionary(DEFS, 'sqlite', 'text');
    expect(text).toContain('## inventory_sales_orders__line_items');
    expect(text).toContain('- primary key: organization_id, salesorder_id, line_item_id');
    expect(text).toContain('- parent: inventory_sales_orders');
    expect(text).toMatch(/\| last_modified_time\s+\| text\s+\| yes\s+\| last_modified_time/);
    expect(text).toMatch(/\| billing_address__city\s+\| text\s+\| yes\s+\| billing_address\.city/);
    expect(renderDictionary(DEFS, 'postgres', 'text')).toMatch(/\| last_modified_time\s+\| timestamptz/);
  });
});

describe('the views in svcsync schema', () => {
  it('json lists every view with its columns, types and descriptions; text shows each report view\u2019s columns', () => {
    const doc = JSON.parse(renderDictionary(DEFS, 'postgres', 'json', VIEWS)) as {
      views: { name: string; table: string | null; columns: { name: string; type: string; description: string }[] }[];
    };
    expect(doc.views.map((v) => v.name)).toEqual(VIEWS.map((v) => v.name));
    const lines = doc.views.find((v) => v.name === 'report_sales_order_lines')!;
    expect(lines.table).toBeNull();
    expect(lines.columns.find((c) => c.name === 'rate_bcy')).toMatchObject({
      type: 'numeric',
      description: expect.stringMatching(/base currency/) as string,
    });
    expect(doc.views.find((v) => v.name === 'inventory_sales_orders_live')?.table).toBe('inventory_sales_orders');
    const text = renderDictionary(DEFS, 'sqlite', 'text', VIEWS);
    expect(text).toContain('## report_unbilled_hours');
    expect(text).toMatch(/\| `unbilled_hours`\s+\| real\s+\| yes/);
    expect(renderWarehouseMarkdown(DEFS, VIEWS)).toMatch(/\| `unbilled_hours`\s+\| real\s+\| numeric\s+\| yes/);
  });
});

describe('renderWarehouseMarkdown', () => {
  it('indexes every table and gives both dialects\u2019 types', () => {
    const md = renderWarehouseMarkdown(DEFS);
    for (const d of DEFS) expect(md).toContain(`### ${d.name}`);
    expect(md).toContain('[billing_plans](#billing_plans)');
    expect(md).toMatch(/\| `event_time`\s+\| text\s+\| timestamptz\s+\| yes\s+\| `event_time`/);
  });
});
