import { describe, expect, it } from 'vitest';
import { findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { TableWriter } from '../../src/loaders/table-writer.js';
import { commitPage, type Loader } from '../../src/state/unit-of-work.js';
import { normalizeRecord, type NormalizedRecord } from '../../src/normalize/normalize.js';
import { loadStreamState, type PassState } from '../../src/state/stream-state.js';
import { DIALECTS, migratedWarehouses } from '../helpers/dialects.js';
import { CONTACT, CONTACT_PERSON } from '../normalize/fixtures.js';

const contacts = findStream('inventory.contacts') as StreamSpec;
const persons = findStream('inventory.contact_persons') as StreamSpec;
const ORG = '700';
const key = { connection: 'c', organizationId: ORG, stream: 'inventory.contacts' };
const T0 = '2026-11-20T10:00:00.000Z';
const T1 = '2026-11-20T10:05:00.000Z';
const T2 = '2026-11-20T10:06:00.000Z';

const contact = (id: string, at: string): NormalizedRecord =>
  normalizeRecord(contacts, { ...CONTACT, contact_id: id }, { organizationId: ORG, source: 'list', syncedAt: at });

for (const dialect of DIALECTS) {
  describe(`unit of work: commitPage (${dialect})`, () => {
    const open = migratedWarehouses(dialect);

    async function loader(): Promise<Loader> {
      const warehouse = await open();
      return { warehouse, writer: new TableWriter(warehouse.sql) };
    }

    it('a page with more to come commits its rows, the child work it queues and the pass position together', async () => {
      const l = await loader();
      const pass: PassState = {
        kind: 'full',
        startedAt: T0,
        nextPage: 2,
        floor: null,
        maxChanged: null,
        unsorted: false,
        records: 2,
        children: true,
      };
      const rows = [contact('A', T0), contact('B', T0)];
      const out = await commitPage(l, {
        key,
        stream: contacts,
        syncedAt: T0,
        rows,
        fresh: new Set(['A', 'B']),
        parents: ['A', 'B'],
        reason: 'backfill',
        details: [],
        position: pass,
      });
      expect(out.deleted).toEqual({});
      const stored = await l.warehouse.db
        .selectFrom('inventory_contacts')
        .select(['contact_id', '_deleted_at'])
        .orderBy('contact_id')
        .execute();
      expect(stored).toEqual([
        { contact_id: 'A', _deleted_at: null },
        { contact_id: 'B', _deleted_at: null },
      ]);
      const queued = await l.warehouse.db
        .selectFrom('_svcsync_pending')
        .select(['stream', 'item_id', 'reason'])
        .orderBy('stream')
        .orderBy('item_id')
        .execute();
      expect(queued).toEqual([
        { stream: 'inventory.contact_comments', item_id: 'A', reason: 'backfill' },
        { stream: 'inventory.contact_comments', item_id: 'B', reason: 'backfill' },
        { stream: 'inventory.contact_persons', item_id: 'A', reason: 'backfill' },
        { stream: 'inventory.contact_persons', item_id: 'B', reason: 'backfill' },
      ]);
      const state = await loadStreamState(l.warehouse.db, key);
      expect(state.pass).toMatchObject({ kind: 'full', nextPage: 2, startedAt: T0 });
      expect(state.cursor).toBeNull();
    });

    it('the last page of a full read marks what it did not rewrite as deleted, with its child stream rows, and ends the pass', async () => {
      const l = await loader();
      await l.writer.writeRecords(l.warehouse.db, [contact('A', T0), contact('B', T0)], T0);
      const person = normalizeRecord(
        persons,
        { ...CONTACT_PERSON, contact_id: 'B', contact_person_id: 'P1' },
        { organizationId: ORG, source: 'list', syncedAt: T0 },
      );
      await l.writer.writeRecords(l.warehouse.db, [person], T0);

      const out = await commitPage(l, {
        key,
        stream: contacts,
        syncedAt: T2,
        rows: [contact('A', T2)],
        fresh: new Set(),
        parents: ['A'],
        reason: 'changed',
        details: [],
        end: { cursor: T1, vanishedBefore: T1, firstPage: true },
      });
      // Rows, not records: the contact, its custom-field and opening-balance rows, and the person under it.
      expect(out.deleted).toEqual({
        inventory_contacts: 1,
        inventory_contacts__custom_fields: 1,
        inventory_contacts__opening_balances: 1,
        inventory_contact_persons: 1,
      });
      const stored = await l.warehouse.db
        .selectFrom('inventory_contacts')
        .select(['contact_id', '_deleted_at'])
        .orderBy('contact_id')
        .execute();
      expect(stored.map((r): [unknown, string] => [r.contact_id, r._deleted_at === null ? 'live' : 'deleted'])).toEqual([
        ['A', 'live'],
        ['B', 'deleted'],
      ]);
      const child = await l.warehouse.db.selectFrom('inventory_contact_persons').select(['contact_person_id', '_deleted_at']).execute();
      expect(child.map((r): [unknown, string] => [r.contact_person_id, r._deleted_at === null ? 'live' : 'deleted'])).toEqual([
        ['P1', 'deleted'],
      ]);
      const state = await loadStreamState(l.warehouse.db, key);
      expect(state.pass).toBeNull();
      expect(state.cursor).toBe(T1);
    });

    it('an incremental last page deletes nothing (vanishedBefore null) and only moves the cursor', async () => {
      const l = await loader();
      await l.writer.writeRecords(l.warehouse.db, [contact('A', T0), contact('B', T0)], T0);
      const out = await commitPage(l, {
        key,
        stream: contacts,
        syncedAt: T2,
        rows: [contact('A', T2)],
        fresh: new Set(),
        parents: ['A'],
        reason: 'changed',
        details: [],
        end: { cursor: T2, vanishedBefore: null, firstPage: true },
      });
      expect(out.deleted).toEqual({});
      const live = await l.warehouse.db.selectFrom('inventory_contacts').select('contact_id').where('_deleted_at', 'is', null).execute();
      expect(live).toHaveLength(2);
      expect((await loadStreamState(l.warehouse.db, key)).cursor).toBe(T2);
    });
  });
}
