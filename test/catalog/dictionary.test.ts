import { describe, expect, it } from 'vitest';
import { CATALOG, renderDictionary, renderWarehouseMarkdown, tableDefinitions } from '../../src/catalog/index.js';
import { historyTableDefinitions } from '../../src/catalog/history.js';
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

describe('the history tables in svcsync schema', () => {
  const HISTORY = historyTableDefinitions(CATALOG);

  it('there is one for every table but the organization lists’, keyed by the table’s key and _valid_from', () => {
    const lists = new Set(CATALOG.filter((s) => s.organizationList).map((s) => `${s.family}.${s.name}`));
    expect(HISTORY.map((h) => h.table)).toEqual(DEFS.filter((d) => !lists.has(d.stream)).map((d) => d.name));
    const lines = HISTORY.find((h) => h.name === 'inventory_sales_orders__line_items_history')!;
    expect(lines.primaryKey).toEqual(['organization_id', 'salesorder_id', 'line_item_id', '_valid_from']);
    expect(lines.parentTable).toBe('inventory_sales_orders_history');
    expect(HISTORY.find((h) => h.name === 'billing_plans_history')!.changeColumn).toBe('updated_time');
    expect(HISTORY.find((h) => h.name === 'invoice_projects_history')!.changeColumn).toBeNull();
  });

  it('json lists every one with its columns: the table’s, then _valid_from, _valid_to and _change, each described', () => {
    const doc = JSON.parse(renderDictionary(DEFS, 'postgres', 'json', VIEWS, {}, HISTORY)) as {
      historyTables: { name: string; table: string; asOf: string; columns: { name: string; type: string; description: string }[] }[];
    };
    expect(doc.historyTables.map((h) => h.name)).toEqual(HISTORY.map((h) => h.name));
    const orders = doc.historyTables.find((h) => h.table === 'inventory_sales_orders')!;
    const table = DEFS.find((d) => d.name === 'inventory_sales_orders')!;
    expect(orders.columns.map((c) => c.name)).toEqual([...table.columns.map((c) => c.name), '_valid_from', '_valid_to', '_change']);
    expect(orders.asOf).toBe('svcsync_as_of_inventory_sales_orders');
    expect(orders.columns.find((c) => c.name === '_valid_from')).toMatchObject({
      type: 'timestamptz',
      description: expect.stringContaining('last_modified_time') as string,
    });
    for (const h of doc.historyTables) for (const c of h.columns) expect(c.description, `${h.name}.${c.name}`).toBeTruthy();
  });

  it('text explains the three columns once and indexes every history table with when its versions begin', () => {
    const text = renderDictionary(DEFS, 'sqlite', 'text', VIEWS, {}, HISTORY);
    expect(text).toContain('## History tables');
    expect(text).toMatch(/\| `_change`\s+\| text\s+\| no\s+\| What began this version: created/);
    expect(text).toMatch(
      /\| billing_plans_history\s+\| billing_plans\s+\| billing.plans\s+\| its updated_time\s+\| svcsync_as_of_billing_plans\(t\)/,
    );
    expect(text).toMatch(/\| invoice_tasks_history\s+\| invoice_tasks\s+\| invoice.tasks\s+\| when svcsync writes it/);
    expect(text).toMatch(
      /\| inventory_sales_orders__line_items_history\s+\| inventory_sales_orders__line_items\s+\| inventory.sales_orders\s+\| with its record’s/,
    );
    expect(renderDictionary(DEFS, 'sqlite', 'text', VIEWS)).not.toContain('History tables');
  });
});
