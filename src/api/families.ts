import type { Family } from '../catalog/families.js';

/** Spec 1 and 9: the version is part of each family's root path. */
export const FAMILY_ROOTS: Record<Family, string> = {
  books: '/books/v3',
  inventory: '/inventory/v1',
  invoice: '/invoice/v3',
  billing: '/billing/v1',
};

/** Where a request names its organization: a header, the `organization_id` query parameter, or both. */
export interface OrganizationIdentification {
  readonly header?: string;
  readonly query: boolean;
}

/**
 * Spec 1: books and inventory take the query parameter, billing the header. Invoice states its
 * header as "required on the task endpoints" only, while spec 4 says the organization is the
 * query parameter "unless the header form is stated": a server may read either on the invoice
 * family's other endpoints (projects), so invoice requests carry both (A41).
 */
export const ORGANIZATION_IDENTIFICATION: Record<Family, OrganizationIdentification> = {
  books: { query: true },
  inventory: { query: true },
  invoice: { header: 'X-com-svc-invoice-organizationid', query: true },
  billing: { header: 'X-com-svc-subscriptions-organizationid', query: false },
};

/** Spec 5.4: the scope service name of each family. */
export const SCOPE_PREFIXES: Record<Family, string> = {
  books: 'SvcBooks',
  inventory: 'SvcInventory',
  invoice: 'SvcInvoice',
  billing: 'SvcSubscriptions',
};

export type Query = Record<string, string | number | undefined>;

export interface FamilyRequest {
  family: Family;
  organizationId?: string | undefined;
  /** Path under the family root, starting with "/". */
  path: string;
  query?: Query | undefined;
}

export interface BuiltRequest {
  url: string;
  /** Family root + path + query, for logs and error messages (carries nothing secret). */
  display: string;
  headers: Record<string, string>;
}

/**
 * Where a family request goes and which headers identify the organization. The token is
 * not added here: it travels only in the Authorization header the client sets last.
 */
export function buildFamilyRequest(apiBase: string, req: FamilyRequest): BuiltRequest {
  if (!req.path.startsWith('/')) throw new TypeError(`path must start with "/": ${req.path}`);
  const ident = ORGANIZATION_IDENTIFICATION[req.family];
  const params = new URLSearchParams();
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (req.organizationId !== undefined) {
    if (ident.query) params.set('organization_id', req.organizationId);
    if (ident.header) headers[ident.header] = req.organizationId;
  }
  for (const [key, value] of Object.entries(req.query ?? {})) {
    if (value === undefined) continue;
    // The organization is identified once, the way the family requires; a caller's copy would duplicate it.
    if (key === 'organization_id' && ident.query && req.organizationId !== undefined) continue;
    params.set(key, String(value));
  }
  const qs = params.toString();
  const display = `${FAMILY_ROOTS[req.family]}${req.path}${qs ? `?${qs}` : ''}`;
  return { url: `${apiBase.replace(/\/+$/, '')}${display}`, display, headers };
}

// Spec 4 / 5.4: which scope resource a path's first segment needs. Unknown segments fall
// back to the family prefix alone in hints.
const SCOPE_RESOURCES: Record<string, string> = {
  organizations: 'settings',
  settings: 'settings',
  users: 'settings',
  currencies: 'settings',
  salesorders: 'salesorders',
  contacts: 'contacts',
  vendorcredits: 'debitnotes',
  projects: 'projects',
  recurringexpenses: 'expenses',
  plans: 'plans',
  events: 'webhooks',
  invoices: 'invoices',
  estimates: 'estimates',
  bills: 'bills',
  customers: 'customers',
  subscriptions: 'subscriptions',
  products: 'products',
  addons: 'addons',
  coupons: 'coupons',
  payments: 'payments',
};

const OPERATIONS: Record<string, string> = { GET: 'READ', POST: 'CREATE', PUT: 'UPDATE', DELETE: 'DELETE' };

/** The scope an operation needs (e.g. SvcInventory.salesorders.READ), or undefined when not derivable. */
export function scopeFor(family: Family, method: string, path: string): string | undefined {
  const first = path.split('?')[0]?.split('/').filter(Boolean)[0];
  const resource = first === undefined ? undefined : SCOPE_RESOURCES[first];
  const op = OPERATIONS[method.toUpperCase()];
  if (!resource || !op) return undefined;
  return `${SCOPE_PREFIXES[family]}.${resource}.${op}`;
}
