import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxOptions } from '../../src/sandbox/index.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, type E2E } from '../helpers/e2e.js';

const DAY = 24 * 3600_000;

/**
 * M: requests a first sync of one organization needs; R: what each extra run repeats (a run
 * with nothing changed: one page per sorted list, full-refresh lists and their children).
 * Measured on a sandbox without limits, so the figures are svcsync's own, not assumed.
 */
async function measure(dialect: (typeof DIALECTS)[number], sandbox: SandboxOptions, connection: Record<string, unknown>): Promise<{ M: number; R: number }> {
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

describe.each(DIALECTS)('a sync larger than the daily budget on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('completes by day ⌈(M + R) / B⌉ at M ≈ 1.8 B, fetching nothing twice, and every stream reports what it spent', async () => {
    const sandbox: SandboxOptions = { seed: 11, scale: 40, organizations: 1 };
    // Without the invoice family, whose tasks are read for every project on every run (A25),
    // an extra run repeats little, so the bound is two days: the sharpest test of no waste.
    const families = ['books', 'inventory', 'billing'] as const;
    const { M, R } = await measure(dialect, sandbox, { families: [...families] });
    const B = Math.ceil(M / 1.8);
    const dueDay = Math.ceil((M + R) / B);
    expect(dueDay).toBe(2);

    e = await startE2E(dialect, sandbox, { connection: { families: [...families], limits: { per_day: B, reserve: 0 } } });
    const org = e.sandbox.organizations()[0]!.organization_id;
    let spent = 0;
    let day = 0;
    let exit = -1;
    while (exit !== 0 && day < dueDay + 2) {
      if (day > 0) e.sandbox.advanceClock(DAY);
      day++;
      const summary = await e.sync();
      exit = summary.exitCode;
      const usedToday = (e.sandbox.requestLog().byOrganization[org] ?? 0) - spent;
      spent += usedToday;
      expect(usedToday, `day ${day}`).toBeLessThanOrEqual(B);
      // Rule 4: every request the organization was charged is reported by the stream that made it.
      const outcome = summary.organizations.find((o) => o.organizationId === org)!;
      const reported = outcome.streams.reduce((a, s) => a + s.requests, 0);
      expect(reported, `day ${day}: requests reported by streams`).toBe(usedToday);
      const rows = await e.query<{ n: number | string }>('SELECT COALESCE(SUM(requests), 0) AS n FROM _svcsync_run_streams WHERE run_id = ' + (dialect === 'postgres' ? '$1' : '?'), [summary.runId]);
      expect(Number(rows[0]!.n), `day ${day}: requests in _svcsync_run_streams`).toBe(usedToday);
      if (exit !== 0) {
        expectExit(summary, 4);
        expect(outcome.status).toBe('quota');
        // The stream the quota stopped still counts what it did before it stopped.
        const stopped = outcome.streams.filter((s) => s.status === 'quota');
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
