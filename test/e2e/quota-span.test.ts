import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxOptions } from '../../sandbox/index.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, type E2E } from '../helpers/e2e.js';

const DAY = 24 * 3600_000;

/** The business's ids: one, or one per family under the orgIdPerFamily variant. */
function businessIds(e: E2E): Set<string> {
  return new Set(Object.values(e.sandbox.organizations()[0]!.ids));
}

/** Requests the sandbox charged to the business so far, under whichever of its ids. */
function charged(e: E2E): number {
  const log = e.sandbox.requestLog();
  let n = 0;
  for (const id of businessIds(e)) n += log.byOrganization[id] ?? 0;
  return n;
}

/**
 * M: requests a first sync of one organization needs; R: what each extra run repeats (a run
 * with nothing changed: one page per sorted list, full-refresh lists and their children).
 * Measured on a sandbox without limits, so the figures are svcsync's own, not assumed.
 */
async function measure(
  dialect: (typeof DIALECTS)[number],
  sandbox: SandboxOptions,
  connection: Record<string, unknown>,
): Promise<{ M: number; R: number }> {
  const e = await startE2E(dialect, { ...sandbox, unlimited: true }, { connection });
  try {
    const org = e.sandbox.organizations()[0]!.organization_id;
    expectExit(await e.sync(), 0);
    const M = e.sandbox.requestLog().byOrganization[org] ?? 0;
    e.sandbox.advanceClock(60_000);
    expectExit(await e.sync(), 0);
    const R = (e.sandbox.requestLog().byOrganization[org] ?? 0) - M;
    return { M, R };
  } finally {
    await e.close();
  }
}

// Under hostile, without the variants that make two runs of the same data cost differently
// (random 401s, changes while paging), so that M and R measured apart hold for the real run;
// and with one organization id for the four families: svcsync keeps a budget per organization
// id, and a business with an id per family is three organizations to it (docs/assumptions.md).
const CASES = DIALECTS.flatMap((dialect) => [
  { dialect, preset: 'default' as const, variants: {} },
  { dialect, preset: 'hostile' as const, variants: { spurious401Rate: 0, changeWhilePagingEvery: 0, orgIdPerFamily: false } },
]);

describe.each(CASES)('a sync larger than the daily budget on $dialect against the $preset sandbox', ({ dialect, preset, variants }) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('completes by day ⌈(M + R) / B⌉ at M ≈ 1.8 B, fetching nothing twice, and every stream reports what it spent', async () => {
    const sandbox: SandboxOptions = { seed: 11, scale: 40, organizations: 1, preset, variants };
    // Without the invoice family, whose tasks are read for every project on every run (A25),
    // an extra run repeats little, so the bound is two days: the sharpest test of no waste.
    const families = ['books', 'inventory', 'billing'] as const;
    const { M, R } = await measure(dialect, sandbox, { families: [...families] });
    const B = Math.ceil(M / 1.8);
    const dueDay = Math.ceil((M + R) / B);
    expect(dueDay).toBe(2);

    e = await startE2E(dialect, sandbox, { connection: { families: [...families], limits: { per_day: B, reserve: 0 } } });
    const ids = businessIds(e);
    let spent = 0;
    let day = 0;
    let exit = -1;
    while (exit !== 0 && day < dueDay + 2) {
      if (day > 0) e.sandbox.advanceClock(DAY);
      day++;
      const summary = await e.sync();
      exit = summary.exitCode;
      const usedToday = charged(e) - spent;
      spent += usedToday;
      expect(usedToday, `day ${day}`).toBeLessThanOrEqual(B);
      // Rule 4: every request the organization was charged is reported by the stream that made it.
      const outcomes = summary.organizations.filter((o) => ids.has(o.organizationId));
      const reported = outcomes.flatMap((o) => o.streams).reduce((a, s) => a + s.requests, 0);
      expect(reported, `day ${day}: requests reported by streams`).toBe(usedToday);
      const rows = await e.query<{ n: number | string }>(
        'SELECT COALESCE(SUM(requests), 0) AS n FROM _svcsync_run_streams WHERE run_id = ' + (dialect === 'postgres' ? '$1' : '?'),
        [summary.runId],
      );
      expect(Number(rows[0]!.n), `day ${day}: requests in _svcsync_run_streams`).toBe(usedToday);
      if (exit !== 0) {
        expectExit(summary, 4);
        expect(outcomes.some((o) => o.status === 'quota')).toBe(true);
        // The stream the quota stopped still counts what it did before it stopped.
        const stopped = outcomes.flatMap((o) => o.streams).filter((s) => s.status === 'quota');
        expect(stopped.length).toBeGreaterThan(0);
        expect(stopped.some((s) => s.requests > 0)).toBe(true);
      }
    }
    expect(exit).toBe(0);
    expect(day).toBeLessThanOrEqual(dueDay);
    // Nothing fetched was thrown away: the total is the first sync plus what each extra run repeats.
    expect(spent).toBeLessThanOrEqual(M + (day - 1) * R);
    await expectEqualsTruth(e, { families });
  }, 180_000);
});
