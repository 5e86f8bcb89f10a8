import { DETAIL, cols, col, only } from '../columns.js';
import type { ChildSpec, ColumnSpec } from '../types.js';

/**
 * Spec 2.8 is shared by the books and inventory vendor credits; each family's entry
 * spreads these and adds what differs (books line items carry project_id).
 */

/** A6: the list items carry these, and so does the single record. */
export const VENDOR_CREDIT_LIST_COLUMNS: readonly ColumnSpec[] = cols(
  {
    vendor_credit_id: 'id',
    vendor_credit_number: 'text',
    status: 'text',
    reference_number: 'text',
    date: 'date',
    vendor_id: 'id',
    vendor_name: 'text',
    currency_id: 'id',
    currency_code: 'text',
    total: 'number',
    balance: 'number',
    created_time: 'timestamp',
    last_modified_time: 'timestamp',
  },
  { spec: 'A6' },
);

/** Spec 2.8 fields that only the single-record response carries (A5). */
export const VENDOR_CREDIT_DETAIL_COLUMNS: readonly ColumnSpec[] = cols(
  {
    source_of_supply: 'text',
    destination_of_supply: 'text',
    place_of_supply: 'text',
    gst_no: 'text',
    gst_treatment: 'text',
    tax_treatment: 'text',
    pricebook_id: 'id',
    is_reverse_charge_applied: 'boolean',
    exchange_rate: 'number',
    price_precision: 'integer',
    vat_treatment: 'text',
    filed_in_vat_return_id: 'id',
    filed_in_vat_return_name: 'text',
    filed_in_vat_return_type: 'text',
    is_inclusive_tax: 'boolean',
    location_id: 'id',
    location_name: 'text',
    acquisition_vat_total: 'number',
    reverse_charge_vat_total: 'number',
    sub_total: 'number',
    total_credits_used: 'number',
    total_refunded_amount: 'number',
    notes: 'text',
  },
  { spec: '2.8', sources: DETAIL },
);

/** Spec 2.8 line item, without the books-only project fields. */
export const VENDOR_CREDIT_LINE_ITEM_COLUMNS: readonly ColumnSpec[] = [
  ...cols({
    line_item_id: 'id',
    item_id: 'id',
    sku: 'text',
    account_id: 'id',
    account_name: 'text',
    product_type: 'text',
    location_id: 'id',
    location_name: 'text',
    reverse_charge_tax_id: 'id',
    reverse_charge_tax_name: 'text',
    reverse_charge_tax_percentage: 'number',
    reverse_charge_tax_amount: 'number',
    name: 'text',
    description: 'text',
    item_order: 'integer',
    quantity: 'number',
    unit: 'text',
    bcy_rate: 'number',
    rate: 'number',
    tax_id: 'id',
    tds_tax_id: 'id',
    tax_treatment_code: 'text',
    tax_exemption_id: 'id',
    tax_exemption_code: 'text',
    tax_name: 'text',
    tax_type: 'text',
    tax_percentage: 'number',
    item_total: 'number',
    item_total_inclusive_of_tax: 'number',
    hsn_or_sac: 'text',
    acquisition_vat_id: 'id',
    acquisition_vat_name: 'text',
    acquisition_vat_percentage: 'number',
    acquisition_vat_amount: 'number',
    reverse_charge_vat_id: 'id',
    reverse_charge_vat_name: 'text',
    reverse_charge_vat_percentage: 'number',
    reverse_charge_vat_amount: 'number',
    stock_on_hand: 'number',
  }),
  col('item_custom_fields', 'json'),
  col('serial_numbers', 'json'),
];

export const VENDOR_CREDIT_LINE_ITEM_TAGS: ChildSpec = {
  field: 'tags',
  key: 'tag_id',
  spec: '2.8',
  description: 'Reporting tags on the line item, with the option chosen for each.',
  columns: cols({ tag_id: 'id', tag_option_id: 'id' }),
};

/** VAT summaries wrap each entry in `tax` (spec 2.8; flat as spec 2.6 writes them is read too); position keys them. */
function vatSummary(field: string, what: string): ChildSpec {
  return {
    field,
    spec: '2.8',
    description: `${what} VAT per tax; the spec wraps each entry in \`tax\`.`,
    columns: [
      col('tax__tax_name', 'text', { path: ['tax', 'tax_name'], alsoAt: [['tax_name']] }),
      col('tax__tax_amount', 'number', { path: ['tax', 'tax_amount'], alsoAt: [['tax_amount']] }),
    ],
  };
}

/** Children every vendor credit has, besides its line items; all from the single record. */
export const VENDOR_CREDIT_DETAIL_CHILDREN: readonly ChildSpec[] = only(DETAIL, [
  vatSummary('acquisition_vat_summary', 'Acquisition'),
  vatSummary('reverse_charge_vat_summary', 'Reverse-charge'),
  {
    field: 'documents',
    key: 'document_id',
    spec: '2.8',
    description: 'Files attached to the credit.',
    columns: cols({ document_id: 'id', file_name: 'text' }),
  },
  {
    field: 'custom_fields',
    key: 'custom_field_id',
    spec: '2.8',
    description: 'The organization\u2019s custom fields on the credit, with their values.',
    columns: [col('custom_field_id', 'id', { alsoAt: [['customfield_id']] }), ...cols({ label: 'text', value: 'text', index: 'integer' })],
  },
  {
    field: 'comments',
    key: 'comment_id',
    spec: '2.8',
    description: 'Comments and history of the credit; no list endpoint reads them, so they come from the single record.',
    columns: cols({
      comment_id: 'id',
      vendor_credit_id: 'id',
      description: 'text',
      commented_by_id: 'id',
      commented_by: 'text',
      comment_type: 'text',
      date: 'date',
      date_description: 'text',
      time: 'text',
      operation_type: 'text',
      transaction_id: 'id',
      transaction_type: 'text',
    }),
  },
]);

/** Spec 2.8 refund record, read per vendor credit in both families. */
export const VENDOR_CREDIT_REFUND_COLUMNS: readonly ColumnSpec[] = cols(
  {
    vendor_credit_refund_id: 'id',
    vendor_credit_id: 'id',
    date: 'date',
    refund_mode: 'text',
    reference_number: 'text',
    description: 'text',
    amount: 'number',
    amount_bcy: 'number',
    amount_fcy: 'number',
    exchange_rate: 'number',
    account_id: 'id',
    account_name: 'text',
    vendor_credit_number: 'text',
    customer_name: 'text',
    filed_in_vat_return_id: 'id',
    filed_in_vat_return_name: 'text',
    filed_in_vat_return_type: 'text',
  },
  { spec: '2.8' },
);

export const VENDOR_CREDIT_REFUND_CHILDREN: readonly ChildSpec[] = [
  {
    field: 'imported_transactions',
    key: 'imported_transaction_id',
    spec: '2.8',
    description: 'Bank transactions matched to the refund.',
    columns: cols({
      imported_transaction_id: 'id',
      date: 'date',
      amount: 'number',
      payee: 'text',
      description: 'text',
      reference_number: 'text',
      status: 'text',
      account_id: 'id',
    }),
  },
];

/** Spec 2.8 bill credited record. */
export const BILL_CREDITED_COLUMNS: readonly ColumnSpec[] = cols(
  {
    vendor_credit_bill_id: 'id',
    vendor_credit_id: 'id',
    bill_id: 'id',
    date: 'date',
    bill_number: 'text',
    amount: 'number',
  },
  { spec: '2.8' },
);
