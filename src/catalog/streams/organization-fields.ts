import type { Family } from '../families.js';
import { cols } from '../columns.js';
import type { ColumnSpec, StreamSpec } from '../types.js';

/** The organization record of spec section 1, the same in every family. */
export const ORGANIZATION_COLUMNS: readonly ColumnSpec[] = cols(
  {
    organization_id: 'id',
    name: 'text',
    contact_name: 'text',
    email: 'text',
    is_default_org: 'boolean',
    language_code: 'text',
    fiscal_year_start_month: 'integer',
    account_created_date: 'date',
    time_zone: 'text',
    is_org_active: 'boolean',
    currency_id: 'id',
    currency_code: 'text',
    currency_symbol: 'text',
    currency_format: 'text',
    price_precision: 'integer',
  },
  { spec: '1' },
);

/**
 * Every family lists its organizations the same way (spec 1); the records are organizations,
 * so the stream is read once per connection rather than per organization.
 */
export function organizationsStream(family: Family, spec: string): StreamSpec {
  return {
    name: 'organizations',
    family,
    path: '/organizations',
    recordsKey: ['organizations'],
    primaryKey: 'organization_id',
    organizationList: true,
    paginated: false,
    kind: 'settings',
    columns: ORGANIZATION_COLUMNS,
    children: [],
    spec,
    description: `Organizations the connection can read in the ${family} family.`,
  };
}
