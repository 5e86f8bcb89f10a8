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

  it('a reconcile with nothing changed normalizes and writes no record, rewrites no row, and deletes none', async () => {
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
    // Untouched: the rows and their child rows keep the run that wrote them; the ids the pass
    // listed were kept aside until its end, and are gone with it.
    const plans = e.sandbox.count(org, 'billing', 'plans');
    expect(await runIds('billing_plans')).toEqual(new Map([[firstRun, plans]]));
    expect([...(await runIds('billing_plans__addons')).keys()]).toEqual([firstRun]);
    expect(await e.query('SELECT * FROM "_svcsync_listed"')).toEqual([]);
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

describe.each(DIALECTS)('a reconcile stopped mid-pass on %s', (dialect) => {
  let e: E2E;
  let org: string;
  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 10, organizations: 1 }, { connection: { streams: ['billing.plans'] }, sync: { per_page: 3 } });
    org = e.sandbox.organizations()[0]!.organization_id;
    expectExit(await e.sync(), 0);
  }, 120_000);
  afterAll(async () => e?.close());

  it('keeps the ids its committed pages listed, and its resumed end marks only the rows no page listed', async () => {
    expect(e.sandbox.count(org, 'billing', 'plans')).toBeGreaterThan(6);
    e.sandbox.advanceClock(10 * 60_000);
    expect(e.sandbox.mutate({ organizationId: org, delete: 1, streams: ['billing.plans'] })).toMatchObject({ deleted: 1 });
    const pagesRead = (): number =>
      Object.entries(e.sandbox.requestLog().byEndpoint)
        .filter(([endpoint]) => endpoint.endsWith('/plans'))
        .reduce((n, [, count]) => n + count, 0);
    const before = pagesRead();
    const stop = { reason: () => (pagesRead() - before >= 2 ? 'stopped by the test' : null) };
    await expect(e.sync('reconcile', { stop })).rejects.toThrow('stopped by the test');
    // Two pages committed: their unchanged ids wait for the pass's end, the pass stands at page 3.
    const listed = await e.query<{ page: number | string; ids: string }>('SELECT page, ids FROM "_svcsync_listed" ORDER BY page');
    expect(listed.map((r) => Number(r.page))).toEqual([1, 2]);
    expect(listed.flatMap((r) => JSON.parse(r.ids) as string[])).toHaveLength(6);
    const pass = await e.query<{ pass_kind: string }>(`SELECT pass_kind FROM "_svcsync_streams" WHERE stream = 'billing.plans'`);
    expect(pass).toEqual([{ pass_kind: 'reconcile' }]);

    // The next reconcile finishes this one (and reads nothing again): rows the first two pages
    // listed must not be taken for gone.
    const resumed = await e.sync('reconcile');
    expectExit(resumed, 0);
    expect(resumed.organizations.flatMap((o) => o.streams).find((s) => s.stream === 'billing.plans')?.pages).toBe(
      Math.ceil((e.sandbox.count(org, 'billing', 'plans') - 6) / 3) || 1,
    );
    expect(await e.liveIds(org, 'billing', 'plans')).toEqual(truthIds(e.sandbox, org, 'billing', 'plans').sort());
    const deleted = await e.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM billing_plans WHERE "_deleted_at" IS NOT NULL');
    expect(Number(deleted[0]!.n)).toBe(1);
    expect(await e.query('SELECT * FROM "_svcsync_listed"')).toEqual([]);
  });
});
