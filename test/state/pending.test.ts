import { describe, expect, it } from 'vitest';
import { findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { normalizeRecord } from '../../src/normalize/normalize.js';
import { deferPending, enqueuePending, recencyOf, recencyText, takePending } from '../../src/state/pending.js';
import { DIALECTS, migratedWarehouses } from '../helpers/dialects.js';

const ORG = '700';
const key = { connection: 'c', organizationId: ORG, stream: 'inventory.sales_orders' };
const T0 = '2026-11-20T10:00:00.000Z';
const T1 = '2026-11-20T10:05:00.000Z';
const T2 = '2026-11-20T10:06:00.000Z';
const LATER = '2026-11-20T11:00:00.000Z';

const salesOrders = findStream('inventory.sales_orders') as StreamSpec;
const projects = findStream('invoice.projects') as StreamSpec;

const order = (id: string, changed: string): ReturnType<typeof normalizeRecord> =>
  normalizeRecord(salesOrders, { salesorder_id: id, last_modified_time: changed }, { organizationId: ORG, source: 'list', syncedAt: T0 });

describe('recency of queued work', () => {
  it('is the change time as an instant: offsets compare by time, not by text', () => {
    // 10:00+0530 is 04:30Z, before 05:00Z though its text sorts after it.
    const recency = recencyOf(salesOrders, [order('A', '2026-11-20T10:00:00+0530'), order('B', '2026-11-20T05:00:00Z')]);
    expect(recency.get('A')).toBe('2026-11-20T04:30:00.000Z');
    expect(recency.get('B')).toBe('2026-11-20T05:00:00.000Z');
  });

  it('is absent for a record without a change time and for a stream with no change field or date', () => {
    expect(recencyOf(salesOrders, [order('A', '')]).has('A')).toBe(false);
    const project = normalizeRecord(
      projects,
      { project_id: 'P1', created_time: '2026-11-20T05:00:00Z' },
      { organizationId: ORG, source: 'list', syncedAt: T0 },
    );
    expect(recencyOf(projects, [project]).size).toBe(0);
  });

  it('is fixed-width UTC text, so text order is time order; none outside years 0 to 9999', () => {
    expect(recencyText(Date.UTC(2026, 0, 2))).toBe('2026-01-02T00:00:00.000Z');
    expect(recencyText(null)).toBeNull();
    expect(recencyText(Date.UTC(10_000, 0, 1))).toBeNull();
    expect(recencyText(Number.NaN)).toBeNull();
  });
});

for (const dialect of DIALECTS) {
  describe(`the pending queue's order (${dialect})`, () => {
    const open = migratedWarehouses(dialect);

    const ids = async (w: Warehouse, limit = 50, by = LATER): Promise<string[]> =>
      (await takePending(w.db, key, 'detail', limit, by)).map((r) => r.item_id);

    it('takes the newest record first, whatever order the items were queued in', async () => {
      const w = await open();
      // Two pages: the first queued holds the oldest record and a newer one.
      await enqueuePending(
        w.db,
        key,
        'detail',
        ['A', 'B'],
        'changed',
        T0,
        new Map([
          ['A', '2026-01-01T00:00:00.000Z'],
          ['B', '2026-06-01T00:00:00.000Z'],
        ]),
      );
      await enqueuePending(
        w.db,
        key,
        'detail',
        ['C', 'D'],
        'changed',
        T1,
        new Map([
          ['C', '2026-11-01T00:00:00.000Z'],
          ['D', '2026-03-01T00:00:00.000Z'],
        ]),
      );
      expect(await ids(w)).toEqual(['C', 'B', 'D', 'A']);
      // A batch is the newest of the queue, not of the first page.
      expect(await ids(w, 2)).toEqual(['C', 'B']);
    });

    it('takes items with no recency after the dated ones, in the order they were queued', async () => {
      const w = await open();
      await enqueuePending(w.db, key, 'detail', ['N2', 'N1'], 'changed', T0);
      await enqueuePending(w.db, key, 'detail', ['N0'], 'changed', T1);
      await enqueuePending(w.db, key, 'detail', ['X'], 'changed', T2, new Map([['X', '2020-01-01T00:00:00.000Z']]));
      expect(await ids(w)).toEqual(['X', 'N1', 'N2', 'N0']);
    });

    it('puts an item set aside behind every other, the dated ones queued after it too, and not before the next pass', async () => {
      const w = await open();
      const dated = new Map([
        ['A', '2026-11-01T00:00:00.000Z'],
        ['B', '2026-06-01T00:00:00.000Z'],
      ]);
      await enqueuePending(w.db, key, 'detail', ['A', 'B'], 'changed', T0, dated);
      await enqueuePending(w.db, key, 'detail', ['U'], 'changed', T0);
      await deferPending(w.db, key, 'detail', 'A', T2);
      await enqueuePending(w.db, key, 'detail', ['C'], 'changed', LATER, new Map([['C', '2025-01-01T00:00:00.000Z']]));
      // The pass that set A aside (started at T1) does not take it again.
      expect(await ids(w, 50, T1)).toEqual(['B', 'U']);
      expect(await ids(w, 50, LATER)).toEqual(['B', 'C', 'U', 'A']);
    });

    it('keeps an item queued twice where it stood: its recency and place are the first enqueue’s', async () => {
      const w = await open();
      await enqueuePending(w.db, key, 'detail', ['A'], 'changed', T0, new Map([['A', '2026-01-01T00:00:00.000Z']]));
      await enqueuePending(w.db, key, 'detail', ['B'], 'changed', T0, new Map([['B', '2026-02-01T00:00:00.000Z']]));
      await enqueuePending(w.db, key, 'detail', ['A'], 'changed', T1, new Map([['A', '2026-03-01T00:00:00.000Z']]));
      expect(await ids(w)).toEqual(['B', 'A']);
    });
  });
}
