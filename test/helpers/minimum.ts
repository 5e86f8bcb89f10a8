import type { Sandbox } from '../../sandbox/index.js';
import type { Family } from './stream-ids.js';

/**
 * How a first sync reads each top-level list, written out here (not read from the catalog)
 * so that a wrong catalog entry cannot make a request count agree with it: whether the
 * list is read record by record afterwards (detail), and its child lists, each read once per
 * parent with the parent's id field. Organization lists are counted apart (one per family).
 * test/catalog/stream-names.test.ts checks that it names every other stream of the catalog.
 */
export const TOP: Record<
  Family,
  Record<
    string,
    {
      detail?: boolean;
      /** `embedded`: the parent's single record carries the list (field) and its total (spec 2.8). */
      children?: Array<{
        stream: string;
        parentKey: string;
        paged: boolean;
        embedded?: { field: string; total: string };
        /** A paged list of every parent's children (spec 4.8), read instead of a list each on a first sync. */
        all?: boolean;
      }>;
    }
  >
> = {
  books: {
    users: {},
    vendor_credits: {
      detail: true,
      children: [
        {
          stream: 'vendor_credit_refunds',
          parentKey: 'vendor_credit_id',
          paged: false,
          embedded: { field: 'vendor_credit_refunds', total: 'total_refunded_amount' },
        },
        {
          stream: 'vendor_credit_bills',
          parentKey: 'vendor_credit_id',
          paged: false,
          embedded: { field: 'bills_credited', total: 'total_credits_used' },
        },
      ],
    },
    webhooks: {},
  },
  inventory: {
    currencies: {},
    contacts: {
      children: [
        { stream: 'contact_persons', parentKey: 'contact_id', paged: true },
        { stream: 'contact_comments', parentKey: 'contact_id', paged: false },
      ],
    },
    sales_orders: { detail: true },
    vendor_credits: {
      detail: true,
      children: [{ stream: 'vendor_credit_refunds', parentKey: 'vendor_credit_id', paged: false, all: true }],
    },
  },
  invoice: { projects: { children: [{ stream: 'tasks', parentKey: 'project_id', paged: true }] } },
  billing: { plans: {}, recurring_expenses: {}, events: {} },
};

const DEFAULT_PAGE = 200;

export interface MinimumRequests {
  /** The fewest requests a first sync can make. */
  minimum: number;
  /**
   * Lists whose count is a positive multiple of the page size: without page_context each
   * costs one more (empty) page, the one extra request per list that rule 1 allows.
   */
  exactMultiples: number;
}

/** Pages of a list of n records: at least one; one more when full pages are all a client can go by. */
function pagesOf(n: number, size: number): { pages: number; extra: number } {
  return { pages: Math.max(1, Math.ceil(n / size)), extra: n > 0 && n % size === 0 ? 1 : 0 };
}

/**
 * Whether a parent's single record, as served, carries every entry of a child list: the served
 * array (truth's, less what embeddedChildrenDropped leaves off) is whole and its amounts are
 * numbers that add up to the record's total.
 */
function provesWhole(parent: Record<string, unknown>, e: { field: string; total: string }, dropped: number): boolean {
  const entries = parent[e.field];
  const total = parent[e.total];
  if (!Array.isArray(entries) || typeof total !== 'number') return false;
  if (dropped > 0 && entries.length > 0) return false;
  const amounts = (entries as Array<Record<string, unknown>>).map((x) => x['amount']);
  if (!amounts.every((a) => typeof a === 'number')) return false;
  return Math.abs(amounts.reduce((a, b) => a + b, 0) - total) < 0.0005;
}

/**
 * From the sandbox's truth now: one organization list per family, the pages of every list,
 * one detail read per record of a detail stream, one child list per parent and child stream
 * (but none where the parent's single record carries the whole list).
 */
export function minimumRequests(
  sandbox: Sandbox,
  perPage: number,
  families: readonly Family[] = ['books', 'inventory', 'invoice', 'billing'],
): MinimumRequests {
  let minimum = families.length;
  let exactMultiples = 0;
  for (const org of sandbox.organizations()) {
    for (const family of families) {
      const orgId = org.ids[family];
      for (const [stream, shape] of Object.entries(TOP[family])) {
        const n = sandbox.count(orgId, family, stream);
        const top = pagesOf(n, perPage);
        minimum += top.pages + (shape.detail ? n : 0);
        exactMultiples += top.extra;
        for (const child of shape.children ?? []) {
          // A first sync with two parents or more reads the list of all children, by pages; a
          // server whose entries do not name their parent makes it read each parent's list too (A49).
          if (child.all && n >= 2) {
            const all = pagesOf(sandbox.count(orgId, family, child.stream), perPage);
            minimum += all.pages;
            exactMultiples += all.extra;
            if (!sandbox.variants.allRefundsWithoutCredit) continue;
          }
          const perParent = new Map<string, number>();
          for (const r of sandbox.truth(orgId, family, stream)) {
            // A parent whose single record carries its whole list, as its total shows, needs no list read.
            if (child.embedded && provesWhole(r, child.embedded, sandbox.variants.embeddedChildrenDropped)) continue;
            perParent.set(String(r[child.parentKey]), 0);
          }
          for (const r of sandbox.truth(orgId, family, child.stream)) {
            const parent = String(r[child.parentKey]);
            if (perParent.has(parent)) perParent.set(parent, perParent.get(parent)! + 1);
          }
          for (const count of perParent.values()) {
            const c = pagesOf(count, child.paged ? perPage : DEFAULT_PAGE);
            minimum += c.pages;
            exactMultiples += c.extra;
          }
        }
      }
    }
  }
  return { minimum, exactMultiples };
}
