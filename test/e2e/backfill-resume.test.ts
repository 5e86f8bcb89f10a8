import { afterEach, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, truthIds, type E2E } from '../helpers/e2e.js';

describe.each(DIALECTS)('backfill on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('stopped by the daily quota, continues on the next call where it stopped, re-reading at most one page', async () => {
    // 50 plans at 5 a page are 10 pages; the sandbox allows 6 requests a day.
    e = await startE2E(
      dialect,
      { scale: 50, organizations: 1, limits: { per_day: 6 } },
      { sync: { per_page: 5 }, connection: { families: ['billing'], streams: ['billing.plans'], limits: { per_day: 1000, reserve: 0 } } },
    );
    const org = e.sandbox.organizations()[0]!.organization_id;
    const endpoint = 'GET /billing/v1/plans';
    const first = await e.sync('backfill');
    expectExit(first, 4);
    const pagesFirst = e.sandbox.requestLog().byEndpoint[endpoint] ?? 0;
    const state = await e.query<{ pass_kind: string; pass_next_page: number | string }>(
      "SELECT pass_kind, pass_next_page FROM _svcsync_streams WHERE stream = 'billing.plans'",
    );
    expect(state[0]!.pass_kind).toBe('backfill');
    const nextPage = Number(state[0]!.pass_next_page);
    expect(nextPage).toBeGreaterThan(1);
    e.sandbox.advanceClock(24 * 3600_000);
    e.sandbox.resetRequestLog();
    expectExit(await e.sync('backfill'), 0);
    const pagesSecond = e.sandbox.requestLog().byEndpoint[endpoint] ?? 0;
    // The second call reads from the saved page to the last one, and nothing before it.
    expect(pagesSecond).toBe(10 - nextPage + 1);
    expect(pagesFirst + pagesSecond).toBeLessThanOrEqual(10 + 1 + 1);
    expect(await e.liveIds(org, 'billing', 'plans')).toEqual(truthIds(e.sandbox, org, 'billing', 'plans'));
    const done = await e.query<{ pass_kind: string | null }>("SELECT pass_kind FROM _svcsync_streams WHERE stream = 'billing.plans'");
    expect(done[0]!.pass_kind).toBeNull();
  }, 60_000);
});
