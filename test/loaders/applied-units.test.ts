import { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import { newUnitId, pruneClaims } from '../../src/loaders/applied-units.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { DIALECTS, migratedWarehouses } from '../helpers/dialects.js';

/**
 * A unit of work sent twice with the same id, as `withFaultRetry` sends it again after its
 * COMMIT's reply was lost: the second time changes nothing and reports what the first did.
 * (test/e2e/lost-commit.test.ts loses real replies on a Postgres connection.)
 */
describe.each(DIALECTS)('units of work that run once, on %s', (dialect) => {
  const open = migratedWarehouses(dialect);

  async function withTable(): Promise<Warehouse> {
    const w = await open();
    await w.db.executeQuery(CompiledQuery.raw('CREATE TABLE t (id text PRIMARY KEY, n integer NOT NULL)'));
    await w.db.executeQuery(CompiledQuery.raw(`INSERT INTO t (id, n) VALUES ('a', 0), ('b', 0)`));
    return w;
  }
  const bump = (): CompiledQuery => CompiledQuery.raw('UPDATE t SET n = n + 1');
  async function counts(w: Warehouse): Promise<number[]> {
    const r = await w.db.executeQuery<{ n: number | string }>(CompiledQuery.raw('SELECT n FROM t ORDER BY id'));
    return r.rows.map((row) => Number(row.n));
  }

  it('a batch sent again with its id changes nothing and returns the rows its first run changed', async () => {
    const w = await withTable();
    const unit = newUnitId();
    const first = await w.batch([bump()], undefined, undefined, unit);
    expect(first).toEqual({ affected: [2], result: undefined, replayed: false });
    const again = await w.batch([bump()], undefined, undefined, unit);
    expect(again.replayed).toBe(true);
    expect(again.affected).toEqual([2]);
    expect(await counts(w)).toEqual([1, 1]);
    // Another unit runs.
    await w.batch([bump()], undefined, undefined, newUnitId());
    expect(await counts(w)).toEqual([2, 2]);
  });

  it("a batch's `after` runs once too, and its result comes back from the first run", async () => {
    const w = await withTable();
    const unit = newUnitId();
    let calls = 0;
    const after = async (): Promise<{ marked: number }> => {
      calls++;
      return Promise.resolve({ marked: 7 });
    };
    expect((await w.batch([bump()], after, undefined, unit)).result).toEqual({ marked: 7 });
    const again = await w.batch([bump()], after, undefined, unit);
    expect(again).toEqual({ affected: [2], result: { marked: 7 }, replayed: true });
    expect(calls).toBe(1);
    expect(await counts(w)).toEqual([1, 1]);
  });

  it('a transaction sent again with its id returns its first result without running again', async () => {
    const w = await withTable();
    const unit = newUnitId();
    let runs = 0;
    const work = async (trx: Parameters<Parameters<Warehouse['transaction']>[0]>[0]): Promise<{ changed: number }> => {
      runs++;
      await trx.executeQuery(bump());
      return { changed: 2 };
    };
    expect(await w.transaction(work, undefined, unit)).toEqual({ changed: 2 });
    expect(await w.transaction(work, undefined, unit)).toEqual({ changed: 2 });
    expect(runs).toBe(1);
    expect(await counts(w)).toEqual([1, 1]);
  });

  it('claims older than any retry are pruned', async () => {
    const w = await withTable();
    await w.batch([bump()], undefined, undefined, newUnitId());
    const before = await w.db.executeQuery<{ n: number | string }>(CompiledQuery.raw('SELECT COUNT(*) AS n FROM _svcsync_applied'));
    expect(Number(before.rows[0]!.n)).toBe(1);
    expect(await pruneClaims(w.db, w.sql, new Date(Date.now() + 60_000).toISOString())).toBe(1);
    expect(await pruneClaims(w.db, w.sql, new Date(Date.now() + 60_000).toISOString())).toBe(0);
  });
});
