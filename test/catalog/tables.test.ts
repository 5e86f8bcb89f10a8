import { describe, expect, it } from 'vitest';
import { CATALOG, sqlType, tableDefinitions, type TableDef } from '../../src/catalog/index.js';
import type { ColumnType, StreamSpec } from '../../src/catalog/types.js';

const DEFS = tableDefinitions(CATALOG);
function table(name: string): TableDef {
  const t = DEFS.find((d) => d.name === name);
  if (!t) throw new Error(`no table ${name}`);
  return t;
}
const names = (t: TableDef): string[] => t.columns.map((c) => c.name);
const column = (t: TableDef, name: string) => t.columns.find((c) => c.name === name);

describe('sqlType', () => {
  const cases: [ColumnType, string, string][] = [
    ['id', 'text', 'text'],
    ['text', 'text', 'text'],
    ['integer', 'integer', 'bigint'],
    ['number', 'real', 'numeric'],
    ['hours', 'real', 'numeric'],
    ['boolean', 'integer', 'boolean'],
    ['date', 'text', 'date'],
    ['timestamp', 'text', 'timestamptz'],
    ['json', 'text', 'jsonb'],
  ];
  it.each(cases)('%s is %s in SQLite and %s in Postgres', (type, sqlite, postgres) => {
    expect(sqlType(type, 'sqlite')).toBe(sqlite);
    expect(sqlType(type, 'postgres')).toBe(postgres);
  });
});

describe('tableDefinitions', () => {
  it('lists each stream table before its child tables', () => {
    const order = DEFS.map((d) => d.name);
    for (const d of DEFS) {
      if (d.parentTable !== undefined) expect(order.indexOf(d.parentTable)).toBeLessThan(order.indexOf(d.name));
    }
  });

  it('lays out inventory_sales_orders: organization_id, fields, discount parts, system columns', () => {
    const t = table('inventory_sales_orders');
    expect(t.stream).toBe('inventory.sales_orders');
    expect(t.primaryKey).toEqual(['organization_id', 'salesorder_id']);
    const cols = names(t);
    expect(cols.slice(0, 2)).toEqual(['organization_id', 'salesorder_id']);
    expect(cols.slice(-6)).toEqual(['_raw', '_raw_detail', '_hash', '_synced_at', '_run_id', '_deleted_at']);
    expect(cols.slice(cols.indexOf('discount'), cols.indexOf('discount') + 3)).toEqual([
      'discount',
      'discount__amount',
      'discount__percentage',
    ]);
    expect(cols).toEqual(
      expect.arrayContaining(['billing_address__city', 'shipping_address__fax', 'last_modified_time', 'shipment_days', 'bcy_total']),
    );
    expect(cols).not.toContain('line_items');
    expect(column(t, 'discount__percentage')).toMatchObject({ type: 'number', nullable: true, source: 'discount' });
    expect(column(t, 'billing_address__city')).toMatchObject({ type: 'text', source: 'billing_address.city' });
    expect(column(t, 'organization_id')).toMatchObject({ type: 'id', nullable: false, source: '(svcsync)' });
    expect(column(t, 'salesorder_id')).toMatchObject({ type: 'id', nullable: false });
    expect(column(t, 'last_modified_time')?.type).toBe('timestamp');
    expect(column(t, '_synced_at')).toMatchObject({ type: 'timestamp', nullable: false });
    expect(column(t, '_deleted_at')).toMatchObject({ type: 'timestamp', nullable: true });
    expect(column(t, '_raw')?.type).toBe('json');
    expect(column(t, '_hash')?.type).toBe('text');
    expect(new Set(cols).size).toBe(cols.length);
  });

  it('lays out inventory_sales_orders__line_items keyed by line_item_id', () => {
    const t = table('inventory_sales_orders__line_items');
    expect(t.parentTable).toBe('inventory_sales_orders');
    expect(t.primaryKey).toEqual(['organization_id', 'salesorder_id', 'line_item_id']);
    const cols = names(t);
    expect(cols.slice(0, 4)).toEqual(['organization_id', 'salesorder_id', 'line_item_id', '_position']);
    expect(cols.slice(-3)).toEqual(['_synced_at', '_run_id', '_deleted_at']);
    expect(cols).toEqual(
      expect.arrayContaining(['item_id', 'rate', 'quantity', 'item_total', 'discount', 'discount__amount', 'discount__percentage']),
    );
    expect(column(t, 'rate')).toMatchObject({ type: 'number', nullable: true, source: 'line_items[].rate' });
    expect(column(t, '_position')).toMatchObject({ type: 'integer', nullable: false });
    expect(column(t, 'salesorder_id')).toMatchObject({ nullable: false, source: 'salesorder_id' });
  });

  it('keys position-keyed children by _position', () => {
    expect(table('inventory_sales_orders__taxes').primaryKey).toEqual(['organization_id', 'salesorder_id', '_position']);
    expect(names(table('books_vendor_credits__acquisition_vat_summary'))).toEqual([
      'organization_id',
      'vendor_credit_id',
      '_position',
      'tax__tax_name',
      'tax__tax_amount',
      '_synced_at',
      '_run_id',
      '_deleted_at',
    ]);
  });

  it('lays out billing_plans, addons and the add-ons\u2019 price brackets', () => {
    const plans = table('billing_plans');
    expect(plans.primaryKey).toEqual(['organization_id', 'plan_code']);
    expect(names(plans)).not.toContain('_raw_detail');
    expect(names(plans).slice(-5)).toEqual(['_raw', '_hash', '_synced_at', '_run_id', '_deleted_at']);
    expect(column(plans, 'updated_time')?.type).toBe('timestamp');
    expect(column(plans, 'billing_cycles')?.type).toBe('integer');
    expect(column(plans, 'recurring_price')?.type).toBe('number');

    const addons = table('billing_plans__addons');
    expect(addons.primaryKey).toEqual(['organization_id', 'plan_code', 'addon_code']);
    expect(names(addons)).toEqual([
      'organization_id',
      'plan_code',
      'addon_code',
      '_position',
      'name',
      'status',
      'pricing_scheme',
      'unit_name',
      '_synced_at',
      '_run_id',
      '_deleted_at',
    ]);

    const brackets = table('billing_plans__addons__price_brackets');
    expect(brackets.parentTable).toBe('billing_plans__addons');
    expect(brackets.primaryKey).toEqual(['organization_id', 'plan_code', 'addon_code', '_position']);
    expect(names(brackets)).toEqual([
      'organization_id',
      'plan_code',
      'addon_code',
      '_position',
      'start_quantity',
      'end_quantity',
      'price',
      '_synced_at',
      '_run_id',
      '_deleted_at',
    ]);
    expect(column(brackets, 'price')).toMatchObject({ type: 'number', source: 'addons[].price_brackets[].price' });
    expect(column(brackets, 'addon_code')).toMatchObject({ nullable: false, source: 'addons[].addon_code' });
  });

  it('lays out invoice_tasks with hours columns', () => {
    const t = table('invoice_tasks');
    expect(t.primaryKey).toEqual(['organization_id', 'task_id']);
    expect(names(t)).toEqual([
      'organization_id',
      'task_id',
      'project_id',
      'currency_id',
      'customer_id',
      'task_name',
      'project_name',
      'customer_name',
      'billed_hours',
      'log_time',
      'un_billed_hours',
      'description',
      'rate',
      'status',
      'is_billable',
      '_raw',
      '_hash',
      '_synced_at',
      '_run_id',
      '_deleted_at',
    ]);
    for (const h of ['billed_hours', 'log_time', 'un_billed_hours']) expect(column(t, h)?.type).toBe('hours');
    expect(column(t, 'project_id')?.type).toBe('id');
  });

  it('keys organizations by organization_id alone, read from the record', () => {
    const t = table('billing_organizations');
    expect(t.primaryKey).toEqual(['organization_id']);
    expect(names(t).filter((n) => n === 'organization_id')).toHaveLength(1);
    expect(column(t, 'organization_id')).toMatchObject({ source: 'organization_id', nullable: false });
    expect(column(t, 'account_created_date')?.type).toBe('date');
  });

  it('drops a child field that repeats a parent key column (the parent key wins)', () => {
    const comments = table('inventory_vendor_credits__comments');
    expect(names(comments).filter((n) => n === 'vendor_credit_id')).toHaveLength(1);
    expect(column(comments, 'vendor_credit_id')?.source).toBe('vendor_credit_id');
    expect(table('inventory_vendor_credits__bills_credited').primaryKey).toEqual([
      'organization_id',
      'vendor_credit_id',
      'vendor_credit_bill_id',
    ]);
  });

  it('flattens nested objects with __', () => {
    expect(names(table('inventory_contact_persons'))).toEqual(
      expect.arrayContaining(['communication_preference__is_sms_enabled', 'communication_preference__is_whatsapp_enabled']),
    );
    expect(names(table('inventory_contacts'))).toEqual(
      expect.arrayContaining(['default_templates__invoice_template_id', 'billing_address__street2']),
    );
    const expenses = table('billing_recurring_expenses');
    expect(column(expenses, 'line_item__tax_amount')).toMatchObject({ type: 'number', source: 'line_item.tax_amount' });
    expect(names(expenses)).not.toContain('line_item');
  });

  it('keeps arrays of scalars as json columns', () => {
    expect(column(table('books_webhooks'), 'events')?.type).toBe('json');
    expect(column(table('inventory_vendor_credits__line_items'), 'serial_numbers')?.type).toBe('json');
  });

  it('hands a position-keyed parent\u2019s _position down as {field}__position', () => {
    const stream: StreamSpec = {
      name: 'docs',
      family: 'books',
      path: '/docs',
      recordsKey: ['docs'],
      primaryKey: 'doc_id',
      paginated: true,
      kind: 'transaction',
      columns: [{ name: 'doc_id', type: 'id' }],
      children: [
        {
          field: 'sections',
          columns: [{ name: 'title', type: 'text' }],
          children: [{ field: 'notes', key: 'note_id', columns: [{ name: 'note_id', type: 'id' }] }],
        },
      ],
      spec: 'test',
      description: 'Docs.',
    };
    const defs = tableDefinitions([stream]);
    const notes = defs.find((d) => d.name === 'books_docs__sections__notes');
    expect(notes?.primaryKey).toEqual(['organization_id', 'doc_id', 'sections__position', 'note_id']);
    expect(notes?.columns.map((c) => c.name)).toEqual([
      'organization_id',
      'doc_id',
      'sections__position',
      'note_id',
      '_position',
      '_synced_at',
      '_run_id',
      '_deleted_at',
    ]);
    expect(notes?.columns.find((c) => c.name === 'sections__position')).toMatchObject({ type: 'integer', nullable: false });
  });

  it('makes every primary-key column not null and every table name unique', () => {
    for (const t of DEFS) {
      for (const k of t.primaryKey) expect(column(t, k)?.nullable, `${t.name}.${k}`).toBe(false);
    }
    expect(new Set(DEFS.map((d) => d.name)).size).toBe(DEFS.length);
  });
});
