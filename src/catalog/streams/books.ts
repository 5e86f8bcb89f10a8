import { DETAIL, LIST, col, cols } from '../columns.js';
import type { StreamSpec } from '../types.js';
import { organizationsStream } from './organization-fields.js';
import {
  BILL_CREDITED_COLUMNS,
  VENDOR_CREDIT_DETAIL_CHILDREN,
  VENDOR_CREDIT_DETAIL_COLUMNS,
  VENDOR_CREDIT_LINE_ITEM_COLUMNS,
  VENDOR_CREDIT_LINE_ITEM_TAGS,
  VENDOR_CREDIT_LIST_COLUMNS,
  VENDOR_CREDIT_REFUND_CHILDREN,
  VENDOR_CREDIT_REFUND_COLUMNS,
} from './vendor-credit-fields.js';

const WEBHOOK_PARAMETER_LISTS = ['entity_parameters', 'additional_parameters', 'headers', 'form_data', 'query_parameters'];

export const BOOKS_STREAMS: readonly StreamSpec[] = [
  organizationsStream('books', '1'),
  {
    name: 'users',
    family: 'books',
    path: '/users',
    recordsKey: ['users'],
    primaryKey: 'user_id',
    query: { filter_by: 'Status.All' },
    paginated: true,
    detail: { path: '/users/{user_id}', recordKeys: ['user'], defaultEnabled: false, setting: 'user_details' },
    kind: 'settings',
    columns: [
      ...cols(
        {
          user_id: 'id',
          role_id: 'id',
          name: 'text',
          email: 'text',
          user_role: 'text',
          status: 'text',
          photo_url: 'text',
          user_type: 'text',
        },
        { spec: '2.4' },
      ),
      ...cols(
        { is_current_user: 'boolean', is_customer_segmented: 'boolean', is_vendor_segmented: 'boolean' },
        { spec: '2.4', sources: LIST },
      ),
      ...cols({ cost_rate: 'number', is_employee: 'boolean', created_time: 'timestamp' }, { spec: '2.4', sources: DETAIL }),
      col('custom_fields', 'json', { spec: '2.4', sources: DETAIL }),
    ],
    children: [
      {
        field: 'email_ids',
        sources: DETAIL,
        spec: '2.4',
        description: 'Email addresses of the user; is_selected marks the one in use.',
        columns: cols({ email: 'text', is_selected: 'boolean' }),
      },
    ],
    spec: '2.4, 4.4',
    description: 'Users of the organization, every status (active, inactive, invited, deleted).',
  },
  {
    name: 'vendor_credits',
    family: 'books',
    path: '/vendorcredits',
    recordsKey: ['vendor_credits', 'vendorcredits'],
    primaryKey: 'vendor_credit_id',
    query: { filter_by: 'Status.All' },
    paginated: true,
    cursor: { field: 'last_modified_time', sort: { params: { sort_column: 'last_modified_time', sort_order: 'D' } } },
    detail: {
      path: '/vendorcredits/{vendor_credit_id}',
      recordKeys: ['vendor_credit'],
      defaultEnabled: true,
      // Spec 2.8 lists both arrays on the record; A-entry in docs/assumptions.md on when they are complete.
      embeddedChildren: [
        { stream: 'vendor_credit_refunds', field: 'vendor_credit_refunds', total: 'total_refunded_amount' },
        { stream: 'vendor_credit_bills', field: 'bills_credited', total: 'total_credits_used' },
      ],
    },
    kind: 'transaction',
    columns: [...VENDOR_CREDIT_LIST_COLUMNS, ...VENDOR_CREDIT_DETAIL_COLUMNS],
    children: [
      {
        field: 'line_items',
        key: 'line_item_id',
        sources: DETAIL,
        spec: '2.8',
        description: 'The credit\u2019s line items: what was returned or credited, its quantity, price, tax and account.',
        columns: [...VENDOR_CREDIT_LINE_ITEM_COLUMNS, ...cols({ project_id: 'id', project_name: 'text' })],
        children: [VENDOR_CREDIT_LINE_ITEM_TAGS],
      },
      ...VENDOR_CREDIT_DETAIL_CHILDREN,
    ],
    spec: '2.8, 4.9, A5, A6, A7',
    description:
      'Vendor credits (debit notes), every status. ' +
      'The record\u2019s own vendor_credit_refunds[] and bills_credited[] stay in _raw_detail only: ' +
      'books_vendor_credit_refunds and books_vendor_credit_bills read them.',
  },
  {
    name: 'vendor_credit_refunds',
    family: 'books',
    path: '/vendorcredits/{vendor_credit_id}/refunds',
    // Spec 4.9 names no key ("refunds of the credit"): the inventory family's (4.8), or the path's word.
    recordsKey: ['vendor_credit_refunds', 'refunds'],
    primaryKey: 'vendor_credit_refund_id',
    paginated: false,
    parent: { stream: 'vendor_credits', key: 'vendor_credit_id' },
    kind: 'transaction',
    columns: VENDOR_CREDIT_REFUND_COLUMNS,
    children: VENDOR_CREDIT_REFUND_CHILDREN,
    spec: '2.8, 4.9, A11',
    description: "Refunds of each vendor credit, from the credit's own record when its total proves them whole, else its list of refunds.",
  },
  {
    name: 'vendor_credit_bills',
    family: 'books',
    path: '/vendorcredits/{vendor_credit_id}/bills',
    recordsKey: ['bills_credited'],
    primaryKey: 'vendor_credit_bill_id',
    paginated: false,
    parent: { stream: 'vendor_credits', key: 'vendor_credit_id' },
    kind: 'transaction',
    columns: BILL_CREDITED_COLUMNS,
    children: [],
    spec: '2.8, 4.9, A11',
    description:
      "Bills a vendor credit was applied to, with the amount applied, from the credit's own record when its total proves them whole.",
  },
  {
    name: 'webhooks',
    family: 'books',
    path: '/settings/webhooks',
    recordsKey: ['webhooks'],
    primaryKey: 'webhook_id',
    query: { filter_by: 'Entity.All' },
    paginated: true,
    kind: 'settings',
    redact: ['secret'],
    // A webhook's URL and headers may carry the receiver's credential: svcsync's own hook
    // secret (docs/daemon.md) or another system's token.
    redactByName: { urls: ['url'], pairs: WEBHOOK_PARAMETER_LISTS, name: 'param_name', value: 'param_value' },
    columns: [
      ...cols(
        {
          webhook_id: 'id',
          entity: 'text',
          webhook_name: 'text',
          description: 'text',
          method: 'text',
          url: 'text',
          user_defined_format_name: 'text',
          user_defined_format_value: 'text',
          body_type: 'text',
          raw_data: 'text',
          connection_link_name: 'text',
        },
        { spec: '2.10' },
      ),
      col('events', 'json', { spec: '2.10' }),
      ...cols(
        { is_new_response_format: 'boolean', placeholder: 'text', is_hidden: 'boolean', lock_type: 'text', lock_reason: 'text' },
        { spec: '2.10' },
      ),
      ...cols({ is_active: 'boolean', is_from_plugin: 'boolean', created_time: 'timestamp' }, { spec: '2.10' }),
      col('related_rules', 'json', { spec: '2.10' }),
    ],
    children: WEBHOOK_PARAMETER_LISTS.map((field) => ({
      field,
      spec: '2.10',
      description: 'Name/value pairs sent with the webhook, in order.',
      columns: cols({ param_name: 'text', param_value: 'text' }),
    })),
    spec: '2.10, 4.11',
    description: 'Webhook configurations for every entity. The signing secret is never stored (redacted in _raw).',
  },
];
