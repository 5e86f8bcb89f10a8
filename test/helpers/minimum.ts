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

/**
 * Uses of each shortcut a new connection checks against the long way (`sync.shortcut_checks.new_connection`),
 * per organization: a credit's record's proven child lists read from their own endpoints (A48), a
 * queued credit's own refunds list beside the list of all refunds (A49).
 */
export const NEW_CONNECTION_CHECKS = 3;

/** The fewest and the most `k` of `costs` can add up to. */
function range(costs: readonly number[], k: number): { min: number; max: number } {
  const sorted = [...costs].sort((a, b) => a - b);
  const n = Math.min(k, sorted.length);
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  return { min: sum(sorted.slice(0, n)), max: sum(sorted.slice(sorted.length - n)) };
}

export interface MinimumRequests {
  /** The fewest requests a first sync can make, its checks of the shortcuts included. */
  minimum: number;
  /**
   * How many more the checks can cost than `minimum` counts: which uses a new connection checks
   * depends on the order answers arrive in, and checks of records with more entries read more.
   */
  checkSpread: number;
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
  let checkSpread = 0;
  for (const org of sandbox.organizations()) {
    for (const family of families) {
      const orgId = org.ids[family];
      for (const [stream, shape] of Object.entries(TOP[family])) {
        const n = sandbox.count(orgId, family, stream);
        const top = pagesOf(n, perPage);
        minimum += top.pages + (shape.detail ? n : 0);
        exactMultiples += top.extra;
        // What checking a credit's record against its own lists costs, by credit (A48).
        const embeddedChecks = new Map<string, number>();
        for (const child of shape.children ?? []) {
          const countOf = new Map<string, number>();
          for (const r of sandbox.truth(orgId, family, child.stream)) {
            const parent = String(r[child.parentKey]);
            countOf.set(parent, (countOf.get(parent) ?? 0) + 1);
          }
          const listPages = (parent: string): number => pagesOf(countOf.get(parent) ?? 0, child.paged ? perPage : DEFAULT_PAGE).pages;
          // A first sync with two parents or more reads the list of all children, by pages; a
          // server whose entries do not name their parent makes it read each parent's list too (A49).
          if (child.all && n >= 2) {
            const all = pagesOf(sandbox.count(orgId, family, child.stream), perPage);
            minimum += all.pages;
            exactMultiples += all.extra;
            if (!sandbox.variants.allRefundsWithoutCredit) {
              // A few queued credits' own lists, read to check the list of all of them.
              const parents = sandbox.truth(orgId, family, stream).map((r) => String(r[child.parentKey]));
              const checks = range(parents.map(listPages), NEW_CONNECTION_CHECKS);
              minimum += checks.min;
              checkSpread += checks.max - checks.min;
              continue;
            }
          }
          for (const r of sandbox.truth(orgId, family, stream)) {
            const parent = String(r[child.parentKey]);
            // A parent whose single record carries its whole list, as its total shows, needs no list
            // read, unless the record is one a new connection checks.
            if (child.embedded && provesWhole(r, child.embedded, sandbox.variants.embeddedChildrenDropped)) {
              embeddedChecks.set(parent, (embeddedChecks.get(parent) ?? 0) + listPages(parent));
              continue;
            }
            const c = pagesOf(countOf.get(parent) ?? 0, child.paged ? perPage : DEFAULT_PAGE);
            minimum += c.pages;
            exactMultiples += c.extra;
          }
        }
        const checks = range([...embeddedChecks.values()], NEW_CONNECTION_CHECKS);
        minimum += checks.min;
        checkSpread += checks.max - checks.min;
      }
    }
  }
  return { minimum, exactMultiples, checkSpread };
}
