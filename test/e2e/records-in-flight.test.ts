import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { tableName } from '../../src/catalog/types.js';
import { RecordBudget } from '../../src/extractors/record-budget.js';
import type { SyncSummary } from '../../src/extractors/sync-run.js';
import { DIALECTS } from '../helpers/dialects.js';
import { ID_FIELDS, expectExit, startE2E, truthIds, type E2E, type Family } from '../helpers/e2e.js';

// Four organizations synced at once, ten fetches each, pages of 5: without the cap, up to
// 4 organizations × 2 streams × 2 pages (prefetch) of list records and 4 × 2 × 10 single
// records would be held at once.
const PER_PAGE = 5;
const CAP = 15;

describe.each(DIALECTS)('the cap on records in flight, on %s', (dialect) => {
  let e: E2E;
  let summary: SyncSummary;
  const budget = new RecordBudget(CAP);
  beforeAll(async () => {
    e = await startE2E(dialect, { organizations: 4 }, { sync: { per_page: PER_PAGE, organization_concurrency: 4 } });
    summary = await e.sync('incremental', { records: budget });
  }, 180_000);
  afterAll(async () => e?.close());

  /** A parent's child list is committed whole: the records of the longest one beyond its first page may go past the cap. */
  async function longestChildListBeyondAPage(): Promise<number> {
    let longest = 0;
    for (const child of CATALOG.filter((s) => s.parent)) {
      const rows = await e.query<{ n: number | string }>(
        `SELECT COUNT(*) AS n FROM "${tableName(child)}" GROUP BY organization_id, "${child.parent!.key}" ORDER BY n DESC LIMIT 1`,
      );
      longest = Math.max(longest, Number(rows[0]?.n ?? 0));
    }
    return Math.max(0, longest - PER_PAGE);
  }

  it('holds no more records than the cap across organizations, beyond one parent list held whole', async () => {
    expectExit(summary, 0);
    expect(budget.inFlight).toBe(0);
    expect(budget.peak).toBeGreaterThanOrEqual(PER_PAGE);
    const beyond = await longestChildListBeyondAPage();
    console.log('BEYOND', beyond, budget.peak);
    expect(budget.peak).toBeLessThanOrEqual(CAP + beyond);
  });

  it('loses nothing: every stream of every organization equals the truth', async () => {
    let compared = 0;
    for (const org of e.sandbox.organizations()) {
      for (const family of Object.keys(ID_FIELDS) as Family[]) {
        for (const stream of Object.keys(ID_FIELDS[family])) {
          if (stream === 'organizations') continue;
          const expected = truthIds(e.sandbox, org.organization_id, family, stream);
          expect(await e.liveIds(org.organization_id, family, stream), `${family}.${stream} of ${org.organization_id}`).toEqual(expected);
          compared += expected.length;
        }
      }
    }
    expect(compared).toBeGreaterThan(100);
  });
});
