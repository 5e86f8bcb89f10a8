import { describe, expect, it } from 'vitest';
import { CATALOG, findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { jsonType, knownFields, unknownFields, type UnknownField } from '../../src/normalize/drift.js';
import { normalizeRecord } from '../../src/normalize/normalize.js';
import { PLAN, RECORDS_BY_STREAM, SALES_ORDER_DETAIL } from './fixtures.js';

function stream(name: string): StreamSpec {
  const s = findStream(name);
  if (!s) throw new Error(`no stream ${name}`);
  return s;
}

function drift(name: string, raw: object): readonly UnknownField[] {
  return unknownFields(knownFields(stream(name)), raw as Record<string, unknown>);
}

const PERSONAL = 'ann.lee@example.com';

describe('unknown fields (schema drift)', () => {
  it.each(Object.entries(RECORDS_BY_STREAM))('%s: a record of known fields only has none', (name, { record }) => {
    expect(drift(name, record)).toEqual([]);
  });

  it.each<[string, string, object, UnknownField[]]>([
    ['a top-level scalar', 'inventory.sales_orders', { x_score: 3 }, [{ path: 'x_score', type: 'number' }]],
    [
      'a top-level object, reported once (not its fields)',
      'inventory.sales_orders',
      { x_meta: { a: { b: 1 } } },
      [{ path: 'x_meta', type: 'object' }],
    ],
    [
      'each JSON type',
      'inventory.sales_orders',
      { s: PERSONAL, b: true, n: null, a: [1] },
      [
        { path: 's', type: 'string' },
        { path: 'b', type: 'boolean' },
        { path: 'n', type: 'null' },
        { path: 'a', type: 'array' },
      ],
    ],
    [
      'inside an object some of whose fields are columns',
      'inventory.sales_orders',
      { billing_address: { city: 'X', x_geo: PERSONAL } },
      [{ path: 'billing_address.x_geo', type: 'string' }],
    ],
    [
      'inside array elements, once however many carry it',
      'inventory.sales_orders',
      {
        line_items: [{ line_item_id: '1', x_lot: 'a' }, { line_item_id: '2', x_lot: 'b' }, { x_other: 1 }],
      },
      [
        { path: 'line_items[].x_lot', type: 'string' },
        { path: 'line_items[].x_other', type: 'number' },
      ],
    ],
    [
      'inside a lone object where an array is usual',
      'inventory.sales_orders',
      { line_items: { line_item_id: '1', x_lot: 'a' } },
      [{ path: 'line_items[].x_lot', type: 'string' }],
    ],
    [
      'in a grandchild array',
      'billing.plans',
      { addons: [{ addon_code: 'A', price_brackets: [{ price: 1, x_cap: 9 }] }] },
      [{ path: 'addons[].price_brackets[].x_cap', type: 'number' }],
    ],
  ])('%s', (_label, name, raw, expected) => {
    expect(drift(name, raw)).toEqual(expected);
  });

  it.each<[string, string, object]>([
    ['a JSON column kept whole, whatever is inside', 'books.webhooks', { webhook_id: '1', related_rules: [{ x: 1 }], events: ['a'] }],
    ['a scalar where an object of columns is expected (a value problem, not drift)', 'inventory.sales_orders', { billing_address: 'x' }],
    ['an array read by a child stream of its own', 'inventory.vendor_credits', { vendor_credit_refunds: [{ x: 1 }] }],
    [
      'the primary key, the cursor, organization_id',
      'inventory.sales_orders',
      {
        salesorder_id: '1',
        last_modified_time: '2026-11-20T10:15:30+0530',
        organization_id: '9',
      },
    ],
    ['scalars in a child array', 'billing.plans', { addons: ['x', 1] }],
  ])('not drift: %s', (_label, name, raw) => {
    expect(drift(name, raw)).toEqual([]);
  });

  it('never records a value: only paths and types', () => {
    const found = drift('inventory.sales_orders', { ...SALES_ORDER_DETAIL, x_email: PERSONAL, billing_address: { x_phone: '555-0100' } });
    expect(JSON.stringify(found)).not.toContain(PERSONAL);
    expect(JSON.stringify(found)).not.toContain('555-0100');
    expect(found.every((u) => Object.keys(u).sort().join() === 'path,type')).toBe(true);
  });

  it('records without drift share one frozen empty array; known fields are worked out once per stream', () => {
    const a = drift('billing.plans', PLAN);
    const b = drift('inventory.sales_orders', SALES_ORDER_DETAIL);
    expect(a).toBe(b);
    expect(Object.isFrozen(a)).toBe(true);
    for (const s of CATALOG) expect(knownFields(s)).toBe(knownFields(s));
  });

  it('the normalizer reports them with the record, from list and detail responses alike', () => {
    for (const source of ['list', 'detail'] as const) {
      const n = normalizeRecord(
        stream('inventory.sales_orders'),
        { ...SALES_ORDER_DETAIL, x_new: 1 },
        {
          organizationId: '1',
          source,
          syncedAt: '2026-11-21T00:00:00.000Z',
        },
      );
      expect(n.unknown).toEqual([{ path: 'x_new', type: 'number' }]);
      expect(n.row._raw ?? n.row._raw_detail).toContain('"x_new":1');
    }
  });

  it.each<[unknown, string]>([
    ['', 'string'],
    [0, 'number'],
    [false, 'boolean'],
    [null, 'null'],
    [[], 'array'],
    [{}, 'object'],
  ])('jsonType(%j) is %s', (value, type) => {
    expect(jsonType(value)).toBe(type);
  });
});
