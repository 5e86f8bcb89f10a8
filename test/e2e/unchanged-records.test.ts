import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StreamSpec } from '../../src/catalog/types.js';
import type { NormalizeOptions, NormalizedRecord } from '../../src/normalize/normalize.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, truthIds, type E2E } from '../helpers/e2e.js';

/** Every list record normalized, as `family.stream:id` (the spy below). */
const normalized: string[] = [];

vi.mock('../../src/normalize/normalize.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/normalize/normalize.js')>();
  return {
    ...actual,
    normalizeRecord: (stream: StreamSpec, raw: Record<string, unknown>, opts: NormalizeOptions): NormalizedRecord => {
      const n = actual.normalizeRecord(stream, raw, opts);
      if (opts.source === 'list') normalized.push(`${stream.family}.${stream.name}:${n.id}`);
      return n;
    },
  };
});

const STREAMS = ['books.users', 'billing.plans'];

/** The ids of a stream normalized since `normalized` was last emptied. */
function takeNormalized(stream: string): string[] {
  return normalized
    .filter((x) => x.startsWith(`${stream}:`))
    .map((x) => x.slice(stream.length + 1))
    .sort();
}

describe.each(DIALECTS)('unchanged list records on %s: compared by hash, never normalized or rewritten', (dialect) => {
  let e: E2E;
  let firstRun: string;
  let org: string;
  const written = (summary: Awaited<ReturnType<E2E['sync']>>, stream: string): number =>
    summary.organizations.flatMap((o) => o.streams).find((s) => s.stream === stream)?.written ?? -1;
  const runIds = async (table: string): Promise<Map<string, number>> => {
    const rows = await e.query<{ run_id: string; n: number | string }>(
      `SELECT "_run_id" AS run_id, COUNT(*) AS n FROM "${table}" GROUP BY "_run_id"`,
    );
    return new Map(rows.map((r) => [r.run_id, Number(r.n)]));
  };

  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 10, organizations: 1 }, { connection: { streams: STREAMS } });
    org = e.sandbox.organizations()[0]!.organization_id;
    const summary = await e.sync();
    expectExit(summary, 0);
    firstRun = summary.runId;
    expect(takeNormalized('billing.plans')).toEqual(truthIds(e.sandbox, org, 'billing', 'plans').sort());
  }, 120_000);
  afterAll(async () => e?.close());

  it('a reconcile with nothing changed normalizes and writes no record, yet marks every row seen and deletes none', async () => {
    e.sandbox.advanceClock(10 * 60_000);
    normalized.length = 0;
    const summary = await e.sync('reconcile');
    expectExit(summary, 0);
    expect(takeNormalized('billing.plans')).toEqual([]);
    expect(written(summary, 'billing.plans')).toBe(0);
    expect(takeNormalized('books.users')).toEqual([]);
    expect(written(summary, 'books.users')).toBe(0);
    expect(await e.liveIds(org, 'billing', 'plans')).toEqual(truthIds(e.sandbox, org, 'billing', 'plans').sort());
    expect(await e.liveIds(org, 'books', 'users')).toEqual(truthIds(e.sandbox, org, 'books', 'users').sort());
    // Seen: the rows carry this run, as a rewrite would leave them; their child rows were not rewritten.
    const plans = e.sandbox.count(org, 'billing', 'plans');
    expect(await runIds('billing_plans')).toEqual(new Map([[summary.runId, plans]]));
    expect([...(await runIds('billing_plans__addons')).keys()]).toEqual([firstRun]);
  });

  it('a full-refresh stream normalizes only the changed record, marks the one gone, and restores it when it is back', async () => {
    e.sandbox.advanceClock(10 * 60_000);
    const before = new Map(
      (await e.query<{ id: string; hash: string }>(`SELECT user_id AS id, "_hash" AS hash FROM books_users`)).map((r) => [
        String(r.id),
        r.hash,
      ]),
    );
    expect(e.sandbox.mutate({ organizationId: org, modify: 1, delete: 1, streams: ['books.users'] })).toMatchObject({
      modified: 1,
      deleted: 1,
    });
    normalized.length = 0;
    const changedRun = await e.sync();
    expectExit(changedRun, 0);
    const truth = truthIds(e.sandbox, org, 'books', 'users').sort();
    expect(await e.liveIds(org, 'books', 'users')).toEqual(truth);
    const gone = [...before.keys()].filter((id) => !truth.includes(id));
    expect(gone).toHaveLength(1);
    const after = await e.query<{ id: string; hash: string }>(`SELECT user_id AS id, "_hash" AS hash FROM books_users`);
    const modified = after.filter((r) => before.get(String(r.id)) !== r.hash).map((r) => String(r.id));
    expect(modified).toHaveLength(1);
    expect(takeNormalized('books.users')).toEqual(modified);
    expect(written(changedRun, 'books.users')).toBe(1);

    e.sandbox.advanceClock(10 * 60_000);
    expect(e.sandbox.mutate({ organizationId: org, restore: 1, streams: ['books.users'] })).toMatchObject({ restored: 1 });
    normalized.length = 0;
    const restoreRun = await e.sync();
    expectExit(restoreRun, 0);
    // Its hash is the one stored, but its row is marked deleted: it is normalized and written again.
    expect(takeNormalized('books.users')).toEqual(gone);
    expect(await e.liveIds(org, 'books', 'users')).toEqual(truthIds(e.sandbox, org, 'books', 'users').sort());
    const back = await e.query<{ run_id: string; deleted_at: unknown }>(
      `SELECT "_run_id" AS run_id, "_deleted_at" AS deleted_at FROM books_users WHERE user_id = ${e.warehouse.sql.param(1)}`,
      [gone[0]],
    );
    expect(back).toEqual([{ run_id: restoreRun.runId, deleted_at: null }]);
  });
});
