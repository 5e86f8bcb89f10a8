import { describe, expect, it } from 'vitest';
import { loadStreamState, passColumns, saveStreamState, saveStreamStateQuery, type PassState } from '../../src/state/stream-state.js';
import { stateDb } from '../../src/state/tables.js';
import { DIALECTS, migratedWarehouses } from '../helpers/dialects.js';

const key = { connection: 'c', organizationId: '700', stream: 'billing.events' };
const pass = (nextPage: number): PassState => ({
  kind: 'full',
  startedAt: '2026-11-20T10:00:00.000Z',
  nextPage,
  floor: null,
  maxChanged: '2026-11-20T09:00:00.000Z',
  unsorted: false,
  records: (nextPage - 1) * 200,
  children: true,
});

for (const dialect of DIALECTS) {
  describe(`saving a stream's state (${dialect})`, () => {
    const open = migratedWarehouses(dialect);

    it('gives the statement kysely compiles, for each set of columns, however often it is asked', async () => {
      const w = await open();
      const rows = [passColumns(pass(2)), passColumns(pass(3)), passColumns(null), { cursor: 'x', ...passColumns(null) }, { cursor: null }];
      for (const [i, values] of [...rows, ...rows].entries()) {
        const now = '2026-11-20T10:05:00.000Z';
        const expected = stateDb(w.db)
          .insertInto('_svcsync_streams')
          .values({ connection: key.connection, organization_id: key.organizationId, stream: key.stream, ...values, updated_at: now })
          .onConflict((oc) => oc.columns(['connection', 'organization_id', 'stream']).doUpdateSet({ ...values, updated_at: now }))
          .compile();
        const got = saveStreamStateQuery(w.db, key, values, now);
        expect({ sql: got.sql, parameters: got.parameters }).toEqual({ sql: expected.sql, parameters: expected.parameters });
        // From the second time a set of columns is saved, only the parameters are new: the text is the one kept.
        if (i >= rows.length) expect(got.query.kind).toBe('RawNode');
      }
    });

    it('keeps the position each page saved, and clears it when the pass ends', async () => {
      const w = await open();
      await w.db.executeQuery(saveStreamStateQuery(w.db, key, passColumns(pass(2)), '2026-11-20T10:01:00.000Z'));
      await w.db.executeQuery(saveStreamStateQuery(w.db, key, passColumns(pass(7)), '2026-11-20T10:02:00.000Z'));
      expect((await loadStreamState(w.db, key)).pass).toEqual(pass(7));
      await saveStreamState(w.db, key, { cursor: '2026-11-20T09:00:00.000Z', ...passColumns(null) }, '2026-11-20T10:03:00.000Z');
      const state = await loadStreamState(w.db, key);
      expect(state.pass).toBeNull();
      expect(state.cursor).toBe('2026-11-20T09:00:00.000Z');
      expect(state.row?.updated_at).toBe('2026-11-20T10:03:00.000Z');
    });
  });
}
