import { afterEach, describe, expect, it } from 'vitest';
import { collectStatus } from '../../src/scheduler/surface/status-document.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, startE2E, type E2E } from '../helpers/e2e.js';

/** 16:00Z: 21:30 in Kolkata, the sandbox's first organization (+05:30), whose day ends at 18:30Z. */
const START = '2026-11-20T16:00:00Z';
const KOLKATA_MIDNIGHT = '2026-11-20T18:30:00.000Z';
const UTC_MIDNIGHT = '2026-11-21T00:00:00.000Z';
/** svcsync's budget and the server's quota alike, so svcsync stops first and the server never refuses. */
const PER_DAY = 6;

const CASES = DIALECTS.flatMap((dialect) => [
  { dialect, variant: true, resets: KOLKATA_MIDNIGHT },
  { dialect, variant: false, resets: UTC_MIDNIGHT },
]);

describe.each(CASES)('the quota day on $dialect (server tells its reset: $variant)', ({ dialect, variant, resets }) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  /** Requests the sandbox charged to the organization so far. */
  const charged = (x: E2E): number => x.sandbox.requestLog().byOrganization[x.sandbox.organizations()[0]!.organization_id] ?? 0;
  const moveTo = (x: E2E, iso: string): void => x.sandbox.advanceClock(Date.parse(iso) - x.sandbox.now());

  it("svcsync's budget resets when the server's quota does", async () => {
    e = await startE2E(
      dialect,
      {
        scale: 3,
        organizations: 1,
        timeScale: 1,
        startTime: START,
        limits: { per_day: PER_DAY },
        variants: variant ? { localQuotaDay: true } : {},
      },
      { connection: { families: ['books', 'inventory'], limits: { per_day: PER_DAY, reserve: 0 } } },
    );
    const org = e.sandbox.organizations()[0]!;
    expect(org.time_zone).toBe('Asia/Kolkata');

    const first = await e.sync();
    expectExit(first, 4);
    expect(charged(e)).toBe(PER_DAY);
    expect(first.organizations[0]!.status).toBe('quota');
    expect(first.organizations[0]!.resumeAt).toBe(resets);
    expect(first.usage[0]!.nextReset).toBe(resets);
    expect(e.sandbox.requestLog().rateLimited['45']).toBe(0);

    // A minute after Kolkata's midnight: still the 20th in UTC.
    moveTo(e, '2026-11-20T18:31:00Z');
    const second = await e.sync();
    expectExit(second, 4);
    if (variant) {
      // A new day for the server and for svcsync: the budget was spent again, and not past the server's quota.
      expect(charged(e)).toBe(2 * PER_DAY);
      expect(second.usage[0]!.nextReset).toBe('2026-11-21T18:30:00.000Z');
      expect(e.sandbox.requestLog().rateLimited['45']).toBe(0);
      // The day is kept with the server's reset, so another process (here `status`) counts in it too.
      const rows = await e.query<{ day: string; count: number; resets_at: string | null }>(
        'SELECT day, count, resets_at FROM _svcsync_usage ORDER BY day',
      );
      expect(rows.map((r) => [r.day, Number(r.count), r.resets_at])).toEqual([
        ['2026-11-20', PER_DAY, KOLKATA_MIDNIGHT],
        ['2026-11-21', PER_DAY, '2026-11-21T18:30:00.000Z'],
      ]);
      const status = await collectStatus(e.config, e.warehouse, e.sandbox.now());
      expect(status[0]!.requestsToday).toBe(PER_DAY);
    } else {
      // The configured zone (UTC) has not reached midnight: nothing is sent.
      expect(charged(e)).toBe(PER_DAY);
      expect(second.usage[0]!.nextReset).toBe(UTC_MIDNIGHT);
      moveTo(e, '2026-11-21T00:01:00Z');
      expectExit(await e.sync(), 4);
      expect(charged(e)).toBe(2 * PER_DAY);
      const rows = await e.query<{ day: string; resets_at: string | null }>('SELECT day, resets_at FROM _svcsync_usage ORDER BY day');
      expect(rows.map((r) => [r.day, r.resets_at])).toEqual([
        ['2026-11-20', null],
        ['2026-11-21', null],
      ]);
    }
  }, 60_000);
});
