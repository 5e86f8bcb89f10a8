/** The URL space of the four families: path templates, the stream each serves, the scope each needs. */
import type { Family } from './organizations.js';

export type RouteKind = 'organizations' | 'list' | 'detail' | 'children' | 'child' | 'all-children';

export interface Route {
  family: Family;
  /** Segments after the family root; `{id}` and `{child}` match one segment. */
  segments: readonly string[];
  template: string;
  kind: RouteKind;
  stream: string;
  key: string;
  scope: string;
}

export const ROOTS: Record<Family, string> = {
  books: '/books/v3',
  inventory: '/inventory/v1',
  invoice: '/invoice/v3',
  billing: '/billing/v1',
};

type Spec = [Family, string, RouteKind, string, string, string];

// Order matters where a literal segment competes with {id} (`/vendorcredits/refunds`).
const SPECS: readonly Spec[] = [
  ['books', 'organizations', 'organizations', 'organizations', 'organizations', 'SvcBooks.settings.READ'],
  ['books', 'users', 'list', 'users', 'users', 'SvcBooks.settings.READ'],
  ['books', 'users/{id}', 'detail', 'users', 'user', 'SvcBooks.settings.READ'],
  ['books', 'vendorcredits', 'list', 'vendor_credits', 'vendor_credits', 'SvcBooks.debitnotes.READ'],
  ['books', 'vendorcredits/{id}', 'detail', 'vendor_credits', 'vendor_credit', 'SvcBooks.debitnotes.READ'],
  ['books', 'vendorcredits/{id}/refunds', 'children', 'vendor_credit_refunds', 'vendor_credit_refunds', 'SvcBooks.debitnotes.READ'],
  ['books', 'vendorcredits/{id}/bills', 'children', 'vendor_credit_bills', 'bills_credited', 'SvcBooks.debitnotes.READ'],
  ['books', 'settings/webhooks', 'list', 'webhooks', 'webhooks', 'SvcBooks.settings.READ'],
  ['inventory', 'organizations', 'organizations', 'organizations', 'organizations', 'SvcInventory.settings.READ'],
  ['inventory', 'settings/currencies', 'list', 'currencies', 'currencies', 'SvcInventory.settings.READ'],
  ['inventory', 'contacts', 'list', 'contacts', 'contacts', 'SvcInventory.contacts.READ'],
  ['inventory', 'contacts/{id}/contactpersons', 'children', 'contact_persons', 'contact_persons', 'SvcInventory.contacts.READ'],
  ['inventory', 'contacts/{id}/comments', 'children', 'contact_comments', 'contact_comments', 'SvcInventory.contacts.READ'],
  ['inventory', 'salesorders', 'list', 'sales_orders', 'salesorders', 'SvcInventory.salesorders.READ'],
  ['inventory', 'salesorders/{id}', 'detail', 'sales_orders', 'salesorder', 'SvcInventory.salesorders.READ'],
  ['inventory', 'vendorcredits', 'list', 'vendor_credits', 'vendor_credits', 'SvcInventory.debitnotes.READ'],
  ['inventory', 'vendorcredits/refunds', 'all-children', 'vendor_credit_refunds', 'vendor_credit_refunds', 'SvcInventory.debitnotes.READ'],
  ['inventory', 'vendorcredits/{id}', 'detail', 'vendor_credits', 'vendor_credit', 'SvcInventory.debitnotes.READ'],
  ['inventory', 'vendorcredits/{id}/refunds', 'children', 'vendor_credit_refunds', 'vendor_credit_refunds', 'SvcInventory.debitnotes.READ'],
  [
    'inventory',
    'vendorcredits/{id}/refunds/{child}',
    'child',
    'vendor_credit_refunds',
    'vendor_credit_refund',
    'SvcInventory.debitnotes.READ',
  ],
  ['invoice', 'organizations', 'organizations', 'organizations', 'organizations', 'SvcInvoice.settings.READ'],
  ['invoice', 'projects', 'list', 'projects', 'projects', 'SvcInvoice.projects.READ'],
  ['invoice', 'projects/{id}/tasks', 'children', 'tasks', 'tasks', 'SvcInvoice.projects.READ'],
  ['invoice', 'projects/{id}/tasks/{child}', 'child', 'tasks', 'task', 'SvcInvoice.projects.READ'],
  ['billing', 'organizations', 'organizations', 'organizations', 'organizations', 'SvcSubscriptions.settings.READ'],
  ['billing', 'plans', 'list', 'plans', 'plans', 'SvcSubscriptions.plans.READ'],
  ['billing', 'recurringexpenses', 'list', 'recurring_expenses', 'recurring_expenses', 'SvcSubscriptions.expenses.READ'],
  ['billing', 'events', 'list', 'events', 'events', 'SvcSubscriptions.webhooks.READ'],
  ['billing', 'events/{id}', 'detail', 'events', 'event', 'SvcSubscriptions.webhooks.READ'],
];

const CHILD_PARAM: Record<string, string> = { tasks: '{task_id}', vendor_credit_refunds: '{refund_id}' };

export const ROUTES: readonly Route[] = SPECS.map(([family, path, kind, stream, key, scope]) => {
  const segments = path.split('/');
  const template = `${ROOTS[family]}/${segments.map((s) => (s === '{child}' ? (CHILD_PARAM[stream] ?? '{child_id}') : s)).join('/')}`;
  return { family, segments, template, kind, stream, key, scope };
});

export interface RouteMatch {
  route: Route;
  id: string | undefined;
  child: string | undefined;
}

const FAMILIES = Object.keys(ROOTS) as Family[];

/** The matched route, or the family alone when the root matched but no path did. */
export function matchRoute(path: string): RouteMatch | undefined {
  for (const family of FAMILIES) {
    const root = ROOTS[family];
    if (!path.startsWith(root + '/')) continue;
    const parts = path.slice(root.length + 1).split('/');
    if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
    for (const route of ROUTES) {
      if (route.family !== family || route.segments.length !== parts.length) continue;
      let id: string | undefined;
      let child: string | undefined;
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const seg = route.segments[i];
        const part = decodeURIComponent(parts[i] ?? '');
        if (seg === '{id}') id = part;
        else if (seg === '{child}') child = part;
        else ok = seg === part;
        if (ok && (seg === '{id}' || seg === '{child}') && part === '') ok = false;
      }
      if (ok) return { route, id, child };
    }
    return undefined;
  }
  return undefined;
}
