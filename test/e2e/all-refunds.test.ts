import { afterEach, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, type E2E } from '../helpers/e2e.js';
import { minimumRequests, NEW_CONNECTION_CHECKS } from '../helpers/minimum.js';
import { apiRequests } from '../helpers/hostile.js';

/**
 * Inventory vendor credits' refunds come from the paged list of all refunds (spec 4.8) when many
 * credits are queued (a first sync), not from one list per credit; a server whose entries do not
 * say which credit they refund makes svcsync read each credit's list instead (A49). The list is
 * checked against a few credits' own lists (three on a new connection): one that leaves refunds
 * out is found out, and every credit's own list is read.
 */
const PER_PAGE = 10;
const SCALE = 25;
const ALL = 'GET /inventory/v1/vendorcredits/refunds';
const PER_CREDIT = 'GET /inventory/v1/vendorcredits/{id}/refunds';
const FIELDS = ['vendor_credit_id', 'amount', 'reference_number', 'refund_mode'] as const;

function requestsTo(e: E2E, endpoint: string): number {
  return e.sandbox.requestLog().byEndpoint[endpoint] ?? 0;
}

async function expectRefundsAsTruth(e: E2E): Promise<void> {
  for (const org of e.sandbox.organizations()) {
    const orgId = org.ids.inventory;
    const p = e.warehouse.sql.param(1);
    const rows = await e.query<Record<string, unknown>>(
      `SELECT * FROM "inventory_vendor_credit_refunds" WHERE organization_id = ${p} AND _deleted_at IS NULL ` +
        'ORDER BY "vendor_credit_refund_id"',
      [orgId],
    );
    const id = (r: Record<string, unknown>): string => String(r['vendor_credit_refund_id']);
    const truth = e.sandbox.truth(orgId, 'inventory', 'vendor_credit_refunds').sort((a, b) => id(a).localeCompare(id(b)));
    expect(rows.map(id), `refunds of ${orgId}`).toEqual(truth.map(id));
    rows.forEach((row, i) => {
      for (const f of FIELDS) expect(String(row[f]), `refund ${id(row)}.${f}`).toBe(String(truth[i]![f]));
    });
  }
}

describe.each(DIALECTS)('inventory vendor credit refunds from the list of all refunds, on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('reads the paged list of all refunds on a first sync, per credit after it, and equals the truth', async () => {
    e = await startE2E(dialect, { scale: SCALE }, { sync: { per_page: PER_PAGE } });
    const { minimum } = minimumRequests(e.sandbox, PER_PAGE);
    const refunds = e.sandbox.organizations().map((o) => e!.sandbox.count(o.ids.inventory, 'inventory', 'vendor_credit_refunds'));
    expect(Math.min(...refunds)).toBeGreaterThan(PER_PAGE);
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    await expectRefundsAsTruth(e);
    // Three credits' own lists per organization: a new connection's checks of the list of all refunds.
    expect(requestsTo(e, PER_CREDIT)).toBe(e.sandbox.organizations().length * NEW_CONNECTION_CHECKS);
    expect(requestsTo(e, ALL)).toBe(refunds.reduce((a, n) => a + Math.ceil(n / PER_PAGE), 0));
    expect(apiRequests(e)).toBe(minimum);

    // A few credits changed: their own lists are cheaper than the whole list, and catch a new and a deleted refund.
    e.sandbox.advanceClock(120_000);
    e.sandbox.mutate({ create: 1, delete: 1, families: ['inventory'], streams: ['vendor_credit_refunds'] });
    e.sandbox.resetRequestLog();
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    await expectRefundsAsTruth(e);
    expect(requestsTo(e, ALL)).toBe(0);
    expect(requestsTo(e, PER_CREDIT)).toBeGreaterThan(0);
  }, 120_000);

  it('reads each credit’s list when the list of all refunds does not say which credit each refunds', async () => {
    e = await startE2E(dialect, { scale: SCALE, variants: { allRefundsWithoutCredit: true } }, { sync: { per_page: PER_PAGE } });
    const { minimum } = minimumRequests(e.sandbox, PER_PAGE);
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    await expectRefundsAsTruth(e);
    expect(requestsTo(e, PER_CREDIT)).toBe(e.sandbox.organizations().length * SCALE);
    expect(requestsTo(e, ALL)).toBeGreaterThan(0);
    expect(apiRequests(e)).toBe(minimum);
    expect(e.log.records.some((r) => r['level'] === 'warn' && String(r['msg']).includes('without vendor_credit_id'))).toBe(true);
  }, 120_000);

  it('finds out a list of all refunds that leaves some out, and reads every credit’s own list in the same run', async () => {
    e = await startE2E(dialect, { scale: SCALE, variants: { allRefundsOmitted: 0.25 } }, { sync: { per_page: PER_PAGE } });
    const first = await e.sync();
    expectExit(first, 0);
    await expectEqualsTruth(e);
    await expectRefundsAsTruth(e);
    // The checks find the gap; then each queued credit's own list is read.
    expect(requestsTo(e, PER_CREDIT)).toBeGreaterThanOrEqual(e.sandbox.organizations().length * SCALE);
    const notes = first.organizations.flatMap((o) => o.shortcuts ?? []);
    expect(notes.map((n) => [n.assumption, n.stream])).toEqual(
      e.sandbox.organizations().map(() => ['A49', 'inventory.vendor_credit_refunds']),
    );
    expect(notes[0]!.evidence).toMatch(/the list of all of them lacks/);

    // Refuted: a reconcile of every credit's refunds reads each credit's list, not the list of all of them; nothing said again.
    e.sandbox.advanceClock(120_000);
    e.sandbox.mutate({ create: 3, families: ['inventory'], streams: ['vendor_credit_refunds'] });
    e.sandbox.resetRequestLog();
    const reconcile = await e.sync('reconcile', { deep: true });
    expectExit(reconcile, 0);
    await expectRefundsAsTruth(e);
    expect(requestsTo(e, ALL)).toBe(0);
    expect(reconcile.organizations.flatMap((o) => o.shortcuts ?? [])).toEqual([]);
  }, 120_000);
});
