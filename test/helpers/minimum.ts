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
  Record<string, { detail?: boolean; children?: Array<{ stream: string; parentKey: string; paged: boolean }> }>
> = {
  books: {
    users: {},
    vendor_credits: {
      detail: true,
      children: [
        { stream: 'vendor_credit_refunds', parentKey: 'vendor_credit_id', paged: false },
        { stream: 'vendor_credit_bills', parentKey: 'vendor_credit_id', paged: false },
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
    vendor_credits: { detail: true, children: [{ stream: 'vendor_credit_refunds', parentKey: 'vendor_credit_id', paged: false }] },
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
 * From the sandbox's truth now: one organization list per family, the pages of every list,
 * one detail read per record of a detail stream, one child list per parent and child stream.
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
          const perParent = new Map<string, number>();
          for (const r of sandbox.truth(orgId, family, stream)) perParent.set(String(r[child.parentKey]), 0);
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
