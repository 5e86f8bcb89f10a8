import { describe, expect, it } from 'vitest';
import { estimateJob, rowsNeeded, type OrgSnapshot, type StreamSnapshot } from '../../src/scheduler/planning/estimate.js';
import { Cron } from '../../src/scheduler/timing/cron.js';
import type { JobSpec } from '../../src/scheduler/timing/jobs.js';

function snapshot(rows: Record<string, number>): OrgSnapshot {
  const streams = new Map<string, StreamSnapshot>();
  for (const [name, n] of Object.entries(rows))
    streams.set(name, { state: null, lastMode: null, pending: { detail: 0, children: 0, backfillOrReconcile: 0 }, rows: n });
  return { streams, backfilled: new Set() };
}

function reconcile(streams: string[]): JobSpec {
  return {
    id: 'c/1/reconcile',
    connection: 'c',
    organizationId: '1',
    jobClass: 'reconcile',
    mode: 'reconcile',
    priority: 2,
    trees: [streams[0]!],
    streams,
    cron: new Cron('30 2 * * *', 'UTC'),
  };
}

describe('estimateJob for a reconcile', () => {
  it('counts the pages of the list of all refunds for inventory credits, one single read per books credit (it carries both lists)', () => {
    const inventory = reconcile(['inventory.vendor_credits', 'inventory.vendor_credit_refunds']);
    expect(rowsNeeded(inventory).sort()).toEqual(['inventory.vendor_credit_refunds', 'inventory.vendor_credits']);
    const snap = snapshot({ 'inventory.vendor_credits': 1000, 'inventory.vendor_credit_refunds': 2000 });
    // 5 pages of credits, then 2,000 refunds at 200 a page (+1, as the walk's own estimate).
    expect(estimateJob(inventory, snap, 200)).toBe(5 + 11);

    const books = reconcile(['books.vendor_credits', 'books.vendor_credit_refunds', 'books.vendor_credit_bills']);
    const booksSnap = snapshot({ 'books.vendor_credits': 1000 });
    expect(estimateJob(books, booksSnap, 200)).toBe(5 + 1000);
  });

  it('reads each parent’s list when fewer parents than the list’s pages would need', () => {
    const job = reconcile(['inventory.vendor_credits', 'inventory.vendor_credit_refunds']);
    const snap = snapshot({ 'inventory.vendor_credits': 3, 'inventory.vendor_credit_refunds': 2000 });
    expect(estimateJob(job, snap, 200)).toBe(1 + 3);
  });
});

describe('estimateJob for a reconcile between its children cycles', () => {
  it("counts the list pages, the child lists already queued and the night's share of the parents until the whole cycle is due", () => {
    const books = reconcile(['books.vendor_credits', 'books.vendor_credit_refunds', 'books.vendor_credit_bills']);
    const snap = snapshot({ 'books.vendor_credits': 1000 });
    const reread = '2026-11-20T02:30:00.000Z';
    snap.streams.get('books.vendor_credits')!.state = { children_reread_at: reread } as StreamSnapshot['state'];
    snap.streams.set('books.vendor_credit_refunds', {
      state: null,
      lastMode: null,
      pending: { detail: 0, children: 3, backfillOrReconcile: 0 },
      rows: null,
    });
    const day = Date.parse(reread) + 86_400_000;
    // A seventh of the 1,000 credits, once for both of their lists.
    expect(estimateJob(books, snap, 200, undefined, { everyDays: 7, now: day })).toBe(5 + 3 + 143);
    // The whole cycle due: every credit once (the 3 queued among them).
    expect(estimateJob(books, snap, 200, undefined, { everyDays: 7, now: day + 6 * 86_400_000 })).toBe(5 + 1000);
  });
});
