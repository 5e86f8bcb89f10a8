import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StreamSpec } from '../../src/catalog/types.js';
import type { ListIdentity, NormalizeOptions } from '../../src/normalize/normalize.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, truthIds, type E2E } from '../helpers/e2e.js';

/** Every list record identified (compared with its row), as `family.stream:id`. */
const identified: string[] = [];

vi.mock('../../src/normalize/normalize.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/normalize/normalize.js')>();
  return {
    ...actual,
    listIdentity: (
      stream: StreamSpec,
      raw: Record<string, unknown>,
      opts: Pick<NormalizeOptions, 'organizationId' | 'source'>,
    ): ListIdentity => {
      const l = actual.listIdentity(stream, raw, opts);
      identified.push(`${stream.family}.${stream.name}:${l.id}`);
      return l;
    },
  };
});

function takeIdentified(stream: string): string[] {
  const ids = identified.filter((x) => x.startsWith(`${stream}:`)).map((x) => x.slice(stream.length + 1));
  identified.length = 0;
  return ids.sort();
}

interface KeptPage {
  page: number;
  ids: string[];
  synced_at: string;
  body_hash: string;
}

describe.each(DIALECTS)('pages answered as when last read, on %s', (dialect) => {
  let e: E2E;
  let org: string;
  const p = (n: number): string => e.warehouse.sql.param(n);
  const kept = async (stream: string): Promise<KeptPage[]> =>
    (
      await e.query<{ page: number | string; ids: string; synced_at: unknown; body_hash: string }>(
        `SELECT page, ids, synced_at, body_hash FROM "_svcsync_pages" WHERE stream = ${p(1)} ORDER BY page`,
        [stream],
      )
    ).map((r) => ({ page: Number(r.page), ids: JSON.parse(r.ids) as string[], synced_at: String(r.synced_at), body_hash: r.body_hash }));
  const plan = async (id: string): Promise<{ hash: string; deleted: boolean }> => {
    const rows = await e.query<{ hash: string; deleted_at: unknown }>(
      `SELECT "_hash" AS hash, "_deleted_at" AS deleted_at FROM billing_plans WHERE plan_code = ${p(1)}`,
      [id],
    );
    return { hash: rows[0]!.hash, deleted: rows[0]!.deleted_at !== null };
  };
  const reconcile = async (): Promise<Awaited<ReturnType<E2E['sync']>>> => {
    e.sandbox.advanceClock(10 * 60_000);
    identified.length = 0;
    const summary = await e.sync('reconcile');
    expectExit(summary, 0);
    return summary;
  };
  const written = (summary: Awaited<ReturnType<E2E['sync']>>, stream: string): number =>
    summary.organizations.flatMap((o) => o.streams).find((s) => s.stream === stream)?.written ?? -1;

  beforeAll(async () => {
    e = await startE2E(
      dialect,
      { scale: 10, organizations: 1 },
      { connection: { streams: ['billing.plans', 'books.users'] }, sync: { per_page: 3 } },
    );
    org = e.sandbox.organizations()[0]!.organization_id;
    expectExit(await e.sync(), 0);
  }, 120_000);
  afterAll(async () => e?.close());

  it('keeps, for every page of a whole read, the hash of its answer and its ids in page order', async () => {
    const pages = await kept('billing.plans');
    const truth = truthIds(e.sandbox, org, 'billing', 'plans');
    expect(pages.map((k) => k.page)).toEqual(Array.from({ length: Math.ceil(truth.length / 3) }, (_, i) => i + 1));
    expect(pages.flatMap((k) => k.ids).sort()).toEqual([...truth].sort());
    for (const k of pages) expect(k.body_hash).toMatch(/^[0-9a-f]{40}$/);
    expect((await kept('books.users')).flatMap((k) => k.ids).sort()).toEqual(truthIds(e.sandbox, org, 'books', 'users').sort());
  });

  it('takes the unchanged pages of an incremental run as read where it reads every page (plans cannot be sorted)', async () => {
    e.sandbox.advanceClock(10 * 60_000);
    identified.length = 0;
    const summary = await e.sync();
    expectExit(summary, 0);
    expect(takeIdentified('billing.plans')).toEqual([]);
    expect(takeIdentified('books.users')).toEqual([]);
    expect(written(summary, 'billing.plans')).toBe(0);
    expect(await e.liveIds(org, 'billing', 'plans')).toEqual(truthIds(e.sandbox, org, 'billing', 'plans').sort());
  });

  it('takes every page of a reconcile with nothing changed as read: no record compared, none written, none lost', async () => {
    const summary = await reconcile();
    expect(takeIdentified('billing.plans')).toEqual([]);
    expect(takeIdentified('books.users')).toEqual([]);
    expect(written(summary, 'billing.plans')).toBe(0);
    expect(summary.organizations.flatMap((o) => o.streams).find((s) => s.stream === 'billing.plans')?.records).toBe(
      truthIds(e.sandbox, org, 'billing', 'plans').length,
    );
    expect(await e.liveIds(org, 'billing', 'plans')).toEqual(truthIds(e.sandbox, org, 'billing', 'plans').sort());
    expect(await e.liveIds(org, 'books', 'users')).toEqual(truthIds(e.sandbox, org, 'books', 'users').sort());
    expect(await e.query('SELECT * FROM "_svcsync_listed"')).toEqual([]);
  });

  it('compares a kept page again once one of its rows was written since, and puts the row right', async () => {
    const page = (await kept('billing.plans'))[1]!;
    const id = page.ids[0]!;
    const truthHash = (await plan(id)).hash;
    const later = new Date(Date.parse(page.synced_at) + 1000).toISOString();
    await e.query(`UPDATE billing_plans SET "_hash" = ${p(1)}, "_synced_at" = ${p(2)} WHERE plan_code = ${p(3)}`, [
      'written by another read',
      later,
      id,
    ]);
    const summary = await reconcile();
    expect(takeIdentified('billing.plans')).toEqual([...page.ids].sort());
    expect(written(summary, 'billing.plans')).toBe(1);
    expect(await plan(id)).toEqual({ hash: truthHash, deleted: false });
  });

  it('compares a kept page again once one of its rows was marked deleted, and brings the row back', async () => {
    const page = (await kept('billing.plans'))[0]!;
    const id = page.ids[1]!;
    await e.query(`UPDATE billing_plans SET "_deleted_at" = "_synced_at" WHERE plan_code = ${p(1)}`, [id]);
    expect(await e.liveIds(org, 'billing', 'plans')).not.toContain(id);
    await reconcile();
    expect(takeIdentified('billing.plans')).toEqual([...page.ids].sort());
    expect((await plan(id)).deleted).toBe(false);
    expect(await e.liveIds(org, 'billing', 'plans')).toEqual(truthIds(e.sandbox, org, 'billing', 'plans').sort());
  });

  it('trusts the rows of a kept page that nothing wrote since (a hash altered by hand stays), until a row loses its hash', async () => {
    const page = (await kept('billing.plans'))[2]!;
    const id = page.ids[0]!;
    await e.query(`UPDATE billing_plans SET "_hash" = ${p(1)} WHERE plan_code = ${p(2)}`, ['altered by hand', id]);
    await reconcile();
    expect(takeIdentified('billing.plans')).toEqual([]);
    expect((await plan(id)).hash).toBe('altered by hand');

    // A migration that changes how records become rows clears their hash: the page is compared again.
    await e.query(`UPDATE billing_plans SET "_hash" = NULL WHERE plan_code = ${p(1)}`, [id]);
    await reconcile();
    expect(takeIdentified('billing.plans')).toEqual([...page.ids].sort());
    expect((await plan(id)).hash).toMatch(/^[0-9a-f]{40}$/);
  });

  it('reads the pages whose answers changed at the source, and leaves the warehouse equal to it', async () => {
    e.sandbox.advanceClock(10 * 60_000);
    expect(
      e.sandbox.mutate({ organizationId: org, modify: 1, delete: 1, create: 1, streams: ['billing.plans', 'books.users'] }),
    ).toMatchObject({
      modified: 2,
      deleted: 2,
    });
    const summary = await reconcile();
    expect(written(summary, 'billing.plans')).toBeGreaterThan(0);
    expect(identified.length).toBeGreaterThan(0);
    for (const [family, name] of [
      ['billing', 'plans'],
      ['books', 'users'],
    ] as const) {
      const truth = truthIds(e.sandbox, org, family, name).sort();
      expect(await e.liveIds(org, family, name)).toEqual(truth);
      expect((await kept(`${family}.${name}`)).flatMap((k) => k.ids).sort()).toEqual(truth);
    }
  });
});

const READINGS = [
  { name: 'page_context sent', variants: {} },
  { name: 'no page_context', variants: { omitPageContext: true } },
] as const;

describe.each(DIALECTS.flatMap((dialect) => READINGS.map((reading) => [dialect, reading] as const)))(
  'pages kept in batches on %s, %o',
  (dialect, reading) => {
    let e: E2E;
    afterAll(async () => e?.close());

    it('keeps every page of a read longer than a batch (string and numeric ids), and a reconcile then compares none', async () => {
      e = await startE2E(
        dialect,
        { scale: 30, organizations: 2, variants: reading.variants },
        { connection: { streams: ['billing.plans'] }, sync: { per_page: 1 } },
      );
      expectExit(await e.sync(), 0);
      expect(e.sandbox.organizations().map((o) => o.idStyle)).toEqual(['string', 'number']);
      const p = (n: number): string => e.warehouse.sql.param(n);
      for (const { organization_id: org } of e.sandbox.organizations()) {
        const truth = truthIds(e.sandbox, org, 'billing', 'plans');
        expect(truth.length).toBeGreaterThan(20);
        const kept = await e.query<{ page: number | string; ids: string }>(
          `SELECT page, ids FROM "_svcsync_pages" WHERE organization_id = ${p(1)} ORDER BY page`,
          [org],
        );
        // Without page_context the walk asks one page past the last full one, and keeps it (empty) too.
        expect(kept.map((r) => Number(r.page))).toEqual(kept.map((_, i) => i + 1));
        expect(kept.flatMap((r) => JSON.parse(r.ids) as string[]).sort()).toEqual([...truth].sort());
      }
      e.sandbox.advanceClock(10 * 60_000);
      identified.length = 0;
      expectExit(await e.sync('reconcile'), 0);
      expect(takeIdentified('billing.plans')).toEqual([]);
      for (const { organization_id: org } of e.sandbox.organizations()) {
        expect(await e.liveIds(org, 'billing', 'plans')).toEqual(truthIds(e.sandbox, org, 'billing', 'plans').sort());
      }
    }, 120_000);
  },
);
