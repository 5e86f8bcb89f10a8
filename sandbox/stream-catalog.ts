/**
 * The sandbox's own description of every stream it serves (deliberately not shared with
 * the client's catalog, so a wrong assumption there cannot hide here).
 */
import * as gen from './generators.js';
import type { Family } from './organizations.js';
import type { Rng } from './random.js';
import type { Rec, StreamDef } from './stream-types.js';

/** `Status.All` plus `Status.<Value>` for each status (case-insensitive on the value). */
function statusFilter(prefix: string, statuses: readonly string[], field = 'status'): StreamDef['filter'] {
  return (value) => {
    if (!value.startsWith(prefix + '.')) return null;
    const wanted = value.slice(prefix.length + 1).toLowerCase();
    if (wanted === 'all') return undefined;
    if (!statuses.includes(wanted)) return null;
    return (rec: Rec) => rec[field] === wanted;
  };
}

function children(max: number, min: number, salt: number, space: number): StreamDef['childCount'] {
  return (g, parentSlot) => min + (g.hash(space, parentSlot, salt) % (max - min + 1));
}

const SO_LIST = [
  'salesorder_id',
  'customer_name',
  'customer_id',
  'status',
  'salesorder_number',
  'reference_number',
  'date',
  'shipment_date',
  'shipment_days',
  'quantity',
  'quantity_invoiced',
  'quantity_packed',
  'quantity_shipped',
  'currency_code',
  'total',
  'bcy_total',
  'created_time',
  'last_modified_time',
  'is_emailed',
  'is_drop_shipment',
  'is_backorder',
  'sales_channel',
  'custom_fields',
] as const;
const SO_LIST_ONLY = new Set([
  'shipment_days',
  'quantity',
  'quantity_invoiced',
  'quantity_packed',
  'quantity_shipped',
  'bcy_total',
  'is_emailed',
  'is_drop_shipment',
  'is_backorder',
  'sales_channel',
]);

const VC_LIST = [
  'vendor_credit_id',
  'vendor_credit_number',
  'status',
  'reference_number',
  'date',
  'vendor_id',
  'vendor_name',
  'currency_id',
  'currency_code',
  'total',
  'balance',
  'created_time',
  'last_modified_time',
] as const;
const VC_SORT = [
  'vendor_name',
  'vendor_credit_number',
  'balance',
  'total',
  'date',
  'created_time',
  'last_modified_time',
  'reference_number',
] as const;
const VC_STATUSES = ['open', 'draft', 'closed', 'void'] as const;

const USER_LIST = [
  'user_id',
  'role_id',
  'name',
  'email',
  'user_role',
  'status',
  'is_current_user',
  'photo_url',
  'is_customer_segmented',
  'is_vendor_segmented',
  'user_type',
] as const;
const USER_DETAIL = [
  'user_id',
  'name',
  'email_ids',
  'status',
  'user_role',
  'user_type',
  'role_id',
  'cost_rate',
  'photo_url',
  'is_employee',
  'created_time',
  'custom_fields',
] as const;

const RE_LIST = [
  'recurring_expense_id',
  'recurrence_name',
  'recurrence_frequency',
  'repeat_every',
  'last_created_date',
  'next_expense_date',
  'account_name',
  'description',
  'currency_id',
  'currency_code',
  'total',
  'is_billable',
  'customer_name',
  'status',
  'custom_fields',
  'created_time',
  'last_modified_time',
] as const;

const pick = <T>(r: Rng, items: readonly T[]): T => r.pick(items);

function vendorCredits(family: Family): StreamDef {
  const books = family === 'books';
  const def: StreamDef = {
    family,
    stream: 'vendor_credits',
    space: books ? 10 : 25,
    kind: 'top',
    idField: 'vendor_credit_id',
    changeField: 'last_modified_time',
    timeOrder: 'change',
    count: (scale) => scale,
    generate: (g, slot) => gen.vendorCredit(g, slot, gen.baseTimes(g, def, slot), books),
    listFields: VC_LIST,
    embeds: books
      ? [
          { field: 'vendor_credit_refunds', stream: 'vendor_credit_refunds' },
          { field: 'bills_credited', stream: 'vendor_credit_bills' },
        ]
      : [{ field: 'vendor_credit_refunds', stream: 'vendor_credit_refunds' }],
    filter: statusFilter('Status', VC_STATUSES),
    defaultFilter: 'Status.All',
    sortColumns: VC_SORT,
    defaultSort: { column: 'created_time', order: 'D' },
    reportName: 'Vendor Credits',
    modify: (g, rec, r) => {
      rec['status'] = pick(r, VC_STATUSES);
      rec['reference_number'] = `RMA-${r.digits(4)}`;
      rec['notes'] = `Updated — revision ${r.int(1000)}`;
      rec['balance'] = rec['status'] === 'closed' || rec['status'] === 'void' ? 0 : rec['total'];
    },
    creatable: true,
    deletable: true,
  };
  return def;
}

function refunds(family: Family): StreamDef {
  const books = family === 'books';
  return {
    family,
    stream: 'vendor_credit_refunds',
    space: books ? 11 : 26,
    kind: 'child',
    idField: 'vendor_credit_refund_id',
    parentStream: 'vendor_credits',
    parentIdField: 'vendor_credit_id',
    timeOrder: 'none',
    childCount: children(2, 0, 31, books ? 11 : 26),
    generate: (g, slot, parent) => gen.vendorCreditRefund(g, slot, parent ?? {}, books),
    reportName: 'Vendor Credit Refunds',
    modify: (_g, rec, r) => {
      rec['description'] = `Refund note ${r.int(1000)}`;
      rec['reference_number'] = `REF-${r.digits(6)}`;
    },
    creatable: true,
    deletable: true,
  };
}

const contacts: StreamDef = {
  family: 'inventory',
  stream: 'contacts',
  space: 20,
  kind: 'top',
  idField: 'contact_id',
  changeField: 'last_modified_time',
  timeOrder: 'change',
  count: (scale) => scale,
  generate: (g, slot) => gen.contact(g, slot, gen.baseTimes(g, contacts, slot)),
  filter: statusFilter('Status', ['active', 'inactive']),
  defaultFilter: 'Status.All',
  sortColumns: ['contact_name', 'company_name', 'outstanding_receivable_amount', 'created_time', 'last_modified_time'],
  defaultSort: { column: 'created_time', order: 'D' },
  reportName: 'Contacts',
  modify: (_g, rec, r) => {
    rec['notes'] = `Updated note ${r.int(1000)} — "important"`;
    rec['payment_terms'] = pick(r, [0, 15, 30, 45, 60]);
    rec['payment_terms_label'] = rec['payment_terms'] === 0 ? 'Due on Receipt' : `Net ${String(rec['payment_terms'])}`;
    if (r.bool(0.2)) rec['status'] = rec['status'] === 'active' ? 'inactive' : 'active';
  },
  creatable: true,
  deletable: true,
};

const salesOrders: StreamDef = {
  family: 'inventory',
  stream: 'sales_orders',
  space: 23,
  kind: 'top',
  idField: 'salesorder_id',
  changeField: 'last_modified_time',
  timeOrder: 'change',
  count: (scale) => scale,
  generate: (g, slot) => gen.salesOrder(g, slot, gen.baseTimes(g, salesOrders, slot)),
  listFields: SO_LIST,
  detailOmit: SO_LIST_ONLY,
  filter: statusFilter('Status', ['draft', 'open', 'confirmed', 'fulfilled', 'closed', 'void', 'onhold']),
  defaultFilter: 'Status.All',
  sortColumns: [
    'customer_name',
    'salesorder_number',
    'shipment_date',
    'last_modified_time',
    'reference_number',
    'total',
    'date',
    'created_time',
  ],
  defaultSort: { column: 'created_time', order: 'D' },
  reportName: 'Sales Orders',
  modify: (_g, rec, r) => {
    rec['status'] = pick(r, ['open', 'confirmed', 'fulfilled', 'closed']);
    rec['reference_number'] = `PO/${r.digits(4)}/"C"`;
    rec['notes'] = `Changed ${r.int(1000)}`;
    rec['is_emailed'] = true;
  },
  creatable: true,
  deletable: true,
};

const users: StreamDef = {
  family: 'books',
  stream: 'users',
  space: 2,
  kind: 'top',
  idField: 'user_id',
  timeOrder: 'created',
  count: (scale) => scale,
  generate: (g, slot) => gen.user(g, slot, gen.baseTimes(g, users, slot)),
  listFields: USER_LIST,
  detailFields: USER_DETAIL,
  filter: statusFilter('Status', ['active', 'inactive', 'invited', 'deleted']),
  defaultFilter: 'Status.All',
  sortColumns: ['name', 'email', 'user_role', 'status'],
  reportName: 'Users',
  modify: (_g, rec, r) => {
    rec['status'] = pick(r, ['active', 'inactive']);
    rec['cost_rate'] = r.money(10, 150, 2);
  },
  creatable: true,
  deletable: true,
};

const webhooks: StreamDef = {
  family: 'books',
  stream: 'webhooks',
  space: 14,
  kind: 'top',
  idField: 'webhook_id',
  timeOrder: 'created',
  count: (scale) => scale,
  generate: (g, slot) => gen.webhook(g, slot, gen.baseTimes(g, webhooks, slot)),
  filter: (value) => {
    if (!value.startsWith('Entity.')) return null;
    const wanted = value.slice(7).toLowerCase().replace(/_/g, '');
    if (wanted === 'all') return undefined;
    return (rec) => String(rec['entity']).replace(/_/g, '') === wanted;
  },
  defaultFilter: 'Entity.All',
  sortColumns: ['webhook_name', 'created_time'],
  reportName: 'Webhooks',
  modify: (_g, rec, r) => {
    rec['is_active'] = !rec['is_active'];
    rec['description'] = `Revised ${r.int(1000)}`;
  },
  creatable: true,
  deletable: true,
};

const currencies: StreamDef = {
  family: 'inventory',
  stream: 'currencies',
  space: 1,
  kind: 'top',
  idField: 'currency_id',
  timeOrder: 'none',
  count: (scale) => Math.min(scale, 40),
  generate: (g, slot) => gen.currency(g, slot),
  filter: (value) => {
    if (value === 'Currencies.ExcludeBaseCurrency') return (rec) => rec['is_base_currency'] !== true;
    if (value === 'Currencies.All') return undefined;
    return null;
  },
  reportName: 'Currencies',
  modify: (_g, rec, r) => {
    if (rec['is_base_currency'] !== true) rec['exchange_rate'] = r.money(0.001, 400, 6);
  },
  creatable: false,
  deletable: false,
};

const projects: StreamDef = {
  family: 'invoice',
  stream: 'projects',
  space: 30,
  kind: 'top',
  idField: 'project_id',
  timeOrder: 'created',
  count: (scale) => scale,
  generate: (g, slot) => gen.project(g, slot, gen.baseTimes(g, projects, slot)),
  filter: statusFilter('Status', ['active', 'inactive']),
  defaultFilter: 'Status.All',
  reportName: 'Projects',
  modify: (_g, rec, r) => {
    rec['status'] = pick(r, ['active', 'inactive']);
    rec['description'] = `Scope revised ${r.int(1000)}`;
  },
  creatable: true,
  deletable: true,
};

const plans: StreamDef = {
  family: 'billing',
  stream: 'plans',
  space: 40,
  kind: 'top',
  idField: 'plan_code',
  changeField: 'updated_time',
  timeOrder: 'created',
  count: (scale) => scale,
  generate: (g, slot) => gen.plan(g, slot, gen.baseTimes(g, plans, slot)),
  filter: (value) => {
    if (value === 'PlanStatus.All') return undefined;
    if (value === 'PlanStatus.ACTIVE') return (rec) => rec['status'] === 'active';
    if (value === 'PlanStatus.INACTIVE') return (rec) => rec['status'] === 'inactive';
    return null;
  },
  defaultFilter: 'PlanStatus.All',
  reportName: 'Plans',
  modify: (g, rec, r) => {
    rec['recurring_price'] = r.money(5, 500, g.profile.price_precision);
    if (r.bool(0.3)) rec['status'] = rec['status'] === 'active' ? 'inactive' : 'active';
  },
  creatable: true,
  deletable: true,
};

const recurringExpenses: StreamDef = {
  family: 'billing',
  stream: 'recurring_expenses',
  space: 41,
  kind: 'top',
  idField: 'recurring_expense_id',
  changeField: 'last_modified_time',
  timeOrder: 'created',
  count: (scale) => scale,
  generate: (g, slot) => gen.recurringExpense(g, slot, gen.baseTimes(g, recurringExpenses, slot)),
  listFields: RE_LIST,
  filter: statusFilter('Status', ['active', 'stopped', 'expired']),
  defaultFilter: 'Status.All',
  sortColumns: ['next_expense_date', 'account_name', 'total', 'last_created_date', 'recurrence_name', 'customer_name', 'created_time'],
  reportName: 'Recurring Expenses',
  modify: (_g, rec, r) => {
    rec['status'] = pick(r, ['active', 'stopped', 'expired']);
    rec['description'] = `Adjusted ${r.int(1000)}`;
  },
  creatable: true,
  deletable: true,
};

const events: StreamDef = {
  family: 'billing',
  stream: 'events',
  space: 42,
  kind: 'top',
  idField: 'event_id',
  changeField: 'event_time',
  timeOrder: 'change',
  count: (scale) => scale,
  generate: (g, slot) => gen.billingEvent(g, slot, gen.baseTimes(g, events, slot)),
  listFields: ['event_id', 'event_type', 'event_time'],
  defaultSort: { column: 'event_time', order: 'D' },
  reportName: 'Events',
  creatable: true,
  deletable: false,
};

const contactPersons: StreamDef = {
  family: 'inventory',
  stream: 'contact_persons',
  space: 21,
  kind: 'child',
  idField: 'contact_person_id',
  parentStream: 'contacts',
  parentIdField: 'contact_id',
  timeOrder: 'none',
  childCount: children(3, 0, 32, 21),
  generate: (g, slot, parent) => gen.contactPerson(g, slot, parent ?? {}),
  reportName: 'Contact Persons',
  modify: (_g, rec, r) => {
    rec['phone'] = `+${r.digits(11)}`;
    rec['designation'] = pick(r, ['Buyer', 'CFO', 'Directeur financier']);
  },
  creatable: true,
  deletable: true,
};

const contactComments: StreamDef = {
  family: 'inventory',
  stream: 'contact_comments',
  space: 22,
  kind: 'child',
  idField: 'comment_id',
  parentStream: 'contacts',
  parentIdField: 'contact_id',
  timeOrder: 'none',
  childCount: children(2, 0, 33, 22),
  generate: (g, slot, parent) => gen.contactComment(g, slot, parent ?? {}),
  reportName: 'Comments',
  modify: (_g, rec, r) => {
    rec['description'] = `Edited comment ${r.int(1000)}`;
  },
  creatable: true,
  deletable: true,
};

const bills: StreamDef = {
  family: 'books',
  stream: 'vendor_credit_bills',
  space: 12,
  kind: 'child',
  idField: 'vendor_credit_bill_id',
  parentStream: 'vendor_credits',
  parentIdField: 'vendor_credit_id',
  timeOrder: 'none',
  childCount: children(2, 0, 34, 12),
  generate: (g, slot, parent) => gen.vendorCreditBill(g, slot, parent ?? {}),
  reportName: 'Bills Credited',
  modify: (g, rec, r) => {
    rec['amount'] = r.money(1, 50, g.profile.price_precision);
  },
  creatable: true,
  deletable: true,
};

const tasks: StreamDef = {
  family: 'invoice',
  stream: 'tasks',
  space: 31,
  kind: 'child',
  idField: 'task_id',
  parentStream: 'projects',
  parentIdField: 'project_id',
  timeOrder: 'none',
  childCount: children(4, 1, 35, 31),
  generate: (g, slot, parent) => gen.task(g, slot, parent ?? {}),
  // description, status and is_billable appear only in the single-task response (spec 2.1).
  listFields: [
    'project_id',
    'task_id',
    'currency_id',
    'customer_id',
    'task_name',
    'project_name',
    'customer_name',
    'billed_hours',
    'log_time',
    'un_billed_hours',
    'rate',
  ],
  reportName: 'Tasks',
  modify: (_g, rec, r) => {
    const h = r.range(0, 40);
    rec['billed_hours'] = `${h}:${pick(r, ['00', '15', '30', '45'])}`;
    rec['status'] = pick(r, ['active', 'inactive']);
  },
  creatable: true,
  deletable: true,
};

export const STREAMS: readonly StreamDef[] = [
  users,
  vendorCredits('books'),
  refunds('books'),
  bills,
  webhooks,
  currencies,
  contacts,
  contactPersons,
  contactComments,
  salesOrders,
  vendorCredits('inventory'),
  refunds('inventory'),
  projects,
  tasks,
  plans,
  recurringExpenses,
  events,
];

export function findStream(family: Family, stream: string): StreamDef | undefined {
  return STREAMS.find((s) => s.family === family && s.stream === stream);
}
