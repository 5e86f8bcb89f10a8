/** Records shaped as the spec's sections show them, for the normalizer tests. */

export const SALES_ORDER_LIST_ITEM = {
  salesorder_id: '4600000000123456789',
  customer_name: 'Bowman & Co',
  customer_id: 460000000001234,
  status: 'confirmed',
  salesorder_number: 'SO-00012',
  reference_number: 'REF-9',
  date: '2026-11-20',
  shipment_date: '',
  shipment_days: '3',
  quantity: 5,
  quantity_invoiced: '0.00',
  quantity_packed: 0,
  quantity_shipped: 0,
  currency_code: 'USD',
  total: '1250.50',
  bcy_total: 1250.5,
  created_time: '2026-11-20T10:15:30+0530',
  last_modified_time: '2026-11-21T09:00:00-0800',
  is_emailed: true,
  is_drop_shipment: false,
  is_backorder: 'false',
  sales_channel: 'direct_sales',
  custom_fields: [
    { custom_field_id: '46000000000999', index: 1, label: 'Region', value: 'West' },
    { custom_field_id: '46000000000998', index: '2', label: 'Priority', value: 3 },
  ],
  unknown_field: 'stays in _raw only',
};

export const SALES_ORDER_DETAIL = {
  salesorder_id: '4600000000123456789',
  salesorder_number: 'SO-00012',
  date: '2026-11-20',
  status: 'confirmed',
  customer_id: '460000000001234',
  customer_name: 'Bowman & Co',
  currency_id: '460000000000097',
  currency_code: 'USD',
  exchange_rate: 1,
  discount: '12.5%',
  is_discount_before_tax: true,
  discount_type: 'entity_level',
  shipping_charge: '10.00',
  adjustment: 0,
  total: 1250.5,
  sub_total: 1300,
  created_time: '2026-11-20T10:15:30+0530',
  last_modified_time: '2026-11-21T09:00:00-0800',
  billing_address: { address: '4 Main St', city: 'Portland', state: 'OR', zip: '97201', country: 'USA', fax: '' },
  shipping_address: { address: '9 Dock Rd', city: 'Seattle' },
  contact_persons_associated: [
    {
      contact_person_id: '460000000003001',
      contact_person_name: 'Ann Lee',
      first_name: 'Ann',
      last_name: 'Lee',
      contact_person_email: 'ann@example.com',
      communication_preference: { is_email_enabled: true, is_whatsapp_enabled: false },
    },
  ],
  line_items: [
    {
      line_item_id: '460000000005001',
      item_id: '460000000004001',
      name: 'Widget',
      rate: '100.00',
      quantity: 10,
      item_order: 1,
      discount: 25,
      item_total: 975,
      is_invoiced: false,
    },
    {
      line_item_id: 460000000005002,
      item_id: '460000000004002',
      name: 'Gadget',
      rate: 'n/a',
      quantity: '2',
      item_order: 2,
      discount: '5%',
      item_total: 325,
    },
  ],
  taxes: [
    { tax_name: 'Sales Tax', tax_amount: 30.5 },
    { tax_name: 'County', tax_amount: '4.25' },
  ],
  documents: [
    {
      document_id: '460000000007001',
      file_name: 'po.pdf',
      file_type: 'pdf',
      file_size: '2048',
      can_send_in_mail: true,
      attachment_order: 1,
    },
  ],
};

export const BOOKS_VENDOR_CREDIT_DETAIL = {
  vendor_credit_id: '460000000010001',
  vendor_credit_number: 'DN-00001',
  date: '2026-10-01',
  status: 'open',
  vendor_id: '460000000011001',
  vendor_name: 'Acme Supplies',
  currency_id: '460000000000097',
  currency_code: 'GBP',
  is_reverse_charge_applied: true,
  vat_treatment: 'eu_vat_registered',
  total: 120,
  balance: '120.00',
  acquisition_vat_total: 20,
  created_time: '2026-10-01T08:00:00+0100',
  last_modified_time: '2026-10-02T08:00:00+0100',
  line_items: [
    {
      line_item_id: '460000000012001',
      item_id: '460000000013001',
      name: 'Paper',
      quantity: 10,
      rate: 10,
      item_total: 100,
      project_id: '460000000014001',
      acquisition_vat_id: '460000000015001',
      acquisition_vat_percentage: 20,
      serial_numbers: ['SN1', 'SN2'],
      tags: [
        { tag_id: '460000000016001', tag_option_id: '460000000017001' },
        { tag_id: '460000000016002', tag_option_id: '460000000017002' },
      ],
    },
  ],
  acquisition_vat_summary: [{ tax: { tax_name: 'VAT 20%', tax_amount: 20 } }],
  reverse_charge_vat_summary: [],
  comments: [
    { comment_id: '460000000018001', vendor_credit_id: 'someone-else', description: 'Created', date: '2026-10-01', time: '8:00 AM' },
  ],
  vendor_credit_refunds: [{ vendor_credit_refund_id: '460000000019001', amount: 5 }],
  bills_credited: [],
};

export const PLAN = {
  plan_code: 'GOLD-M',
  name: 'Gold monthly',
  status: 'active',
  product_id: '460000000020001',
  recurring_price: 49.99,
  interval: 1,
  interval_unit: 'months',
  billing_cycles: -1,
  trial_period: '14',
  setup_fee: '0',
  sat_item_key_code: '01010101',
  tags: [
    { tag_id: '460000000021001', tag_option_id: '460000000022001', tag_name: 'Tier', tag_option_name: 'Gold', is_tag_mandatory: false },
  ],
  addons: [
    {
      addon_code: 'SEATS',
      name: 'Extra seats',
      pricing_scheme: 'tier',
      price_brackets: [
        { start_quantity: 1, end_quantity: 10, price: 5 },
        { start_quantity: 11, end_quantity: '', price: '4.50' },
      ],
    },
    { addon_code: 'STORAGE', name: 'Storage', pricing_scheme: 'unit', price_brackets: [{ price: 2 }] },
  ],
  created_time: '2026-01-05T12:00:00+0000',
  updated_time: '2026-11-01T12:00:00+0000',
};

export const TASK = {
  project_id: '460000000030001',
  task_id: '460000000031001',
  task_name: 'Design review',
  billed_hours: '12:30',
  log_time: '13:05',
  un_billed_hours: '0:35',
  rate: '80',
  is_billable: true,
  status: 'active',
};

export const CONTACT_PERSON = {
  contact_id: '460000000040001',
  contact_person_id: '460000000041001',
  salutation: 'Ms',
  first_name: 'Ann',
  last_name: 'Lee',
  email: 'ann@example.com',
  is_primary_contact: true,
  is_added_in_portal: false,
  communication_preference: { is_sms_enabled: true, is_whatsapp_enabled: 'false' },
};

export const EVENT_LIST_ITEM = { event_id: '460000000050001', event_type: 'subscription_created', event_time: '2026-11-20T10:15:30+0530' };

export const EVENT_DETAIL = {
  ...EVENT_LIST_ITEM,
  payload: '{"subscription":{"subscription_id":"1"}}',
  webhooks: [
    { webhook_id: '460000000051001', url: 'https://hooks.example.com/a', status: 'success', last_updated_time: '2026-11-20T10:16:00+0530' },
    { webhook_id: '460000000051002', url: 'https://hooks.example.com/b', status: 'failure', last_updated_time: 'garbage' },
  ],
};

export const RECURRING_EXPENSE = {
  recurring_expense_id: '460000000060001',
  recurrence_name: 'Office rent',
  recurrence_frequency: 'months',
  repeat_every: 1,
  start_date: '2026-01-01',
  next_expense_date: '2026-12-01',
  amount: 2000,
  is_billable: false,
  last_modified_time: '2026-11-02T09:30:00+0530',
  line_item: {
    line_item_id: '460000000061001',
    account_id: '460000000062001',
    account_name: 'Rent',
    amount: 2000,
    tax_amount: '0.00',
    item_order: 1,
  },
  acquisition_vat_summary: [{ tax_name: 'VAT', tax_amount: 0 }],
  custom_fields: [{ customfield_id: '460000000063001', value: 'HQ' }],
};

export const WEBHOOK = {
  webhook_id: '460000000070001',
  entity: 'invoice',
  webhook_name: 'To ERP',
  method: 'POST',
  url: 'https://erp.example.com/hook',
  secret: 'abcdef123456',
  events: ['invoice_created', 'invoice_updated'],
  headers: [{ param_name: 'X-Token', param_value: 'not-a-secret-of-ours' }],
  entity_parameters: [],
  is_active: true,
};

export const ORGANIZATION = {
  organization_id: '10234695',
  name: 'Zylker',
  is_default_org: true,
  fiscal_year_start_month: 1,
  account_created_date: '2020-04-01',
  currency_code: 'USD',
  price_precision: 2,
};

export const USER_LIST_ITEM = {
  user_id: '460000000080001',
  role_id: '460000000081001',
  name: 'Ann Lee',
  email: 'ann@example.com',
  user_role: 'admin',
  status: 'active',
  is_current_user: true,
  photo_url: 'https://example.com/ann.png',
  is_customer_segmented: false,
  is_vendor_segmented: false,
  user_type: 'standard',
};

export const VENDOR_CREDIT_REFUND = {
  vendor_credit_refund_id: '460000000019001',
  vendor_credit_id: '460000000010001',
  date: '2026-10-05',
  refund_mode: 'cash',
  reference_number: 'REF-000123',
  description: 'Refund of overpayment',
  amount: 5,
  exchange_rate: 1,
  account_id: '460000000090001',
  account_name: 'Petty Cash',
  vendor_credit_number: 'DN-00001',
  imported_transactions: [
    {
      imported_transaction_id: '460000000091001',
      date: '2026-10-06',
      amount: 5,
      payee: 'Acme Supplies',
      description: 'Refund',
      reference_number: 'REF-000123',
      status: 'matched',
      account_id: '460000000090001',
    },
  ],
};

export const BILL_CREDITED = {
  vendor_credit_id: '460000000010001',
  bill_id: '460000000092001',
  vendor_credit_bill_id: '460000000093001',
  date: '2026-10-03',
  bill_number: 'BL-00042',
  amount: 40,
};

export const CURRENCY = {
  currency_id: '460000000000097',
  currency_code: 'EUR',
  currency_name: 'Euro',
  currency_symbol: '€',
  price_precision: 2,
  currency_format: '1,234,567.89',
  is_base_currency: false,
  exchange_rate: 1.0825,
  effective_date: '2026-11-20',
};

export const CONTACT = {
  contact_id: '460000000040001',
  contact_name: 'Bowman & Co',
  company_name: 'Bowman & Co',
  has_transaction: true,
  contact_type: 'customer',
  is_linked_with_crm: false,
  payment_terms: 30,
  payment_terms_label: 'Net 30',
  currency_id: '460000000000097',
  currency_code: 'USD',
  language_code: 'en',
  outstanding_receivable_amount: 1250.5,
  status: 'active',
  billing_address: { attention: 'Accounts', address: '4 Main St', city: 'Portland', state: 'OR', zip: '97201', country: 'USA' },
  default_templates: { invoice_template_id: '460000000094001', invoice_template_name: 'Standard' },
  custom_fields: [{ index: 1, label: 'Region', value: 'West' }],
  opening_balances: [{ location_id: '460000000095001', exchange_rate: 1, opening_balance_amount: 100 }],
  created_time: '2026-01-10T09:00:00+0000',
  last_modified_time: '2026-11-21T17:00:00+0000',
};

export const CONTACT_COMMENT = {
  comment_id: '460000000042001',
  contact_id: '460000000040001',
  contact_name: 'Bowman & Co',
  description: 'Called about the overdue invoice',
  commented_by_id: '460000000080001',
  commented_by: 'Ann Lee',
  date: '2026-11-19',
  date_description: '2 days ago',
  time: '10:15 AM',
  transaction_type: 'contact',
  is_entity_deleted: false,
  operation_type: 'added',
};

export const INVENTORY_VENDOR_CREDIT_DETAIL = {
  vendor_credit_id: '460000000010002',
  vendor_credit_number: 'DN-00002',
  date: '2026-10-01',
  status: 'open',
  vendor_id: '460000000011001',
  vendor_name: 'Acme Supplies',
  currency_code: 'USD',
  total: 40,
  balance: 0,
  created_time: '2026-10-01T08:00:00+0000',
  last_modified_time: '2026-10-03T08:00:00+0000',
  line_items: [{ line_item_id: '460000000012002', item_id: '460000000013001', name: 'Paper', quantity: 4, rate: 10, item_total: 40 }],
  bills_credited: [{ ...BILL_CREDITED, vendor_credit_id: '460000000010002' }],
};

export const PROJECT = {
  project_id: '460000000030001',
  project_name: 'Website redesign',
  customer_id: '460000000040001',
  customer_name: 'Bowman & Co',
  description: 'New storefront',
  status: 'active',
  billing_type: 'based_on_task_hours',
  rate: 80,
  budget_type: 'total_project_hours',
  total_hours: '120:00',
  billed_hours: '40:30',
  un_billed_hours: '79:30',
  created_time: '2026-09-01T09:00:00+0000',
};

/**
 * One record of every stream, keyed by `family.stream`, with the response it comes from.
 * test/catalog/stream-names.test.ts checks the keys against the catalog and the sandbox, and
 * normalize.test.ts runs every entry, so a new stream cannot go without a fixture.
 */
export const RECORDS_BY_STREAM: Readonly<Record<string, { source: 'list' | 'detail'; record: Record<string, unknown> }>> = {
  'books.organizations': { source: 'list', record: ORGANIZATION },
  'books.users': { source: 'list', record: USER_LIST_ITEM },
  'books.vendor_credits': { source: 'detail', record: BOOKS_VENDOR_CREDIT_DETAIL },
  'books.vendor_credit_refunds': { source: 'list', record: VENDOR_CREDIT_REFUND },
  'books.vendor_credit_bills': { source: 'list', record: BILL_CREDITED },
  'books.webhooks': { source: 'list', record: WEBHOOK },
  'inventory.organizations': { source: 'list', record: ORGANIZATION },
  'inventory.currencies': { source: 'list', record: CURRENCY },
  'inventory.contacts': { source: 'list', record: CONTACT },
  'inventory.contact_persons': { source: 'list', record: CONTACT_PERSON },
  'inventory.contact_comments': { source: 'list', record: CONTACT_COMMENT },
  'inventory.sales_orders': { source: 'detail', record: SALES_ORDER_DETAIL },
  'inventory.vendor_credits': { source: 'detail', record: INVENTORY_VENDOR_CREDIT_DETAIL },
  'inventory.vendor_credit_refunds': { source: 'list', record: VENDOR_CREDIT_REFUND },
  'invoice.organizations': { source: 'list', record: ORGANIZATION },
  'invoice.projects': { source: 'list', record: PROJECT },
  'invoice.tasks': { source: 'list', record: TASK },
  'billing.organizations': { source: 'list', record: ORGANIZATION },
  'billing.plans': { source: 'list', record: PLAN },
  'billing.recurring_expenses': { source: 'list', record: RECURRING_EXPENSE },
  'billing.events': { source: 'detail', record: EVENT_DETAIL },
};
