import { afterEach, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, type E2E } from '../helpers/e2e.js';
import { minimumRequests, NEW_CONNECTION_CHECKS } from '../helpers/minimum.js';
import { runVerify } from '../../src/extractors/verify.js';
import { createLogger } from '../../src/core/logger.js';
import { collectStatusDocument } from '../../src/scheduler/surface/status-document.js';
import { planNextDay } from '../../src/scheduler/planning/plan.js';
import { renderPlan } from '../../src/scheduler/planning/plan-render.js';
import { renderStatus } from '../../src/cli/commands/status.js';
import { apiRequests } from '../helpers/hostile.js';

/**
 * Books vendor credits embed their refunds and credited bills (spec 2.8) with totals that say
 * whether the arrays are whole. svcsync writes them from the single record it reads anyway when
 * the totals agree, and reads the per-credit lists otherwise (a server that sends them short).
 * The shortcut checks itself (A48): a new connection reads the lists of the first three credits
 * whose records prove them whole, and compares; a server whose records say nothing true (empty
 * arrays, zero totals) is found out at once, and every credit's lists are read.
 */
const PER_PAGE = 10;
const REFUNDS = 'GET /books/v3/vendorcredits/{id}/refunds';
const DETAIL = 'GET /books/v3/vendorcredits/{id}';
const BILLS = 'GET /books/v3/vendorcredits/{id}/bills';

function requestsTo(e: E2E, endpoint: string): number {
  return e.sandbox.requestLog().byEndpoint[endpoint] ?? 0;
}

/** Credits (of every organization) with at least one entry in the embedded list. */
function creditsWith(e: E2E, field: string): number {
  let n = 0;
  for (const org of e.sandbox.organizations())
    for (const c of e.sandbox.truth(org.ids.books, 'books', 'vendor_credits')) if ((c[field] as unknown[]).length > 0) n++;
  return n;
}

/** The warehouse's rows of a books child table against the truth, by id: the values svcsync wrote. */
async function expectRowsAsTruth(e: E2E, stream: string, id: string, fields: readonly string[]): Promise<void> {
  for (const org of e.sandbox.organizations()) {
    const orgId = org.ids.books;
    const p = e.warehouse.sql.param(1);
    const rows = await e.query<Record<string, unknown>>(
      `SELECT * FROM "books_${stream}" WHERE organization_id = ${p} AND _deleted_at IS NULL ORDER BY "${id}"`,
      [orgId],
    );
    const truth = e.sandbox.truth(orgId, 'books', stream).sort((a, b) => String(a[id]).localeCompare(String(b[id])));
    expect(rows.length, `books.${stream} of ${orgId}`).toBe(truth.length);
    rows.forEach((row, i) => {
      for (const f of fields) expect(String(row[f]), `books.${stream} ${String(row[id])}.${f}`).toBe(String(truth[i]![f]));
    });
  }
}

describe.each(DIALECTS)('books vendor credits: refunds and credited bills from the single record, on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('writes them from the record when its totals prove the arrays whole: only the checks of a new connection read lists', async () => {
    e = await startE2E(dialect, { scale: 20 }, { sync: { per_page: PER_PAGE } });
    const { minimum, checkSpread } = minimumRequests(e.sandbox, PER_PAGE);
    expect(checkSpread).toBe(0);
    expect(creditsWith(e, 'vendor_credit_refunds')).toBeGreaterThan(0);
    expect(creditsWith(e, 'bills_credited')).toBeGreaterThan(0);
    const first = await e.sync();
    expectExit(first, 0);
    await expectEqualsTruth(e);
    await expectRowsAsTruth(e, 'vendor_credit_refunds', 'vendor_credit_refund_id', ['vendor_credit_id', 'amount', 'reference_number']);
    await expectRowsAsTruth(e, 'vendor_credit_bills', 'vendor_credit_bill_id', ['vendor_credit_id', 'bill_id', 'amount']);
    // One single-record read per credit; the lists of three credits per organization, read to check the records.
    const checks = e.sandbox.organizations().length * NEW_CONNECTION_CHECKS;
    expect(requestsTo(e, DETAIL)).toBe(e.sandbox.organizations().length * 20);
    expect(requestsTo(e, REFUNDS)).toBe(checks);
    expect(requestsTo(e, BILLS)).toBe(checks);
    expect(apiRequests(e)).toBe(minimum);
    expect(first.organizations.flatMap((o) => o.shortcuts ?? [])).toEqual([]);
    const verdicts = await e.query<{ state: string; checks: number | string }>(
      `SELECT state, checks FROM _svcsync_shortcuts WHERE shortcut = 'embedded_children'`,
    );
    expect(verdicts.map((v) => [v.state, Number(v.checks)])).toEqual(e.sandbox.organizations().map(() => ['trusted', 3]));

    // Changes after the first sync: a new refund and a deleted one come with their credit's next read.
    e.sandbox.advanceClock(120_000);
    e.sandbox.mutate({ create: 2, delete: 1, modify: 1, families: ['books'], streams: ['vendor_credit_refunds', 'vendor_credit_bills'] });
    e.sandbox.mutate({ modify: '100%', families: ['books'], streams: ['vendor_credits'] });
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    await expectRowsAsTruth(e, 'vendor_credit_refunds', 'vendor_credit_refund_id', ['vendor_credit_id', 'amount', 'reference_number']);
    // Trusted now: a check every fiftieth use (2 %), and 20 more uses per organization are not that many.
    expect(requestsTo(e, REFUNDS)).toBe(checks);
  }, 120_000);

  it("finds out records that send the arrays empty with zero totals: every credit's lists are read, in the same run", async () => {
    e = await startE2E(dialect, { scale: 20, variants: { embeddedChildrenEmpty: true } }, { sync: { per_page: PER_PAGE } });
    const first = await e.sync();
    expectExit(first, 0);
    await expectEqualsTruth(e);
    await expectRowsAsTruth(e, 'vendor_credit_refunds', 'vendor_credit_refund_id', ['vendor_credit_id', 'amount', 'reference_number']);
    await expectRowsAsTruth(e, 'vendor_credit_bills', 'vendor_credit_bill_id', ['vendor_credit_id', 'bill_id', 'amount']);
    // Said once per organization, naming the assumption, in the log and in the run's summary.
    const notes = first.organizations.flatMap((o) => o.shortcuts ?? []);
    expect(notes.map((n) => [n.assumption, n.stream])).toEqual(e.sandbox.organizations().map(() => ['A48', 'books.vendor_credits']));
    expect(notes[0]!.evidence).toMatch(/the record lacks/);
    const warned = (): number => e!.log.records.filter((r) => String(r['msg']).startsWith('A48 does not hold')).length;
    expect(warned()).toBe(e.sandbox.organizations().length);
    const verdicts = await e.query<{ state: string }>(`SELECT state FROM _svcsync_shortcuts WHERE shortcut = 'embedded_children'`);
    expect(verdicts.map((v) => v.state)).toEqual(e.sandbox.organizations().map(() => 'refuted'));
    // svcsync status and svcsync plan say it too, with what the long way costs.
    const doc = await collectStatusDocument(e.config, e.warehouse, e.sandbox.now());
    const shown = doc.organizations.flatMap((o) => o.shortcuts ?? []);
    expect(shown.map((r) => r.assumption)).toEqual(e.sandbox.organizations().map(() => 'A48'));
    expect(shown[0]!.extraRequestsPerDay).toBeGreaterThan(0);
    expect(renderStatus(doc.organizations, doc.connections)).toMatch(
      /⚠ A48 does not hold for books\.vendor_credits .* more requests a day/,
    );
    const plan = renderPlan(await planNextDay(e.config, e.warehouse, e.sandbox.now()));
    expect(plan).toMatch(
      /A48 does not hold \(books\.vendor_credits\): reading each credit's refunds and credited-bills lists.* adds ~\d+ requests a day/,
    );

    // Changes after: read through the lists, and not said again.
    e.sandbox.advanceClock(120_000);
    e.sandbox.mutate({ create: 2, delete: 1, families: ['books'], streams: ['vendor_credit_refunds', 'vendor_credit_bills'] });
    e.sandbox.mutate({ modify: '100%', families: ['books'], streams: ['vendor_credits'] });
    const second = await e.sync();
    expectExit(second, 0);
    await expectEqualsTruth(e);
    expect(second.organizations.flatMap((o) => o.shortcuts ?? [])).toEqual([]);
    expect(warned()).toBe(e.sandbox.organizations().length);
    // Nothing a parent's own list holds is missing from the warehouse.
    const verified = await runVerify({
      config: e.config,
      warehouse: e.warehouse,
      clock: e.sandbox.clock,
      logger: createLogger({ level: 'silent', secrets: e.secrets }),
      secrets: e.secrets,
      signal: new AbortController().signal,
      children: true,
      streams: ['books.vendor_credit_refunds', 'books.vendor_credit_bills'],
    });
    expect(verified.exitCode).toBe(0);
  }, 120_000);

  it.each([
    ['partial', 0.5],
    ['empty', 1],
  ])(
    'reads the per-credit lists when the record sends them %s (totals disagree)',
    async (_reading, share) => {
      e = await startE2E(dialect, { scale: 20, variants: { embeddedChildrenDropped: share } }, { sync: { per_page: PER_PAGE } });
      const { minimum, checkSpread } = minimumRequests(e.sandbox, PER_PAGE);
      expectExit(await e.sync(), 0);
      await expectEqualsTruth(e);
      await expectRowsAsTruth(e, 'vendor_credit_refunds', 'vendor_credit_refund_id', ['vendor_credit_id', 'amount', 'reference_number']);
      await expectRowsAsTruth(e, 'vendor_credit_bills', 'vendor_credit_bill_id', ['vendor_credit_id', 'bill_id', 'amount']);
      // The credits that have entries: one with none proves itself whole by a zero total, and of
      // those a new connection checks three per organization, reading the lists it proved.
      const checks = e.sandbox.organizations().length * NEW_CONNECTION_CHECKS;
      expect(requestsTo(e, REFUNDS)).toBeGreaterThanOrEqual(creditsWith(e, 'vendor_credit_refunds'));
      expect(requestsTo(e, REFUNDS)).toBeLessThanOrEqual(creditsWith(e, 'vendor_credit_refunds') + checks);
      expect(requestsTo(e, BILLS)).toBeGreaterThanOrEqual(creditsWith(e, 'bills_credited'));
      expect(requestsTo(e, BILLS)).toBeLessThanOrEqual(creditsWith(e, 'bills_credited') + checks);
      expect(apiRequests(e)).toBeGreaterThanOrEqual(minimum);
      expect(apiRequests(e)).toBeLessThanOrEqual(minimum + checkSpread);
    },
    120_000,
  );
});
