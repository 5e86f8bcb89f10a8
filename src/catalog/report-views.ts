import { allChildLayouts, streamLayout } from './layout.js';
import { qualifiedName, type ColumnType, type StreamSpec } from './types.js';
import { liveViewName, UNQUALIFIED, type ViewColumn, type ViewDef, type ViewNaming } from './view-types.js';

/**
 * The `report_` views: modelled answers to everyday questions, each reading only `_live` views
 * (src/catalog/views.ts), with every column described for the data dictionary and the Postgres
 * comments. The SQL is portable (identifiers quoted, no dialect-specific function); the columns
 * listed here are the ones the SQL makes, in its order (test/e2e/views.test.ts compares them
 * with the views a warehouse holds).
 */

const SVCSYNC = '(svcsync)';

/** A column of a report view: [name, type, API field or '(svcsync)', description]; nullable unless a key. */
type Spec = readonly [string, ColumnType, string, string];

function columns(specs: readonly Spec[], keys: readonly string[]): ViewColumn[] {
  return specs.map(([name, type, source, description]) => ({ name, type, nullable: !keys.includes(name), source, description }));
}

/** The catalog's name of a stream's table, or of one of its child tables (`field` path "line_items"). */
function table(catalog: readonly StreamSpec[], stream: string, childField?: string): string {
  const spec = catalog.find((s) => qualifiedName(s) === stream);
  if (!spec) throw new Error(`views: the catalog has no stream ${stream}`);
  const layout = streamLayout(spec);
  if (childField === undefined) return layout.table;
  const child = allChildLayouts(layout).find((c) => c.fieldPath === childField);
  if (!child) throw new Error(`views: stream ${stream} has no child table for ${childField}`);
  return child.table;
}

/** How the SQL names a table's live view, as the naming says. */
type Live = (stream: string, childField?: string) => string;

function liveOf(catalog: readonly StreamSpec[], naming: ViewNaming): Live {
  return (stream, childField) => naming.view(liveViewName(table(catalog, stream, childField)));
}

/**
 * `expression` (an amount in the order's currency, alias "o" the order) in the base currency, as
 * SQL lines. A37: exchange_rate is read as base-currency units per unit of the order's currency,
 * unless the order's own bcy_total (sent by the list) is nearer total ÷ rate than total × rate.
 */
function inBaseCurrency(expression: string): string[] {
  return [
    `${expression} * CASE WHEN "o"."bcy_total" IS NOT NULL AND "o"."exchange_rate" > 0`,
    '    AND ABS("o"."bcy_total" - "o"."total" / "o"."exchange_rate")',
    '      < ABS("o"."bcy_total" - "o"."total" * "o"."exchange_rate")',
    '    THEN 1.0 / "o"."exchange_rate" ELSE "o"."exchange_rate" END',
  ];
}

function salesOrderLines(live: Live): ViewDef {
  const rateBcy = inBaseCurrency('"l"."rate"');
  return {
    name: 'report_sales_order_lines',
    description:
      'One row per line item of every live sales order, with the order\u2019s header and customer, and the amounts in ' +
      'the order\u2019s currency and in the organization\u2019s base currency. Base-currency figures use the line\u2019s ' +
      'and the order\u2019s own base-currency values where the API sends them (bcy_rate, bcy_total), else the order\u2019s ' +
      'exchange_rate, multiplied or divided as the order\u2019s bcy_total shows the rate is quoted (A37).',
    streams: ['inventory.sales_orders', 'inventory.contacts'],
    columns: columns(
      [
        ['organization_id', 'id', SVCSYNC, 'The inventory-family organization the order belongs to.'],
        ['salesorder_id', 'id', 'salesorder_id', 'The sales order the line belongs to; joins inventory_sales_orders_live.'],
        ['salesorder_number', 'text', 'salesorder_number', 'The order\u2019s number as the customer sees it on the document.'],
        ['date', 'date', 'date', 'The day the order was placed (yyyy-mm-dd).'],
        ['status', 'text', 'status', 'The order\u2019s status as the API sends it (draft, open, confirmed, fulfilled, closed, void, ...).'],
        ['customer_id', 'id', 'customer_id', 'The customer who placed the order; joins inventory_contacts_live.contact_id.'],
        [
          'customer_name',
          'text',
          SVCSYNC,
          'The customer\u2019s name: the contact\u2019s current contact_name, else the name the order carries.',
        ],
        [
          'currency_code',
          'text',
          'currency_code',
          'Code of the currency the order is in (EUR, USD, ...): rate, item_total and order_total are in it.',
        ],
        [
          'exchange_rate',
          'number',
          'exchange_rate',
          'The order\u2019s exchange rate between its currency and the organization\u2019s base currency, as the API sends it ' +
            '(1 for an order in the base currency); see A37 for its direction.',
        ],
        [
          'order_total',
          'number',
          'total',
          'The whole order\u2019s total, taxes, shipping and adjustment included, in the order\u2019s currency.',
        ],
        [
          'order_total_bcy',
          'number',
          SVCSYNC,
          'The whole order\u2019s total in the organization\u2019s base currency: the list\u2019s bcy_total, else total × exchange_rate.',
        ],
        ['line_item_id', 'id', 'line_items[].line_item_id', 'The line item; unique within its order.'],
        ['item_order', 'integer', 'line_items[].item_order', 'Where the line sits on the order, counted from 1.'],
        ['item_id', 'id', 'line_items[].item_id', 'The product or service sold, by its id in the inventory family\u2019s item list.'],
        ['item_name', 'text', 'line_items[].name', 'The item\u2019s name as written on the line.'],
        ['quantity', 'number', 'line_items[].quantity', 'How many units of the item the line orders.'],
        ['unit', 'text', 'line_items[].unit', 'The unit the quantity counts (pcs, kg, box, ...), as entered on the line.'],
        ['rate', 'number', 'line_items[].rate', 'The price of one unit, in the order\u2019s currency.'],
        [
          'rate_bcy',
          'number',
          SVCSYNC,
          'The price of one unit in the organization\u2019s base currency: the line\u2019s bcy_rate where the API sends it, ' +
            'else rate converted at the order\u2019s exchange_rate, multiplied or divided as the order\u2019s bcy_total shows (A37).',
        ],
        [
          'item_total',
          'number',
          'line_items[].item_total',
          'The line\u2019s amount as the API sends it (normally quantity × rate), in the order\u2019s currency.',
        ],
        [
          'item_total_bcy',
          'number',
          SVCSYNC,
          'The line\u2019s amount in the organization\u2019s base currency: item_total at the order\u2019s exchange_rate, ' +
            'multiplied or divided as the order\u2019s bcy_total shows (A37).',
        ],
      ],
      ['organization_id', 'salesorder_id', 'line_item_id'],
    ),
    sql: [
      'SELECT "o"."organization_id", "o"."salesorder_id", "o"."salesorder_number", "o"."date", "o"."status",',
      '  "o"."customer_id", COALESCE("c"."contact_name", "o"."customer_name") AS "customer_name",',
      '  "o"."currency_code", "o"."exchange_rate", "o"."total" AS "order_total",',
      '  COALESCE("o"."bcy_total", "o"."total" * "o"."exchange_rate") AS "order_total_bcy",',
      '  "l"."line_item_id", "l"."item_order", "l"."item_id", "l"."name" AS "item_name", "l"."quantity", "l"."unit",',
      '  "l"."rate",',
      // The line's own base-currency rate where the API sends it; else derived as item_total_bcy is.
      ...rateBcy.map(
        (line, i) => `  ${i === 0 ? `COALESCE("l"."bcy_rate", ${line}` : line}${i === rateBcy.length - 1 ? ') AS "rate_bcy",' : ''}`,
      ),
      '  "l"."item_total",',
      ...inBaseCurrency('"l"."item_total"').map((line, i, all) => `  ${line}${i === all.length - 1 ? ' AS "item_total_bcy"' : ''}`),
      `FROM ${live('inventory.sales_orders', 'line_items')} AS "l"`,
      `JOIN ${live('inventory.sales_orders')} AS "o"`,
      '  ON "o"."organization_id" = "l"."organization_id" AND "o"."salesorder_id" = "l"."salesorder_id"',
      `LEFT JOIN ${live('inventory.contacts')} AS "c"`,
      '  ON "c"."organization_id" = "o"."organization_id" AND "c"."contact_id" = "o"."customer_id"',
    ],
  };
}

function openVendorCredits(live: Live): ViewDef {
  const family = (name: string, refunds: string, bills: string): string[] => [
    `SELECT '${name}' AS "family", "v"."organization_id", "v"."vendor_credit_id", "v"."vendor_credit_number", "v"."date",`,
    '  "v"."vendor_id", "v"."vendor_name", "v"."currency_code", "v"."exchange_rate", "v"."total", "v"."balance",',
    `  (SELECT COUNT(*) FROM ${refunds} AS "r"`,
    '    WHERE "r"."organization_id" = "v"."organization_id"',
    '      AND "r"."vendor_credit_id" = "v"."vendor_credit_id") AS "refunds",',
    `  (SELECT COALESCE(SUM("r"."amount"), 0) FROM ${refunds} AS "r"`,
    '    WHERE "r"."organization_id" = "v"."organization_id"',
    '      AND "r"."vendor_credit_id" = "v"."vendor_credit_id") AS "refunded_amount",',
    `  (SELECT COUNT(*) FROM ${bills} AS "b"`,
    '    WHERE "b"."organization_id" = "v"."organization_id"',
    '      AND "b"."vendor_credit_id" = "v"."vendor_credit_id") AS "bills_credited",',
    `  (SELECT COALESCE(SUM("b"."amount"), 0) FROM ${bills} AS "b"`,
    '    WHERE "b"."organization_id" = "v"."organization_id"',
    '      AND "b"."vendor_credit_id" = "v"."vendor_credit_id") AS "credited_amount"',
    `FROM ${live(`${name}.vendor_credits`)} AS "v"`,
    `WHERE "v"."status" = 'open'`,
  ];
  return {
    name: 'report_open_vendor_credits',
    description:
      'Vendor credits still open (status open), of the books and the inventory family alike, one row each, with how many ' +
      'refunds the vendor paid against each and their sum, and how many bills it was applied to and the sum applied.',
    streams: [
      'books.vendor_credits',
      'books.vendor_credit_refunds',
      'books.vendor_credit_bills',
      'inventory.vendor_credits',
      'inventory.vendor_credit_refunds',
    ],
    columns: columns(
      [
        ['family', 'text', SVCSYNC, 'The API family the credit was read from: books or inventory, which keep vendor credits apart.'],
        ['organization_id', 'id', SVCSYNC, 'The organization the credit belongs to, in that family.'],
        ['vendor_credit_id', 'id', 'vendor_credit_id', 'The vendor credit; joins {family}_vendor_credits_live.'],
        ['vendor_credit_number', 'text', 'vendor_credit_number', 'The credit\u2019s document number.'],
        ['date', 'date', 'date', 'The day the vendor issued the credit (yyyy-mm-dd).'],
        ['vendor_id', 'id', 'vendor_id', 'The vendor who issued the credit.'],
        ['vendor_name', 'text', 'vendor_name', 'The vendor\u2019s name as the credit carries it.'],
        ['currency_code', 'text', 'currency_code', 'Code of the currency the credit\u2019s amounts are in.'],
        ['exchange_rate', 'number', 'exchange_rate', 'The credit\u2019s exchange rate to the base currency, as the API sends it (A37).'],
        ['total', 'number', 'total', 'The credit\u2019s total, in its currency.'],
        ['balance', 'number', 'balance', 'What is left of the credit to use or refund, in its currency.'],
        ['refunds', 'integer', SVCSYNC, 'How many live refunds the vendor paid against the credit.'],
        ['refunded_amount', 'number', SVCSYNC, 'The sum of those refunds\u2019 amounts (0 when none), in the credit\u2019s currency.'],
        ['bills_credited', 'integer', SVCSYNC, 'How many of the organization\u2019s bills the credit was applied to.'],
        ['credited_amount', 'number', SVCSYNC, 'The sum applied to those bills (0 when none), in the credit\u2019s currency.'],
      ],
      ['family', 'organization_id', 'vendor_credit_id'],
    ),
    sql: [
      ...family('books', live('books.vendor_credit_refunds'), live('books.vendor_credit_bills')),
      'UNION ALL',
      ...family('inventory', live('inventory.vendor_credit_refunds'), live('inventory.vendor_credits', 'bills_credited')),
    ],
  };
}

function unbilledHours(live: Live): ViewDef {
  return {
    name: 'report_unbilled_hours',
    description:
      'One row per live project, with its customer, the number of its live tasks, the sum of their unbilled and ' +
      'billed hours, and the project\u2019s own un_billed_hours as the API sends it; hours are decimal (12.5 is 12:30).',
    streams: ['invoice.projects', 'invoice.tasks'],
    columns: columns(
      [
        ['organization_id', 'id', SVCSYNC, 'The invoice-family organization the project belongs to.'],
        ['project_id', 'id', 'project_id', 'The project; joins invoice_projects_live.'],
        ['project_name', 'text', 'project_name', 'The project\u2019s name.'],
        ['customer_id', 'id', 'customer_id', 'The customer the project is done for.'],
        ['customer_name', 'text', 'customer_name', 'The customer\u2019s name as the project carries it.'],
        ['status', 'text', 'status', 'The project\u2019s status as the API sends it (active, ...).'],
        ['tasks', 'integer', SVCSYNC, 'How many live tasks the project has.'],
        [
          'unbilled_hours',
          'hours',
          SVCSYNC,
          'Hours logged on the project\u2019s tasks and not yet billed, summed over its tasks, in decimal hours.',
        ],
        [
          'billed_hours',
          'hours',
          SVCSYNC,
          'Hours of the project\u2019s tasks already billed to the customer, summed over its tasks, in decimal hours.',
        ],
        [
          'project_unbilled_hours',
          'hours',
          'un_billed_hours',
          'The project\u2019s own count of unbilled hours as the API sends it, in decimal hours; may differ from the tasks\u2019 sum.',
        ],
      ],
      ['organization_id', 'project_id'],
    ),
    sql: [
      'SELECT "p"."organization_id", "p"."project_id", "p"."project_name", "p"."customer_id", "p"."customer_name",',
      '  "p"."status", COUNT("t"."task_id") AS "tasks",',
      '  COALESCE(SUM("t"."un_billed_hours"), 0) AS "unbilled_hours", COALESCE(SUM("t"."billed_hours"), 0) AS "billed_hours",',
      '  "p"."un_billed_hours" AS "project_unbilled_hours"',
      `FROM ${live('invoice.projects')} AS "p"`,
      `LEFT JOIN ${live('invoice.tasks')} AS "t"`,
      '  ON "t"."organization_id" = "p"."organization_id" AND "t"."project_id" = "p"."project_id"',
      'GROUP BY "p"."organization_id", "p"."project_id", "p"."project_name", "p"."customer_id", "p"."customer_name",',
      '  "p"."status", "p"."un_billed_hours"',
    ],
  };
}

function recurringByCustomer(live: Live): ViewDef {
  return {
    name: 'report_recurring_by_customer',
    description:
      'What recurs: every live billing plan and recurring expense, one row each, with the customer where the API names ' +
      'one (a recurring expense\u2019s customer_id; plans belong to no customer), the amount of one occurrence in its ' +
      'currency and in the base currency, and how often it repeats.',
    streams: ['billing.recurring_expenses', 'billing.plans', 'billing.organizations'],
    columns: columns(
      [
        ['organization_id', 'id', SVCSYNC, 'The billing-family organization.'],
        ['item_type', 'text', SVCSYNC, 'What the row is: recurring_expense or plan.'],
        ['item_id', 'id', SVCSYNC, 'The recurring expense\u2019s recurring_expense_id, or the plan\u2019s plan_code.'],
        ['item_name', 'text', SVCSYNC, 'The recurring expense\u2019s recurrence_name, or the plan\u2019s name.'],
        ['status', 'text', 'status', 'Its status: active, stopped or expired for a recurring expense; active or inactive for a plan.'],
        ['customer_id', 'id', 'customer_id', 'The customer a recurring expense is billed to, when it names one; null for plans.'],
        ['customer_name', 'text', 'customer_name', 'That customer\u2019s name; null for plans and expenses without a customer.'],
        [
          'currency_code',
          'text',
          SVCSYNC,
          'Code of the currency amount is in: the recurring expense\u2019s own, or the organization\u2019s base currency for a plan.',
        ],
        [
          'amount',
          'number',
          SVCSYNC,
          'What one occurrence costs: the recurring expense\u2019s total, or the plan\u2019s recurring_price per interval.',
        ],
        [
          'amount_bcy',
          'number',
          SVCSYNC,
          'The same in the organization\u2019s base currency: the expense\u2019s bcy_total, else total × exchange_rate; ' +
            'null when the API sends neither. A plan\u2019s price is in the base currency.',
        ],
        ['repeat_every', 'integer', SVCSYNC, 'How many repeat_units pass between two occurrences or bills.'],
        [
          'repeat_unit',
          'text',
          SVCSYNC,
          'The unit of repeat_every: the expense\u2019s recurrence_frequency or the plan\u2019s interval_unit (months, years, ...).',
        ],
      ],
      ['organization_id', 'item_type', 'item_id'],
    ),
    sql: [
      'SELECT "e"."organization_id", \'recurring_expense\' AS "item_type", "e"."recurring_expense_id" AS "item_id",',
      '  "e"."recurrence_name" AS "item_name", "e"."status", NULLIF("e"."customer_id", \'\') AS "customer_id",',
      '  NULLIF("e"."customer_name", \'\') AS "customer_name", "e"."currency_code", "e"."total" AS "amount",',
      '  COALESCE("e"."bcy_total", "e"."total" * "e"."exchange_rate") AS "amount_bcy",',
      '  "e"."repeat_every", "e"."recurrence_frequency" AS "repeat_unit"',
      `FROM ${live('billing.recurring_expenses')} AS "e"`,
      'UNION ALL',
      'SELECT "p"."organization_id", \'plan\' AS "item_type", "p"."plan_code" AS "item_id",',
      '  "p"."name" AS "item_name", "p"."status", CAST(NULL AS TEXT) AS "customer_id",',
      '  CAST(NULL AS TEXT) AS "customer_name", "o"."currency_code", "p"."recurring_price" AS "amount",',
      '  "p"."recurring_price" AS "amount_bcy", "p"."interval" AS "repeat_every", "p"."interval_unit" AS "repeat_unit"',
      `FROM ${live('billing.plans')} AS "p"`,
      `LEFT JOIN ${live('billing.organizations')} AS "o" ON "o"."organization_id" = "p"."organization_id"`,
    ],
  };
}

/** Views that answer everyday questions; each reads only `_live` views. */
export function modelledViewDefinitions(catalog: readonly StreamSpec[], naming: ViewNaming = UNQUALIFIED): ViewDef[] {
  const live = liveOf(catalog, naming);
  return [salesOrderLines(live), openVendorCredits(live), unbilledHours(live), recurringByCustomer(live)];
}
