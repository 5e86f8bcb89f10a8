import { expect } from 'vitest';
import type { SyncSummary } from '../../src/extractors/sync-run.js';
import type { E2E } from './e2e.js';

/** API requests the sandbox answered: every request but the token endpoint's. */
export function apiRequests(e: E2E): number {
  const log = e.sandbox.requestLog();
  return Object.entries(log.byEndpoint).reduce((a, [endpoint, n]) => (endpoint.startsWith('POST /oauth') ? a : a + n), 0);
}

/** Answers that are not a success: each makes svcsync send the request again. */
export function refusedAnswers(e: E2E): number {
  const log = e.sandbox.requestLog();
  const errors = Object.entries(log.byStatus).reduce((a, [status, n]) => (status === '200' ? a : a + n), 0);
  return errors + log.faults.truncated;
}

/**
 * The hostile preset's runs use tokens of a few sandbox seconds, so that each run outlives
 * several and meets refused tokens answered 401 code 57 (A26). The sandbox's clock runs on real
 * time (ten times faster here), so a token lives 2 real seconds and svcsync uses it for the first
 * second (it refreshes at half a token's life): runs that share an event loop, on a machine whose two
 * cores another test file keeps busy, stall it for half a second now and then, and 0.5-second
 * tokens were then refused four times in a row.
 */
export const SHORT_TOKENS = { tokenExpiresIn: 20, timeScale: 10 } as const;

/** The 401s svcsync met and refreshed its token for: the code and how many in a row, per warning. */
export function refusedTokens(e: E2E): Array<{ code: unknown; inARow: number }> {
  return e.log.records
    .filter((r) => r['msg'] === 'access token refused; refreshing it and retrying')
    .map((r) => ({ code: r['code'], inARow: Number(r['in_a_row']) }));
}

/**
 * What the preset's spurious refusals must have done in a run: valid tokens refused with code 57
 * (variant refusedTokenCode), freshly refreshed ones too (spurious401Run), and never past the
 * bound. The old reading of 57 (a missing scope after one fresh token) failed a stream at the
 * second of these.
 */
export function expectRefusedTokensAs57(e: E2E): void {
  const refused = refusedTokens(e);
  expect(e.sandbox.requestLog().variants.spurious401).toBeGreaterThan(0);
  expect(refused.length).toBeGreaterThan(0);
  expect(new Set(refused.map((r) => r.code))).toEqual(new Set([57]));
  expect(refused.some((r) => r.inARow >= 2)).toBe(true);
  expect(Math.max(...refused.map((r) => r.inARow))).toBeLessThanOrEqual(3);
}

export function streamFailures(summary: SyncSummary): string[] {
  return summary.organizations.flatMap((o) =>
    o.streams.filter((s) => s.status !== 'ok').map((s) => `${o.organizationId} ${s.stream}: ${s.status} ${s.error ?? ''}`),
  );
}
