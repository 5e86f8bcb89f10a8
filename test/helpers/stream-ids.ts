/**
 * Plain data about the streams, with no imports, so that tests comparing names
 * (test/catalog/stream-names.test.ts) load nothing else.
 */
export type Family = 'books' | 'inventory' | 'invoice' | 'billing';

/**
 * The id field of every stream, written out here rather than read from the catalog so that a
 * wrong catalog entry cannot make these tests agree with it.
 */
export const ID_FIELDS: Record<Family, Record<string, string>> = {
  books: {
    organizations: 'organization_id',
    users: 'user_id',
    vendor_credits: 'vendor_credit_id',
    vendor_credit_refunds: 'vendor_credit_refund_id',
    vendor_credit_bills: 'vendor_credit_bill_id',
    webhooks: 'webhook_id',
  },
  inventory: {
    organizations: 'organization_id',
    currencies: 'currency_id',
    contacts: 'contact_id',
    contact_persons: 'contact_person_id',
    contact_comments: 'comment_id',
    sales_orders: 'salesorder_id',
    vendor_credits: 'vendor_credit_id',
    vendor_credit_refunds: 'vendor_credit_refund_id',
  },
  invoice: { organizations: 'organization_id', projects: 'project_id', tasks: 'task_id' },
  billing: { organizations: 'organization_id', plans: 'plan_code', recurring_expenses: 'recurring_expense_id', events: 'event_id' },
};
