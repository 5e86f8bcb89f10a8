import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATISTICS_MIN_ROWS } from '../../src/loaders/sql-dialect.js';
import { expectExit, startE2E, type E2E } from '../helpers/e2e.js';

// A first sync leaves Postgres's planner statistics current for the tables it filled, so the
// next run's lookups of a page's ids go by the key, not through the organization's every row.
describe('planner statistics after a first sync (postgres)', () => {
  let e: E2E;
  const estimate = async (table: string): Promise<number> =>
    Number((await e.query<{ n: number }>('SELECT reltuples AS n FROM pg_class WHERE oid = to_regclass($1)', [table]))[0]!.n);

  beforeAll(async () => {
    e = await startE2E(
      'postgres',
      { scale: STATISTICS_MIN_ROWS, organizations: 1 },
      { connection: { streams: ['billing.plans'], plan: 'premium' }, sync: { per_page: 200 } },
    );
    expectExit(await e.sync(), 0);
  }, 180_000);
  afterAll(async () => e?.close());

  it('analyzes the stream tables a pass wrote enough rows to, children included', async () => {
    const plans = Number((await e.query<{ n: string }>('SELECT count(*) AS n FROM billing_plans'))[0]!.n);
    expect(plans).toBeGreaterThanOrEqual(STATISTICS_MIN_ROWS);
    expect(await estimate('billing_plans')).toBe(plans);
    const tags = Number((await e.query<{ n: string }>('SELECT count(*) AS n FROM billing_plans__tags'))[0]!.n);
    expect(tags).toBeGreaterThan(0);
    expect(await estimate('billing_plans__tags')).toBe(tags);
  });
});
