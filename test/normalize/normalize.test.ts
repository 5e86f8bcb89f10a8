import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { findStream, tableDefinitions } from '../../src/catalog/index.js';
import type { Source, StreamSpec } from '../../src/catalog/types.js';
import { FatalError } from '../../src/core/errors.js';
import { columnsFor, listIdentity, normalizeRecord, type ChildRows, type NormalizedRecord } from '../../src/normalize/normalize.js';
import {
  BOOKS_VENDOR_CREDIT_DETAIL,
  CONTACT_PERSON,
  EVENT_DETAIL,
  EVENT_LIST_ITEM,
  INVENTORY_VENDOR_CREDIT_DETAIL,
  ORGANIZATION,
  PLAN,
  RECORDS_BY_STREAM,
  RECURRING_EXPENSE,
  SALES_ORDER_DETAIL,
  SALES_ORDER_LIST_ITEM,
  TASK,
  WEBHOOK,
} from './fixtures.js';

const ORG = '10234695';
const SYNCED_AT = '2026-11-21T00:00:00.000Z';

function stream(name: string): StreamSpec {
  const s = findStream(name);
  if (!s) throw new Error(`no stream ${name}`);
  return s;
}

function run(name: string, raw: object, source: Source = 'list', extra: { parentId?: string } = {}): NormalizedRecord {
  return normalizeRecord(stream(name), raw as Record<string, unknown>, { organizationId: ORG, source, syncedAt: SYNCED_AT, ...extra });
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

function child(rec: NormalizedRecord, table: string): ChildRows {
  const entry = rec.children.find((c) => c.table === table);
  if (!entry) throw new Error(`no child rows for ${table}; have ${rec.children.map((c) => c.table).join(', ')}`);
  return entry;
}

/** Every row has exactly the columns it declares, and those are its table's columns in order. */
function expectShapes(rec: NormalizedRecord): void {
  expect(Object.keys(rec.row).sort()).toEqual([...rec.columns].sort());
  const defs = tableDefinitions([findStream(tableStream(rec.table)) as StreamSpec]);
  const tableCols = defs.find((d) => d.name === rec.table)?.columns.map((c) => c.name) ?? [];
  expect(rec.columns).toEqual(tableCols.filter((c) => rec.columns.includes(c)));
  for (const c of rec.children) {
    expect(c.columns).toEqual(defs.find((d) => d.name === c.table)?.columns.map((x) => x.name));
    expect(c.keyColumns).toEqual(defs.find((d) => d.name === c.table)?.primaryKey);
    for (const r of c.rows) expect(Object.keys(r).sort()).toEqual([...c.columns].sort());
  }
}
function tableStream(table: string): string {
  const [family, ...rest] = table.split('__')[0]!.split('_');
  return `${family}.${rest.join('_')}`;
}

describe('normalizeRecord: inventory sales order', () => {
  const list = run('inventory.sales_orders', SALES_ORDER_LIST_ITEM, 'list');
  const detail = run('inventory.sales_orders', SALES_ORDER_DETAIL, 'detail');

  it('keys the row by organization and the 19-digit id exactly as sent', () => {
    expect(list.table).toBe('inventory_sales_orders');
    expect(list.id).toBe('4600000000123456789');
    expect(list.key).toEqual({ organization_id: ORG, salesorder_id: '4600000000123456789' });
    expect(detail.key).toEqual(list.key);
  });

  it('converts the list item\u2019s values and keeps unknown fields only in _raw', () => {
    expect(list.row).toMatchObject({
      organization_id: ORG,
      customer_id: '460000000001234',
      shipment_date: null,
      shipment_days: 3,
      quantity_invoiced: 0,
      total: 1250.5,
      is_backorder: false,
      created_time: '2026-11-20T04:45:30.000Z',
      last_modified_time: '2026-11-21T17:00:00.000Z',
      _synced_at: SYNCED_AT,
      _run_id: null,
      _deleted_at: null,
    });
    expect(list.row).not.toHaveProperty('unknown_field');
    expect(list.row._raw).toBe(JSON.stringify(SALES_ORDER_LIST_ITEM));
    expect(list.hash).toBe(createHash('sha1').update(JSON.stringify(SALES_ORDER_LIST_ITEM)).digest('hex'));
    expect(list.row._hash).toBe(list.hash);
    expect(list.changedAt).toBe(Date.UTC(2026, 10, 21, 17, 0, 0));
    expect(list.warnings).toEqual([]);
    expectShapes(list);
  });

  it('writes list-only and detail-only columns from their own response', () => {
    expect(list.columns).toContain('shipment_days');
    expect(list.columns).toContain('_raw');
    expect(list.columns).toContain('_hash');
    expect(list.columns).not.toContain('discount');
    expect(list.columns).not.toContain('billing_address__city');
    expect(list.columns).not.toContain('_raw_detail');
    expect(detail.columns).not.toContain('shipment_days');
    expect(detail.columns).not.toContain('_raw');
    expect(detail.columns).not.toContain('_hash');
    expect(detail.columns).toEqual(
      expect.arrayContaining([
        'organization_id',
        'salesorder_id',
        'discount',
        'billing_address__city',
        'status',
        '_raw_detail',
        '_synced_at',
        '_run_id',
        '_deleted_at',
      ]),
    );
    expect(columnsFor(stream('inventory.sales_orders'), 'detail')).toEqual(detail.columns);
    expect(detail.row._raw_detail).toBe(JSON.stringify(SALES_ORDER_DETAIL));
    expectShapes(detail);
  });

  it('splits the discount and flattens the addresses', () => {
    expect(detail.row).toMatchObject({
      discount: '12.5%',
      discount__amount: null,
      discount__percentage: 12.5,
      shipping_charge: 10,
      billing_address__city: 'Portland',
      billing_address__fax: '',
      shipping_address__city: 'Seattle',
      shipping_address__zip: null,
    });
  });

  it('emits the list\u2019s custom fields and the detail\u2019s line items, taxes, documents and contact persons', () => {
    expect(list.children.map((c) => c.table)).toEqual(['inventory_sales_orders__custom_fields']);
    expect(child(list, 'inventory_sales_orders__custom_fields').rows).toEqual([
      {
        organization_id: ORG,
        salesorder_id: '4600000000123456789',
        custom_field_id: '46000000000999',
        _position: 0,
        index: 1,
        label: 'Region',
        value: 'West',
        _synced_at: SYNCED_AT,
        _run_id: null,
        _deleted_at: null,
      },
      {
        organization_id: ORG,
        salesorder_id: '4600000000123456789',
        custom_field_id: '46000000000998',
        _position: 1,
        index: 2,
        label: 'Priority',
        value: '3',
        _synced_at: SYNCED_AT,
        _run_id: null,
        _deleted_at: null,
      },
    ]);
    expect(detail.children.map((c) => c.table).sort()).toEqual([
      'inventory_sales_orders__contact_persons_associated',
      'inventory_sales_orders__documents',
      'inventory_sales_orders__line_items',
      'inventory_sales_orders__taxes',
    ]);

    const lines = child(detail, 'inventory_sales_orders__line_items');
    expect(lines.parentKey).toEqual({ organization_id: ORG, salesorder_id: '4600000000123456789' });
    expect(lines.keyColumns).toEqual(['organization_id', 'salesorder_id', 'line_item_id']);
    expect(
      lines.rows.map((r) => [r.line_item_id, r._position, r.rate, r.quantity, r.discount, r.discount__amount, r.discount__percentage]),
    ).toEqual([
      ['460000000005001', 0, 100, 10, '25', 25, null],
      ['460000000005002', 1, null, 2, '5%', null, 5],
    ]);
    expect(detail.warnings).toEqual([
      {
        table: 'inventory_sales_orders__line_items',
        id: '4600000000123456789',
        field: 'line_items[1].rate',
        kind: 'value',
        message: expect.stringContaining('"n/a"') as unknown,
      },
    ]);

    expect(child(detail, 'inventory_sales_orders__taxes').rows.map((r) => [r._position, r.tax_name, r.tax_amount])).toEqual([
      [0, 'Sales Tax', 30.5],
      [1, 'County', 4.25],
    ]);
    expect(child(detail, 'inventory_sales_orders__documents').rows[0]).toMatchObject({
      document_id: '460000000007001',
      file_size: 2048,
      can_send_in_mail: true,
    });
    expect(child(detail, 'inventory_sales_orders__contact_persons_associated').rows[0]).toMatchObject({
      contact_person_id: '460000000003001',
      communication_preference__is_email_enabled: true,
      communication_preference__is_whatsapp_enabled: false,
    });
  });
});

describe('normalizeRecord: row lineage', () => {
  it('writes the run id to the record row and every child row, and null outside a run', () => {
    const rec = normalizeRecord(stream('inventory.sales_orders'), SALES_ORDER_DETAIL, {
      organizationId: ORG,
      source: 'detail',
      syncedAt: SYNCED_AT,
      runId: '20261121T000000-abcd1234',
    });
    expect(rec.row._run_id).toBe('20261121T000000-abcd1234');
    const childRows = rec.children.flatMap((c) => c.rows);
    expect(childRows.length).toBeGreaterThan(0);
    expect(new Set(childRows.map((r) => r['_run_id']))).toEqual(new Set(['20261121T000000-abcd1234']));
    expect(run('inventory.sales_orders', SALES_ORDER_DETAIL, 'detail').row._run_id).toBeNull();
  });
});

describe('normalizeRecord: books vendor credit detail', () => {
  const rec = run('books.vendor_credits', BOOKS_VENDOR_CREDIT_DETAIL, 'detail');

  it('unwraps the VAT summaries\u2019 tax objects', () => {
    expect(child(rec, 'books_vendor_credits__acquisition_vat_summary').rows).toEqual([
      {
        organization_id: ORG,
        vendor_credit_id: '460000000010001',
        _position: 0,
        tax__tax_name: 'VAT 20%',
        tax__tax_amount: 20,
        _synced_at: SYNCED_AT,
        _run_id: null,
        _deleted_at: null,
      },
    ]);
  });

  it('emits an empty entry for an empty array and none for an absent one', () => {
    const reverse = child(rec, 'books_vendor_credits__reverse_charge_vat_summary');
    expect(reverse.rows).toEqual([]);
    expect(reverse.parentKey).toEqual({ organization_id: ORG, vendor_credit_id: '460000000010001' });
    const tables = rec.children.map((c) => c.table);
    expect(tables).not.toContain('books_vendor_credits__documents');
    expect(tables).not.toContain('books_vendor_credits__custom_fields');
  });

  it('writes line items with their tags as grandchildren, keyed through the line item', () => {
    const lines = child(rec, 'books_vendor_credits__line_items');
    expect(lines.rows[0]).toMatchObject({
      line_item_id: '460000000012001',
      project_id: '460000000014001',
      acquisition_vat_percentage: 20,
      serial_numbers: '["SN1","SN2"]',
    });
    const tags = child(rec, 'books_vendor_credits__line_items__tags');
    expect(tags.parentKey).toEqual({ organization_id: ORG, vendor_credit_id: '460000000010001' });
    expect(tags.keyColumns).toEqual(['organization_id', 'vendor_credit_id', 'line_item_id', 'tag_id']);
    expect(tags.rows.map((r) => [r.line_item_id, r.tag_id, r._position, r.tag_option_id])).toEqual([
      ['460000000012001', '460000000016001', 0, '460000000017001'],
      ['460000000012001', '460000000016002', 1, '460000000017002'],
    ]);
  });

  it('takes the parent\u2019s key over an element\u2019s copy of it, and leaves arrays other streams read in _raw_detail', () => {
    const comments = child(rec, 'books_vendor_credits__comments');
    expect(comments.rows[0]).toMatchObject({ vendor_credit_id: '460000000010001', comment_id: '460000000018001', time: '8:00 AM' });
    expect(rec.children.map((c) => c.table).some((t) => t.includes('refunds') || t.includes('bills_credited'))).toBe(false);
    expect((JSON.parse(rec.row._raw_detail as string) as { vendor_credit_refunds?: unknown }).vendor_credit_refunds).toHaveLength(1);
    expectShapes(rec);
  });

  it('reads the list record without detail-only columns or children', () => {
    const list = run('books.vendor_credits', {
      vendor_credit_id: '1',
      total: '5',
      last_modified_time: '2026-10-02T08:00:00+0100',
      line_items: [{ line_item_id: 'x' }],
    });
    expect(list.children).toEqual([]);
    expect(list.columns).not.toContain('exchange_rate');
    expect(list.row.total).toBe(5);
  });
});

describe('normalizeRecord: billing plan', () => {
  const rec = run('billing.plans', PLAN);

  it('converts the plan and keys it by plan_code', () => {
    expect(rec.key).toEqual({ organization_id: ORG, plan_code: 'GOLD-M' });
    expect(rec.row).toMatchObject({
      billing_cycles: -1,
      trial_period: 14,
      setup_fee: 0,
      recurring_price: 49.99,
      sat_item_key_code: '01010101',
      updated_time: '2026-11-01T12:00:00.000Z',
    });
    expect(rec.changedAt).toBe(Date.UTC(2026, 10, 1, 12));
  });

  it('writes add-ons and every add-on\u2019s price brackets under the plan', () => {
    expect(child(rec, 'billing_plans__addons').rows.map((r) => [r.addon_code, r._position, r.name])).toEqual([
      ['SEATS', 0, 'Extra seats'],
      ['STORAGE', 1, 'Storage'],
    ]);
    const brackets = child(rec, 'billing_plans__addons__price_brackets');
    expect(brackets.parentKey).toEqual({ organization_id: ORG, plan_code: 'GOLD-M' });
    expect(brackets.keyColumns).toEqual(['organization_id', 'plan_code', 'addon_code', '_position']);
    expect(brackets.rows.map((r) => [r.addon_code, r._position, r.start_quantity, r.end_quantity, r.price])).toEqual([
      ['SEATS', 0, 1, 10, 5],
      ['SEATS', 1, 11, null, 4.5],
      ['STORAGE', 0, null, null, 2],
    ]);
    expect(rec.children.map((c) => c.table)).not.toContain('billing_plans__custom_fields');
    expectShapes(rec);
  });

  it('clears grandchildren when the parent array is empty, and leaves them when no element carries theirs', () => {
    const empty = run('billing.plans', { ...PLAN, addons: [] });
    expect(child(empty, 'billing_plans__addons').rows).toEqual([]);
    expect(child(empty, 'billing_plans__addons__price_brackets').rows).toEqual([]);
    const bare = run('billing.plans', { ...PLAN, addons: [{ addon_code: 'SEATS' }] });
    expect(child(bare, 'billing_plans__addons').rows).toHaveLength(1);
    expect(bare.children.map((c) => c.table)).not.toContain('billing_plans__addons__price_brackets');
  });
});

describe('normalizeRecord: keys of child elements', () => {
  it('keys an element without its key, or repeating one, by #position with a warning', () => {
    const rec = run('billing.plans', {
      plan_code: 'P',
      addons: [{ addon_code: 'A' }, { name: 'no code' }, { addon_code: 'A' }, { addon_code: '' }],
    });
    expect(child(rec, 'billing_plans__addons').rows.map((r) => r.addon_code)).toEqual(['A', '#1', '#2', '#3']);
    expect(rec.warnings.map((w) => [w.table, w.id, w.field])).toEqual([
      ['billing_plans__addons', 'P', 'addons[1].addon_code'],
      ['billing_plans__addons', 'P', 'addons[2].addon_code'],
      ['billing_plans__addons', 'P', 'addons[3].addon_code'],
    ]);
  });

  it('skips an element that is not an object, with a warning', () => {
    const rec = run('billing.plans', { plan_code: 'P', tags: ['gold'] });
    expect(child(rec, 'billing_plans__tags').rows).toEqual([]);
    expect(rec.warnings[0]).toMatchObject({ table: 'billing_plans__tags', field: 'tags[0]' });
  });

  it('reads a single object where an array of objects is expected as a one-element array', () => {
    const rec = run('billing.plans', { plan_code: 'P', tags: { tag_id: '1', tag_name: 'Tier' } });
    expect(child(rec, 'billing_plans__tags').rows.map((r) => [r.tag_id, r._position, r.tag_name])).toEqual([['1', 0, 'Tier']]);
    expect(rec.warnings).toEqual([]);
  });

  it('reads a vendor credit whose line_items is one object, with its grandchild arrays', () => {
    const rec = run(
      'inventory.vendor_credits',
      { vendor_credit_id: 'V1', line_items: { line_item_id: 'L1', name: 'Widget', tags: [{ tag_id: 'T1' }] } },
      'detail',
    );
    expect(child(rec, 'inventory_vendor_credits__line_items').rows.map((r) => [r.line_item_id, r.name])).toEqual([['L1', 'Widget']]);
    expect(child(rec, 'inventory_vendor_credits__line_items__tags').rows.map((r) => r.tag_id)).toEqual(['T1']);
  });

  it('skips a string array where objects are expected, still writing the record and its other tables', () => {
    const rec = run(
      'inventory.sales_orders',
      { salesorder_id: 'S1', documents: ['document_id', 'file_name'], line_items: [{ line_item_id: 'L1' }] },
      'detail',
    );
    expect(rec.row.salesorder_id).toBe('S1');
    expect(child(rec, 'inventory_sales_orders__documents').rows).toEqual([]);
    expect(child(rec, 'inventory_sales_orders__line_items').rows).toHaveLength(1);
    expect(rec.warnings.map((w) => [w.field, w.kind])).toEqual([
      ['documents[0]', 'element_not_object'],
      ['documents[1]', 'element_not_object'],
    ]);
  });

  it('leaves a table untouched when its field is a scalar', () => {
    const rec = run('billing.plans', { plan_code: 'P', tags: 'gold' });
    expect(rec.children).toEqual([]);
    expect(rec.warnings[0]).toMatchObject({ table: 'billing_plans__tags', field: 'tags', kind: 'not_an_array' });
  });
});

describe('normalizeRecord: other streams', () => {
  it('turns a task\u2019s hh:mm hours into hours', () => {
    const rec = run('invoice.tasks', TASK);
    expect(rec.row).toMatchObject({
      billed_hours: 12.5,
      un_billed_hours: 35 / 60,
      rate: 80,
      project_id: '460000000030001',
      is_billable: true,
    });
    expect(rec.row.log_time).toBeCloseTo(13 + 5 / 60, 12);
    expect(rec.changedAt).toBeNull();
    expectShapes(rec);
  });

  it('fills a child stream\u2019s parent column from the caller when the record lacks it', () => {
    const { project_id: _omitted, ...withoutProject } = TASK;
    expect(run('invoice.tasks', withoutProject, 'list', { parentId: 'P-9' }).row.project_id).toBe('P-9');
    expect(run('invoice.tasks', TASK, 'list', { parentId: 'P-9' }).row.project_id).toBe('460000000030001');
  });

  it('flattens a contact person\u2019s communication preference', () => {
    const rec = run('inventory.contact_persons', CONTACT_PERSON);
    expect(rec.key).toEqual({ organization_id: ORG, contact_person_id: '460000000041001' });
    expect(rec.row).toMatchObject({
      contact_id: '460000000040001',
      communication_preference__is_sms_enabled: true,
      communication_preference__is_whatsapp_enabled: false,
      is_primary_contact: true,
      phone: null,
    });
    expect(rec.children).toEqual([]);
    expectShapes(rec);
  });

  it('reads an event list item, then its detail with payload and webhooks', () => {
    const list = run('billing.events', EVENT_LIST_ITEM);
    expect(list.columns).not.toContain('payload');
    expect(list.children).toEqual([]);
    expect(list.changedAt).toBe(Date.UTC(2026, 10, 20, 4, 45, 30));

    const detail = run('billing.events', EVENT_DETAIL, 'detail');
    expect(detail.row).toMatchObject({
      event_type: 'subscription_created',
      event_time: '2026-11-20T04:45:30.000Z',
      payload: EVENT_DETAIL.payload,
    });
    const hooks = child(detail, 'billing_events__webhooks');
    expect(hooks.rows.map((r) => [r.webhook_id, r._position, r.status, r.last_updated_time])).toEqual([
      ['460000000051001', 0, 'success', '2026-11-20T04:46:00.000Z'],
      ['460000000051002', 1, 'failure', null],
    ]);
    expect(detail.warnings).toEqual([
      {
        table: 'billing_events__webhooks',
        id: '460000000050001',
        field: 'webhooks[1].last_updated_time',
        kind: 'value',
        message: expect.any(String) as unknown,
      },
    ]);
    expectShapes(detail);
  });

  it('flattens a recurring expense\u2019s single line_item object', () => {
    const rec = run('billing.recurring_expenses', RECURRING_EXPENSE);
    expect(rec.row).toMatchObject({
      line_item__line_item_id: '460000000061001',
      line_item__account_name: 'Rent',
      line_item__tax_amount: 0,
      line_item__item_order: 1,
      line_item__tax_id: null,
      amount: 2000,
      next_expense_date: '2026-12-01',
    });
    expect(child(rec, 'billing_recurring_expenses__acquisition_vat_summary').rows[0]).toMatchObject({ tax_name: 'VAT', tax_amount: 0 });
    expect(child(rec, 'billing_recurring_expenses__custom_fields').rows[0]).toMatchObject({
      customfield_id: '460000000063001',
      value: 'HQ',
    });
    expect(rec.children.map((c) => c.table)).not.toContain('billing_recurring_expenses__reverse_charge_vat_summary');
    expectShapes(rec);
  });

  it('keeps the webhook secret out of the warehouse', () => {
    const rec = run('books.webhooks', WEBHOOK);
    expect(rec.columns).not.toContain('secret');
    expect(rec.row._raw).not.toContain('abcdef123456');
    expect((JSON.parse(rec.row._raw as string) as { secret?: unknown }).secret).toBe('[redacted]');
    expect(rec.row.events).toBe('["invoice_created","invoice_updated"]');
    expect(child(rec, 'books_webhooks__headers').rows[0]).toMatchObject({ _position: 0, param_name: 'X-Token' });
    expect(child(rec, 'books_webhooks__entity_parameters').rows).toEqual([]);
    expect(WEBHOOK.secret).toBe('abcdef123456');
  });

  it('redacts credentials found by name in a webhook\u2019s URL and parameter lists: columns, child rows and _raw', () => {
    const hook = {
      ...WEBHOOK,
      url: 'https://sync.example.com/hooks/acme/books/1?secret=hook-secret-1234567&entity=invoice',
      headers: [
        { param_name: 'X-Svcsync-Secret', param_value: 'hook-secret-1234567' },
        { param_name: 'X-Source', param_value: 'svc' },
      ],
    };
    const rec = run('books.webhooks', hook);
    expect(rec.row.url).toBe('https://sync.example.com/hooks/acme/books/1?secret=[redacted]&entity=invoice');
    expect(child(rec, 'books_webhooks__headers').rows.map((r) => [r.param_name, r.param_value])).toEqual([
      ['X-Svcsync-Secret', '[redacted]'],
      ['X-Source', 'svc'],
    ]);
    expect(rec.row._raw).not.toContain('hook-secret-1234567');
    expect(hook.headers[0]!.param_value).toBe('hook-secret-1234567');
  });

  it('reads a value where the catalog says it may also be (alsoAt): the other spelling of an id, a wrapper present or not', () => {
    const spelled = {
      ...INVENTORY_VENDOR_CREDIT_DETAIL,
      custom_fields: [{ customfield_id: '9001', label: 'Region', value: 'North', index: 1 }],
      acquisition_vat_summary: [{ tax_name: 'VAT 20%', tax_amount: 4.5 }],
    };
    const rec = run('inventory.vendor_credits', spelled, 'detail');
    expect(child(rec, 'inventory_vendor_credits__custom_fields').rows.map((r) => [r.custom_field_id, r.value])).toEqual([
      ['9001', 'North'],
    ]);
    expect(child(rec, 'inventory_vendor_credits__acquisition_vat_summary').rows.map((r) => [r.tax__tax_name, r.tax__tax_amount])).toEqual([
      ['VAT 20%', 4.5],
    ]);
    expect(rec.warnings).toEqual([]);
    expect(rec.unknown).toEqual([]);
    // The place the section names still wins when both are there.
    const both = { ...spelled, custom_fields: [{ custom_field_id: '1', customfield_id: '2', value: 'x' }] };
    expect(child(run('inventory.vendor_credits', both, 'detail'), 'inventory_vendor_credits__custom_fields').rows[0]!.custom_field_id).toBe(
      '1',
    );
  });

  it('keys an organization by its own id', () => {
    const rec = normalizeRecord(stream('books.organizations'), ORGANIZATION, {
      organizationId: 'ignored',
      source: 'list',
      syncedAt: SYNCED_AT,
    });
    expect(rec.key).toEqual({ organization_id: '10234695' });
    expect(rec.row).toMatchObject({
      organization_id: '10234695',
      is_default_org: true,
      account_created_date: '2020-04-01',
      price_precision: 2,
    });
    expect(rec.columns.filter((c) => c === 'organization_id')).toHaveLength(1);
    expectShapes(rec);
  });
});

describe('normalizeRecord: one record of every stream (RECORDS_BY_STREAM)', () => {
  it.each(Object.entries(RECORDS_BY_STREAM))('%s keys its record and writes its table\u2019s columns', (name, { source, record }) => {
    const s = stream(name);
    const rec = normalizeRecord(s, record, { organizationId: ORG, source, syncedAt: SYNCED_AT });
    expect(rec.table).toBe(`${s.family}_${s.name}`);
    expect(rec.id).toBe(String(record[s.primaryKey]));
    expectShapes(rec);
  });
});

describe('normalizeRecord: failures', () => {
  it.each([
    ['missing', { customer_name: 'x' }],
    ['empty', { salesorder_id: '', customer_name: 'x' }],
    ['null', { salesorder_id: null }],
  ])('throws a FatalError naming the stream, the field and the record when the primary key is %s', (_what, raw) => {
    const error = thrown(() => run('inventory.sales_orders', raw));
    expect(error).toBeInstanceOf(FatalError);
    const fatal = error as FatalError;
    expect(fatal.message).toMatch(/^inventory\.sales_orders: a record of the list response has no salesorder_id \(its primary key\): \{/);
    expect(fatal.message).toContain(JSON.stringify(raw).slice(0, 20));
    expect(fatal.retriable).toBe(false);
    expect(fatal.organizationId).toBe(ORG);
    expect(fatal.hint).toMatch(/change primaryKey of inventory\.sales_orders in src\/catalog/);
    expect(fatal.hint).toMatch(/report the record/);
    expect(fatal.describe()).toContain(`\n  \u2192 ${fatal.hint}`);
  });

  it('names the response the keyless record came from, and shows it redacted as _raw is', () => {
    const { webhook_id: _id, ...keyless } = WEBHOOK;
    const error = thrown(() => run('books.webhooks', keyless, 'list')) as FatalError;
    expect(error.message).toMatch(/^books\.webhooks: a record of the list response has no webhook_id/);
    expect(error.message).not.toContain(WEBHOOK.secret);
    expect(error.message).toContain('[redacted]');
    const detail = thrown(() => run('inventory.sales_orders', { customer_name: 'x' }, 'detail')) as FatalError;
    expect(detail.message).toMatch(/a record of the detail response has no salesorder_id/);
  });

  it('turns a bad value into null and a warning naming table, record and field', () => {
    const rec = run('inventory.sales_orders', { salesorder_id: 'S1', total: 'lots', last_modified_time: 'later' });
    expect(rec.row.total).toBeNull();
    expect(rec.row.last_modified_time).toBeNull();
    expect(rec.changedAt).toBeNull();
    expect(rec.warnings.map((w) => [w.table, w.id, w.field])).toEqual([
      ['inventory_sales_orders', 'S1', 'total'],
      ['inventory_sales_orders', 'S1', 'last_modified_time'],
    ]);
  });

  it('gives the same hash for the same record and a different one when it changes', () => {
    const a = run('inventory.sales_orders', SALES_ORDER_LIST_ITEM);
    const b = run('inventory.sales_orders', { ...SALES_ORDER_LIST_ITEM });
    const c = run('inventory.sales_orders', { ...SALES_ORDER_LIST_ITEM, status: 'void' });
    expect(b.hash).toBe(a.hash);
    expect(c.hash).not.toBe(a.hash);
  });
});

describe('listIdentity', () => {
  // A record unchanged since it was stored is compared by this alone, never normalized: it must agree with normalizeRecord.
  const listed = Object.entries(RECORDS_BY_STREAM).filter(([, f]) => f.source === 'list');
  it('has list records of several streams to compare', () => expect(listed.length).toBeGreaterThan(5));
  it.each(listed)('gives %s the id, hash and change time normalizeRecord gives it', (name, { record: received }) => {
    const identity = listIdentity(stream(name), received, { organizationId: ORG, source: 'list' });
    const n = run(name, received);
    expect({ id: identity.id, hash: identity.hash, changedAt: identity.changedAt }).toEqual({
      id: n.id,
      hash: n.hash,
      changedAt: n.changedAt,
    });
    expect(identity.text).toBe(n.row._raw);
    // And normalizing with it gives the same row as without.
    const again = normalizeRecord(stream(name), received, { organizationId: ORG, source: 'list', syncedAt: SYNCED_AT, identity });
    expect(again).toEqual(n);
  });

  it('hashes the webhook as stored, its secret redacted', () => {
    const identity = listIdentity(stream('books.webhooks'), WEBHOOK, {
      organizationId: ORG,
      source: 'list',
    });
    expect(identity.text).not.toContain((WEBHOOK as { secret: string }).secret);
    expect(identity.hash).toBe(run('books.webhooks', WEBHOOK).hash);
  });

  it('throws as normalizeRecord does for a record without its primary key', () => {
    const error = thrown(() => listIdentity(stream('billing.plans'), { name: 'x' }, { organizationId: ORG, source: 'list' }));
    expect(error).toBeInstanceOf(FatalError);
  });
});
