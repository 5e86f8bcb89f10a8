import { allChildLayouts, ORGANIZATION_ID, streamLayout, type ChildLayout } from './layout.js';
import { qualifiedName, tableName, type StreamSpec } from './types.js';

/**
 * The warehouse's views, generated from the catalog (docs/warehouse.md, "Views"). `migrateToLatest`
 * creates them again whenever what this generates changes (src/loaders/derived/), so a catalog
 * change reaches them without a migration.
 *
 * The SQL is portable: every identifier quoted, no dialect-specific function, so the same text
 * runs on SQLite and Postgres.
 */
export interface ViewDef {
  name: string;
  description: string;
  /** The SELECT the view is created from, one array entry per line. */
  sql: string[];
}

/** A table's view of its live rows. */
export const LIVE_SUFFIX = '_live';

export function liveViewName(table: string): string {
  return `${table}${LIVE_SUFFIX}`;
}

const q = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** `"a"."x", "a"."y", ...` wrapped into lines of about 100 characters, each indented (SQLite shows the text as written). */
function columnLines(alias: string, columns: readonly string[], indent = '  '): string[] {
  const lines: string[] = [];
  let line = '';
  columns.forEach((c, i) => {
    const item = `${q(alias)}.${q(c)}${i < columns.length - 1 ? ',' : ''}`;
    if (line !== '' && line.length + item.length + 1 > 100) {
      lines.push(indent + line);
      line = item;
    } else line = line === '' ? item : `${line} ${item}`;
  });
  if (line !== '') lines.push(indent + line);
  return lines;
}

/** `"p"."k" = "t"."k"` conditions joining a row (alias `child`) to its parent row (alias `parent`). */
function joinConditions(pairs: ReadonlyArray<[string, string]>, parent: string, child: string): string[] {
  return pairs.map(([parentColumn, childColumn]) => `${q(parent)}.${q(parentColumn)} = ${q(child)}.${q(childColumn)}`);
}

function liveView(
  table: string,
  columns: readonly string[],
  description: string,
  parent?: { table: string; pairs: ReadonlyArray<[string, string]> },
): ViewDef {
  const shown = columns.filter((c) => c !== '_deleted_at');
  const sql = ['SELECT', ...columnLines('t', shown), `FROM ${q(table)} AS ${q('t')}`, `WHERE ${q('t')}.${q('_deleted_at')} IS NULL`];
  if (parent) {
    sql.push(`  AND EXISTS (SELECT 1 FROM ${q(liveViewName(parent.table))} AS ${q('p')}`);
    const conditions = joinConditions(parent.pairs, 'p', 't');
    sql.push(...conditions.map((c, i) => `    ${i === 0 ? 'WHERE' : 'AND'} ${c}${i === conditions.length - 1 ? ')' : ''}`));
  }
  return { name: liveViewName(table), description, sql };
}

function childLiveView(child: ChildLayout): ViewDef {
  const pairs = child.parentKeyColumns.map((c, i): [string, string] => [child.parentKeySources[i] ?? c, c]);
  return liveView(
    child.table,
    child.columns.map((c) => c.name),
    `Live rows of ${child.table}: not deleted, and the parent row in ${child.parentTable} is live.`,
    { table: child.parentTable, pairs },
  );
}

/**
 * `{table}_live` for every table: rows whose `_deleted_at` is null and whose parent is live. The
 * parent of a child table (`{table}__{field}`) is the row of the record it came from; the parent
 * of a child stream's table (contact persons, refunds, tasks) is the parent stream's row. Each
 * view reads its parent's view, so grandchildren follow their whole chain. The columns are the
 * table's, without `_deleted_at`.
 */
export function liveViewDefinitions(catalog: readonly StreamSpec[]): ViewDef[] {
  const views: ViewDef[] = [];
  for (const stream of catalog) {
    const layout = streamLayout(stream);
    const columns = layout.columns.map((c) => c.name);
    if (stream.parent) {
      const parentTable = tableName({ family: stream.family, name: stream.parent.stream });
      const key = stream.parent.key;
      views.push(
        liveView(layout.table, columns, `Live rows of ${layout.table}: not deleted, and the ${parentTable} row is live.`, {
          table: parentTable,
          pairs: [
            [ORGANIZATION_ID, ORGANIZATION_ID],
            [key, key],
          ],
        }),
      );
    } else views.push(liveView(layout.table, columns, `Live (not deleted) rows of ${layout.table}.`));
    for (const child of allChildLayouts(layout)) views.push(childLiveView(child));
  }
  return views;
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

/** The quoted name of a table's live view. */
function live(catalog: readonly StreamSpec[], stream: string, childField?: string): string {
  return q(liveViewName(table(catalog, stream, childField)));
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

function salesOrderLines(catalog: readonly StreamSpec[]): ViewDef {
  const rateBcy = inBaseCurrency('"l"."rate"');
  return {
    name: 'report_sales_order_lines',
    description:
      'One row per line item of every live sales order, with the order\u2019s header and customer, and the amounts in ' +
      'the order\u2019s currency and in the organization\u2019s base currency. Base-currency figures use the line\u2019s ' +
      'and the order\u2019s own base-currency values where the API sends them (bcy_rate, bcy_total), else the order\u2019s ' +
      'exchange_rate, multiplied or divided as the order\u2019s bcy_total shows the rate is quoted (A37).',
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
      `FROM ${live(catalog, 'inventory.sales_orders', 'line_items')} AS "l"`,
      `JOIN ${live(catalog, 'inventory.sales_orders')} AS "o"`,
      '  ON "o"."organization_id" = "l"."organization_id" AND "o"."salesorder_id" = "l"."salesorder_id"',
      `LEFT JOIN ${live(catalog, 'inventory.contacts')} AS "c"`,
      '  ON "c"."organization_id" = "o"."organization_id" AND "c"."contact_id" = "o"."customer_id"',
    ],
  };
}

function openVendorCredits(catalog: readonly StreamSpec[]): ViewDef {
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
    `FROM ${live(catalog, `${name}.vendor_credits`)} AS "v"`,
    `WHERE "v"."status" = 'open'`,
  ];
  return {
    name: 'report_open_vendor_credits',
    description:
      'Open vendor credits (status open) of both families, with the number and sum of their refunds and of the bills they were applied to.',
    sql: [
      ...family('books', live(catalog, 'books.vendor_credit_refunds'), live(catalog, 'books.vendor_credit_bills')),
      'UNION ALL',
      ...family('inventory', live(catalog, 'inventory.vendor_credit_refunds'), live(catalog, 'inventory.vendor_credits', 'bills_credited')),
    ],
  };
}

function unbilledHours(catalog: readonly StreamSpec[]): ViewDef {
  return {
    name: 'report_unbilled_hours',
    description:
      'Hours per project and customer: the sum of its live tasks\u2019 unbilled and billed hours, ' +
      'and the project\u2019s own un_billed_hours as the API sends it.',
    sql: [
      'SELECT "p"."organization_id", "p"."project_id", "p"."project_name", "p"."customer_id", "p"."customer_name",',
      '  "p"."status", COUNT("t"."task_id") AS "tasks",',
      '  COALESCE(SUM("t"."un_billed_hours"), 0) AS "unbilled_hours", COALESCE(SUM("t"."billed_hours"), 0) AS "billed_hours",',
      '  "p"."un_billed_hours" AS "project_unbilled_hours"',
      `FROM ${live(catalog, 'invoice.projects')} AS "p"`,
      `LEFT JOIN ${live(catalog, 'invoice.tasks')} AS "t"`,
      '  ON "t"."organization_id" = "p"."organization_id" AND "t"."project_id" = "p"."project_id"',
      'GROUP BY "p"."organization_id", "p"."project_id", "p"."project_name", "p"."customer_id", "p"."customer_name",',
      '  "p"."status", "p"."un_billed_hours"',
    ],
  };
}

function recurringByCustomer(catalog: readonly StreamSpec[]): ViewDef {
  return {
    name: 'report_recurring_by_customer',
    description:
      'Plans and recurring expenses, one row each, with the customer where the API names one ' +
      '(a recurring expense\u2019s customer_id; plans belong to no customer) and the amount in the base currency.',
    sql: [
      'SELECT "e"."organization_id", \'recurring_expense\' AS "item_type", "e"."recurring_expense_id" AS "item_id",',
      '  "e"."recurrence_name" AS "item_name", "e"."status", NULLIF("e"."customer_id", \'\') AS "customer_id",',
      '  NULLIF("e"."customer_name", \'\') AS "customer_name", "e"."currency_code", "e"."total" AS "amount",',
      '  COALESCE("e"."bcy_total", "e"."total" * "e"."exchange_rate") AS "amount_bcy",',
      '  "e"."repeat_every", "e"."recurrence_frequency" AS "repeat_unit"',
      `FROM ${live(catalog, 'billing.recurring_expenses')} AS "e"`,
      'UNION ALL',
      'SELECT "p"."organization_id", \'plan\' AS "item_type", "p"."plan_code" AS "item_id",',
      '  "p"."name" AS "item_name", "p"."status", CAST(NULL AS TEXT) AS "customer_id",',
      '  CAST(NULL AS TEXT) AS "customer_name", "o"."currency_code", "p"."recurring_price" AS "amount",',
      '  "p"."recurring_price" AS "amount_bcy", "p"."interval" AS "repeat_every", "p"."interval_unit" AS "repeat_unit"',
      `FROM ${live(catalog, 'billing.plans')} AS "p"`,
      `LEFT JOIN ${live(catalog, 'billing.organizations')} AS "o" ON "o"."organization_id" = "p"."organization_id"`,
    ],
  };
}

/** Views that answer everyday questions; each reads only `_live` views. */
export function modelledViewDefinitions(catalog: readonly StreamSpec[]): ViewDef[] {
  return [salesOrderLines(catalog), openVendorCredits(catalog), unbilledHours(catalog), recurringByCustomer(catalog)];
}

/** Every view, in an order where each view comes after the views it reads. */
export function viewDefinitions(catalog: readonly StreamSpec[]): ViewDef[] {
  return [...liveViewDefinitions(catalog), ...modelledViewDefinitions(catalog)];
}
