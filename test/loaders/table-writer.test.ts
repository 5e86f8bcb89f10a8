import { afterEach, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { AnyDb as Db } from '../../src/loaders/db.js';
import { TableWriter } from '../../src/loaders/table-writer.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { normalizeRecord, type NormalizedRecord } from '../../src/normalize/normalize.js';
import { WEBHOOK } from '../normalize/fixtures.js';
import { DIALECTS, freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';

const ORG = '10234695';
const WEBHOOKS = findStream('books.webhooks') as StreamSpec;
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
    tw = await freshWarehouse(dialect);
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
});
