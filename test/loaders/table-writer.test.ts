import { afterEach, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { AnyDb as Db } from '../../src/loaders/db.js';
import { TableWriter } from '../../src/loaders/table-writer.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { normalizeRecord, type NormalizedRecord } from '../../src/normalize/normalize.js';
import { SALES_ORDER_LIST_ITEM, WEBHOOK } from '../normalize/fixtures.js';
import { DIALECTS, migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';

const ORG = '10234695';
const WEBHOOKS = findStream('books.webhooks') as StreamSpec;
const SALES_ORDERS = findStream('inventory.sales_orders') as StreamSpec;
const T1 = '2026-11-21T00:00:00.000Z';
const T2 = '2026-11-21T00:05:00.000Z';

function webhook(syncedAt: string, fields: Record<string, unknown>): NormalizedRecord {
  return normalizeRecord(WEBHOOKS, { ...WEBHOOK, ...fields }, { organizationId: ORG, source: 'list', syncedAt });
}

function headers(n: number): Array<{ param_name: string; param_value: string }> {
  return Array.from({ length: n }, (_, i) => ({ param_name: `X-H${i}`, param_value: `v${i}` }));
}

describe.each(DIALECTS)('TableWriter on %s', (dialect) => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  async function open(): Promise<{ writer: TableWriter; statements: string[]; db: Db }> {
    tw = await migratedWarehouse(dialect);
    wh = await tw.open();
    await migrateToLatest(wh);
    const statements: string[] = [];
    // Records every statement the writer sends, so a test can see which it skipped.
    const db = { executeQuery: (q: CompiledQuery) => (statements.push(q.sql), wh.db.executeQuery(q)) } as unknown as Db;
    return { writer: new TableWriter(wh.sql), statements, db };
  }

  async function rows(sql: string): Promise<Array<Record<string, unknown>>> {
    return (await wh.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(sql))).rows;
  }

  it('marks the child rows a known parent no longer lists, and only those', async () => {
    const { writer, db } = await open();
    await writer.writeRecords(db, [webhook(T1, { headers: headers(3) })], T1, () => true);
    await writer.writeRecords(db, [webhook(T2, { headers: headers(1) })], T2, () => false);
    const all = await rows('SELECT param_name, _deleted_at FROM books_webhooks__headers ORDER BY param_name');
    expect(all.map((r) => [r['param_name'], r['_deleted_at'] === null])).toEqual([
      ['X-H0', true],
      ['X-H1', false],
      ['X-H2', false],
    ]);
  });

  it('does not look for stale children of records it is told are new', async () => {
    const { writer, db, statements } = await open();
    const records = [webhook(T1, { webhook_id: '1', headers: headers(2) }), webhook(T1, { webhook_id: '2', headers: headers(1) })];
    await writer.writeRecords(db, records, T1, () => true);
    expect(statements.filter((s) => s.startsWith('UPDATE'))).toEqual([]);
    expect(Number((await rows('SELECT COUNT(*) AS n FROM books_webhooks__headers'))[0]!['n'])).toBe(3);
    // Without the hint every parent is checked: one UPDATE per child table (the fixture's
    // empty entity_parameters array counts, since an empty array removes that table's rows).
    statements.length = 0;
    await writer.writeRecords(db, records, T2);
    expect(
      statements
        .filter((s) => s.startsWith('UPDATE'))
        .map((s) => /^UPDATE "([^"]+)"/.exec(s)![1])
        .sort(),
    ).toEqual(['books_webhooks__entity_parameters', 'books_webhooks__headers']);
  });

  it('keeps the later copy when a page repeats a record', async () => {
    const { writer, db } = await open();
    const first = webhook(T1, { webhook_name: 'first', headers: headers(1) });
    const second = webhook(T1, { webhook_name: 'second', headers: [{ param_name: 'X-H0', param_value: 'later' }] });
    await writer.writeRecords(db, [first, second], T1, () => true);
    expect(await rows('SELECT webhook_id, webhook_name FROM books_webhooks')).toEqual([
      { webhook_id: WEBHOOK.webhook_id, webhook_name: 'second' },
    ]);
    expect((await rows('SELECT param_value FROM books_webhooks__headers')).map((r) => r['param_value'])).toEqual(['later']);
  });

  // Postgres receives a page's rows as one JSON parameter (src/loaders/sql-dialect.ts): every
  // kind of value must come back as a bound parameter would have stored it.
  it('stores every kind of value as it was normalized: text, empty text, numbers, instants, booleans, JSON', async () => {
    const { writer, db } = await open();
    const name = 'Bow"man \\ & Co\n\t\u{1F600} \u00fc \u2028';
    const order = normalizeRecord(
      SALES_ORDERS,
      { ...SALES_ORDER_LIST_ITEM, customer_name: name, reference_number: '', total: '1250.50', bcy_total: 0.1 },
      { organizationId: ORG, source: 'list', syncedAt: T1 },
    );
    await writer.writeRecords(db, [order], T1, () => true);
    await writer.writeRecords(db, [webhook(T1, { events: ['a', 'b"c'] })], T1, () => true);
    const [row] = await rows(
      'SELECT customer_name, reference_number, total, bcy_total, created_time, is_emailed, is_drop_shipment, date, _raw ' +
        'FROM inventory_sales_orders',
    );
    expect(row!['customer_name']).toBe(name);
    expect(row!['reference_number']).toBe('');
    expect(Number(row!['total'])).toBe(1250.5);
    expect(Number(row!['bcy_total'])).toBe(0.1);
    expect(new Date(row!['created_time'] as string).toISOString()).toBe('2026-11-20T04:45:30.000Z');
    // Postgres returns booleans, SQLite 1 / 0.
    expect([row!['is_emailed'], row!['is_drop_shipment']].map((b) => b === true || b === 1)).toEqual([true, false]);
    expect(String(row!['date'])).toBe('2026-11-20');
    // JSON columns hold JSON (jsonb on Postgres), not a string of it.
    const raw = row!['_raw'];
    const parsed = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Record<string, unknown>;
    expect(parsed['customer_name']).toBe(name);
    expect(parsed['unknown_field']).toBe('stays in _raw only');
    const [hook] = await rows('SELECT events FROM books_webhooks');
    const events = hook!['events'];
    expect(typeof events === 'string' ? JSON.parse(events) : events).toEqual(['a', 'b"c']);
    if (dialect === 'postgres') {
      const [kinds] = await rows(
        'SELECT jsonb_typeof(o._raw) AS raw, jsonb_typeof(w.events) AS events FROM inventory_sales_orders o, books_webhooks w',
      );
      expect(kinds).toEqual({ raw: 'object', events: 'array' });
    }
  });
});
