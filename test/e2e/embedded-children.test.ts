import { afterEach, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, type E2E } from '../helpers/e2e.js';
import { minimumRequests } from '../helpers/minimum.js';
import { apiRequests } from '../helpers/hostile.js';

/**
 * Books vendor credits embed their refunds and credited bills (spec 2.8) with totals that say
 * whether the arrays are whole. svcsync writes them from the single record it reads anyway when
 * the totals agree, and reads the per-credit lists otherwise (a server that sends them short).
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

  it('writes them from the record when its totals prove the arrays whole: no per-credit list is read', async () => {
    e = await startE2E(dialect, { scale: 20 }, { sync: { per_page: PER_PAGE } });
    const { minimum } = minimumRequests(e.sandbox, PER_PAGE);
    expect(creditsWith(e, 'vendor_credit_refunds')).toBeGreaterThan(0);
    expect(creditsWith(e, 'bills_credited')).toBeGreaterThan(0);
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    await expectRowsAsTruth(e, 'vendor_credit_refunds', 'vendor_credit_refund_id', ['vendor_credit_id', 'amount', 'reference_number']);
    await expectRowsAsTruth(e, 'vendor_credit_bills', 'vendor_credit_bill_id', ['vendor_credit_id', 'bill_id', 'amount']);
    // One single-record read per credit, and no list of its own.
    expect(requestsTo(e, DETAIL)).toBe(e.sandbox.organizations().length * 20);
    expect(requestsTo(e, REFUNDS)).toBe(0);
    expect(requestsTo(e, BILLS)).toBe(0);
    expect(apiRequests(e)).toBe(minimum);

    // Changes after the first sync: a new refund and a deleted one come with their credit's next read.
    e.sandbox.advanceClock(120_000);
    e.sandbox.mutate({ create: 2, delete: 1, modify: 1, families: ['books'], streams: ['vendor_credit_refunds', 'vendor_credit_bills'] });
    e.sandbox.mutate({ modify: '100%', families: ['books'], streams: ['vendor_credits'] });
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    await expectRowsAsTruth(e, 'vendor_credit_refunds', 'vendor_credit_refund_id', ['vendor_credit_id', 'amount', 'reference_number']);
    expect(requestsTo(e, REFUNDS)).toBe(0);
  }, 120_000);

  it.each([
    ['partial', 0.5],
    ['empty', 1],
  ])(
    'reads the per-credit lists when the record sends them %s (totals disagree)',
    async (_reading, share) => {
      e = await startE2E(dialect, { scale: 20, variants: { embeddedChildrenDropped: share } }, { sync: { per_page: PER_PAGE } });
      const { minimum } = minimumRequests(e.sandbox, PER_PAGE);
      expectExit(await e.sync(), 0);
      await expectEqualsTruth(e);
      await expectRowsAsTruth(e, 'vendor_credit_refunds', 'vendor_credit_refund_id', ['vendor_credit_id', 'amount', 'reference_number']);
      await expectRowsAsTruth(e, 'vendor_credit_bills', 'vendor_credit_bill_id', ['vendor_credit_id', 'bill_id', 'amount']);
      // Exactly the credits that have entries: one with none proves itself whole by a zero total.
      expect(requestsTo(e, REFUNDS)).toBe(creditsWith(e, 'vendor_credit_refunds'));
      expect(requestsTo(e, BILLS)).toBe(creditsWith(e, 'bills_credited'));
      expect(apiRequests(e)).toBe(minimum);
    },
    120_000,
  );
});
