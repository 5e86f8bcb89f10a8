import { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import { PageMemoStore, type MemoPage } from '../../src/state/page-memo-store.js';
import { DIALECTS, migratedWarehouses } from '../helpers/dialects.js';

const at = { connection: 'c', organizationId: '700', stream: 'billing.plans' };
const kept = (query: string, page: number): MemoPage => ({
  ...at,
  query,
  page,
  bodyHash: `${query}-${page}`.padEnd(40, '0'),
  ids: [`p${page}a`, `p${page}b`],
  hasMore: page < 3,
  maxChanged: page === 1 ? '2026-11-20T09:00:00.000Z' : null,
  syncedAt: '2026-11-20T10:00:00.000Z',
});

for (const dialect of DIALECTS) {
  describe(`kept pages in _svcsync_pages (${dialect})`, () => {
    const open = migratedWarehouses(dialect);

    it('keeps pages in one statement and recalls each as kept, ids and all', async () => {
      const w = await open();
      const writer = new PageMemoStore(w.sql);
      await w.db.executeQuery(writer.pageMemoQuery([kept('q', 1), kept('q', 2), kept('q', 3)]));
      expect(await writer.recallPage(w.db, { ...at, query: 'q', page: 1 })).toEqual(kept('q', 1));
      expect(await writer.recallPage(w.db, { ...at, query: 'q', page: 3 })).toEqual(kept('q', 3));
      expect(await writer.recallPage(w.db, { ...at, query: 'other', page: 1 })).toBeNull();
      // Read again, a page's row is replaced.
      await w.db.executeQuery(writer.pageMemoQuery([{ ...kept('q', 2), ids: ['x'], bodyHash: 'f'.repeat(40) }]));
      expect(await writer.recallPage(w.db, { ...at, query: 'q', page: 2 })).toMatchObject({ ids: ['x'], bodyHash: 'f'.repeat(40) });
    });

    it("forgets at a read's end the pages after its last one and those kept under another query", async () => {
      const w = await open();
      const writer = new PageMemoStore(w.sql);
      await w.db.executeQuery(writer.pageMemoQuery([kept('old', 1), kept('old', 2)]));
      await w.db.executeQuery(writer.pageMemoQuery([kept('q', 1), kept('q', 2), kept('q', 3)]));
      await w.db.executeQuery(writer.pageMemoQuery([{ ...kept('q', 1), stream: 'billing.events' }]));
      await w.db.executeQuery(writer.forgetPagesAfterQuery({ ...at, query: 'q', page: 2 }));
      const rows = await w.db.executeQuery<{ stream: string; query: string; page: number | string }>(
        CompiledQuery.raw('SELECT stream, query, page FROM "_svcsync_pages" ORDER BY stream, query, page'),
      );
      expect(rows.rows.map((r) => [r.stream, r.query, Number(r.page)])).toEqual([
        ['billing.events', 'q', 1],
        ['billing.plans', 'q', 1],
        ['billing.plans', 'q', 2],
      ]);
    });
  });
}
