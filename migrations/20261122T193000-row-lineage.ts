import type { Kysely } from 'kysely';

/**
 * Row lineage (issue 11): every data table gets `_run_id`, the run that last wrote the row
 * (joins `_svcsync_runs.run_id`). Rows written before this migration keep null until a run
 * rewrites them. The table list is frozen here; tables created by later migrations carry the
 * column from the start.
 */
export const ALTERED_TABLES: readonly string[] = [
  'books_organizations',
  'books_users',
  'books_users__email_ids',
  'books_vendor_credits',
  'books_vendor_credits__line_items',
  'books_vendor_credits__line_items__tags',
  'books_vendor_credits__acquisition_vat_summary',
  'books_vendor_credits__reverse_charge_vat_summary',
  'books_vendor_credits__documents',
  'books_vendor_credits__custom_fields',
  'books_vendor_credits__comments',
  'books_vendor_credit_refunds',
  'books_vendor_credit_refunds__imported_transactions',
  'books_vendor_credit_bills',
  'books_webhooks',
  'books_webhooks__entity_parameters',
  'books_webhooks__additional_parameters',
  'books_webhooks__headers',
  'books_webhooks__form_data',
  'books_webhooks__query_parameters',
  'inventory_organizations',
  'inventory_currencies',
  'inventory_contacts',
  'inventory_contacts__custom_fields',
  'inventory_contacts__opening_balances',
  'inventory_contact_persons',
  'inventory_contact_comments',
  'inventory_sales_orders',
  'inventory_sales_orders__line_items',
  'inventory_sales_orders__taxes',
  'inventory_sales_orders__contact_persons_associated',
  'inventory_sales_orders__documents',
  'inventory_sales_orders__custom_fields',
  'inventory_vendor_credits',
  'inventory_vendor_credits__line_items',
  'inventory_vendor_credits__line_items__tags',
  'inventory_vendor_credits__acquisition_vat_summary',
  'inventory_vendor_credits__reverse_charge_vat_summary',
  'inventory_vendor_credits__documents',
  'inventory_vendor_credits__custom_fields',
  'inventory_vendor_credits__comments',
  'inventory_vendor_credits__bills_credited',
  'inventory_vendor_credit_refunds',
  'inventory_vendor_credit_refunds__imported_transactions',
  'invoice_organizations',
  'invoice_projects',
  'invoice_tasks',
  'billing_organizations',
  'billing_plans',
  'billing_plans__tags',
  'billing_plans__custom_fields',
  'billing_plans__item_tax_preferences',
  'billing_plans__addons',
  'billing_plans__addons__price_brackets',
  'billing_recurring_expenses',
  'billing_recurring_expenses__acquisition_vat_summary',
  'billing_recurring_expenses__reverse_charge_vat_summary',
  'billing_recurring_expenses__custom_fields',
  'billing_events',
  'billing_events__webhooks',
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ALTERED_TABLES) await db.schema.alterTable(table).addColumn('_run_id', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ALTERED_TABLES) await db.schema.alterTable(table).dropColumn('_run_id').execute();
}
