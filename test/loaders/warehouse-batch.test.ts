import { existsSync, statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { DIALECTS, freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';

describe.each(DIALECTS)('Warehouse.batch on %s', (dialect) => {
  let tw: TestWarehouse;
  let wh: Warehouse;
  afterEach(async () => {
    await wh?.close();
    await tw?.drop();
  });

  const ph = (n: number): string => (dialect === 'postgres' ? `$${n}` : '?');
  const insert = (id: string): CompiledQuery => CompiledQuery.raw(`INSERT INTO t (id) VALUES (${ph(1)})`, [id]);
  async function ids(): Promise<string[]> {
    const r = await wh.db.executeQuery<{ id: string }>(CompiledQuery.raw('SELECT id FROM t ORDER BY id'));
    return r.rows.map((row) => row.id);
  }

  async function open(): Promise<void> {
    tw = await freshWarehouse(dialect);
    wh = await tw.open();
    await wh.db.executeQuery(CompiledQuery.raw('CREATE TABLE t (id text PRIMARY KEY)'));
  }

  it('commits every statement or none', async () => {
    await open();
    await wh.batch([insert('a'), insert('b')]);
    // The second 'c' breaks the primary key: the first must not stay.
    await expect(wh.batch([insert('c'), insert('c')])).rejects.toThrow(/unique|UNIQUE/);
    expect(await ids()).toEqual(['a', 'b']);
  });

  it('runs `after` in the same transaction, and rolls everything back when it fails', async () => {
    await open();
    await wh.batch([insert('a')], async (trx) => {
      const seen = await trx.executeQuery<{ id: string }>(CompiledQuery.raw('SELECT id FROM t'));
      expect(seen.rows.map((r) => r.id)).toEqual(['a']);
    });
    await expect(wh.batch([insert('b')], () => Promise.reject(new Error('after failed')))).rejects.toThrow('after failed');
    expect(await ids()).toEqual(['a']);
  });

  it('never lands inside another caller’s open transaction', async () => {
    await open();
    let letGo!: () => void;
    const hold = new Promise<void>((r) => (letGo = r));
    const transaction = wh.db
      .transaction()
      .execute(async (trx) => {
        await trx.executeQuery(insert('in-transaction'));
        await hold;
        throw new Error('roll back');
      })
      .catch((e: Error) => e.message);
    // Give the transaction time to begin and insert before the batch is asked for.
    await new Promise((r) => setTimeout(r, 20));
    const batch = wh.batch([insert('batched')]);
    letGo();
    expect(await transaction).toBe('roll back');
    await batch;
    expect(await ids()).toEqual(['batched']);
  });
});

describe('SQLite checkpoints on their own thread', () => {
  it('copies the write-ahead log into the database file without the writer checkpointing, and leaves no log after close', async () => {
    const tw = await freshWarehouse('sqlite');
    const file = tw.url.slice('sqlite:'.length);
    const wh = await openWarehouse(tw.url);
    try {
      await wh.db.executeQuery(CompiledQuery.raw('CREATE TABLE t (id integer PRIMARY KEY, v text)'));
      const sizeBefore = statSync(file).size;
      // About 2 MB: far below the writer's own auto-checkpoint (10,000 pages, 40 MB).
      const filler = 'x'.repeat(2000);
      for (let page = 0; page < 10; page++) {
        await wh.batch(
          Array.from({ length: 100 }, (_, i) => CompiledQuery.raw('INSERT INTO t (id, v) VALUES (?, ?)', [page * 100 + i, filler])),
        );
      }
      const deadline = Date.now() + 10_000;
      while (statSync(file).size < sizeBefore + 1_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(statSync(file).size).toBeGreaterThan(sizeBefore + 1_000_000);
    } finally {
      await wh.close();
    }
    const wal = `${file}-wal`;
    expect(!existsSync(wal) || statSync(wal).size === 0).toBe(true);
  });
});
