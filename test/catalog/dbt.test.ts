import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dbtSources, loadedAtQuery, renderDbtSources, type DbtPlacement } from '../../src/catalog/dbt.js';
import { historyTableDefinitions } from '../../src/catalog/history.js';
import { CATALOG, relationships, tableDefinitions } from '../../src/catalog/index.js';
import { viewDefinitions } from '../../src/catalog/views.js';

/**
 * `svcsync schema --dbt` against dbt's documented shape of a sources file. The schema below is
 * written here from dbt's reference pages (not from svcsync's code):
 * - Source properties, https://docs.getdbt.com/reference/source-properties: `sources:` entries
 *   with `name` (required), `description`, `database`, `schema`, `loader`, `config`, `quoting`,
 *   `tables:`; each table with `name` (required), `description`, `identifier`, `data_tests`,
 *   `config`, `columns`.
 * - freshness, https://docs.getdbt.com/reference/resource-properties/freshness: under `config`
 *   (since v1.9/1.10) `freshness` with `warn_after` / `error_after` (`count`: a positive integer,
 *   `period`: minute | hour | day), `filter`, and `loaded_at_field` (or `loaded_at_query`, never both).
 * - columns, https://docs.getdbt.com/reference/resource-properties/columns: `name`, `description`,
 *   `data_type`, `quote`, `data_tests`, `config`.
 * - data tests, https://docs.getdbt.com/reference/resource-properties/data-tests: a test is its name,
 *   or `{name: {arguments: {...}, config: {...}}}` (arguments nested since v1.10.5); the built-in
 *   `unique`, `not_null`, `accepted_values` and `relationships` (arguments `to` and `field`).
 * Unknown keys are errors here, as they are warnings or errors in dbt's own parser.
 */

type Node = unknown;
type Check = (value: Node, path: string) => string[];

const isObject = (v: Node): v is Record<string, Node> => typeof v === 'object' && v !== null && !Array.isArray(v);
const string: Check = (v, path) => (typeof v === 'string' ? [] : [`${path}: expected a string`]);
const boolean: Check = (v, path) => (typeof v === 'boolean' ? [] : [`${path}: expected true or false`]);
const positiveInteger: Check = (v, path) => (Number.isInteger(v) && (v as number) > 0 ? [] : [`${path}: expected a positive integer`]);
const oneOf =
  (...values: readonly string[]): Check =>
  (v, path) =>
    values.includes(v as string) ? [] : [`${path}: expected one of ${values.join(', ')}`];
const list =
  (item: Check): Check =>
  (v, path) =>
    Array.isArray(v) ? v.flatMap((x, i) => item(x, `${path}[${i}]`)) : [`${path}: expected a list`];
const anything: Check = () => [];

function object(properties: Record<string, Check>, required: readonly string[] = []): Check {
  return (v, path) => {
    if (v === null) return []; // dbt takes null for "none" (freshness: null turns it off)
    if (!isObject(v)) return [`${path}: expected a mapping`];
    const errors = required.filter((k) => !(k in v)).map((k) => `${path}.${k}: required`);
    for (const [key, value] of Object.entries(v)) {
      const check = properties[key];
      errors.push(...(check ? check(value, `${path}.${key}`) : [`${path}.${key}: not a dbt property`]));
    }
    return errors;
  };
}

const period = object({ count: positiveInteger, period: oneOf('minute', 'hour', 'day') }, ['count', 'period']);
const freshness = object({ warn_after: period, error_after: period, filter: string });
const sourceConfig: Check = (v, path) => {
  const errors = object({
    enabled: boolean,
    freshness,
    loaded_at_field: string,
    loaded_at_query: string,
    meta: anything,
    tags: list(string),
    event_time: string,
  })(v, path);
  if (isObject(v) && 'loaded_at_field' in v && 'loaded_at_query' in v) errors.push(`${path}: loaded_at_field and loaded_at_query both set`);
  return errors;
};

const BUILT_IN_ARGUMENTS: Record<string, readonly string[]> = {
  unique: ['column_name'],
  not_null: ['column_name'],
  accepted_values: ['column_name', 'values', 'quote'],
  relationships: ['column_name', 'to', 'field'],
};
const test: Check = (v, path) => {
  if (typeof v === 'string') return v in BUILT_IN_ARGUMENTS ? [] : [`${path}: ${v} is not a built-in test`];
  if (!isObject(v) || Object.keys(v).length !== 1) return [`${path}: expected a test name or {name: {arguments, config}}`];
  const [name, body] = Object.entries(v)[0]!;
  const allowed = BUILT_IN_ARGUMENTS[name];
  if (!allowed) return [`${path}: ${name} is not a built-in test`];
  const errors = object({ arguments: object(Object.fromEntries(allowed.map((a) => [a, anything]))), config: anything }, ['arguments'])(
    body,
    `${path}.${name}`,
  );
  if (name === 'relationships' && isObject(body) && isObject(body['arguments'])) {
    const to = body['arguments']['to'];
    if (typeof to !== 'string' || !/^source\('[a-z_]+', '[a-z0-9_]+'\)$/.test(to))
      errors.push(`${path}: relationships.to is not source('…', '…')`);
    if (typeof body['arguments']['field'] !== 'string') errors.push(`${path}: relationships needs a field`);
  }
  return errors;
};
const column = object({ name: string, description: string, data_type: string, quote: boolean, data_tests: list(test), config: anything }, [
  'name',
]);
const table = object(
  { name: string, description: string, identifier: string, data_tests: list(test), config: sourceConfig, columns: list(column) },
  ['name'],
);
const source = object(
  {
    name: string,
    description: string,
    database: string,
    schema: string,
    loader: string,
    config: sourceConfig,
    quoting: object({ database: boolean, schema: boolean, identifier: boolean }),
    tables: list(table),
  },
  ['name'],
);
const sourcesFile = object({ version: (v, path) => (v === 2 ? [] : [`${path}: expected 2`]), sources: list(source) }, ['sources']);

const defs = tableDefinitions(CATALOG);
const views = viewDefinitions(CATALOG);
const rels = relationships(CATALOG);

interface Parsed {
  sources: Array<{
    name: string;
    schema: string;
    database?: string;
    config: { freshness: unknown };
    tables: Array<{
      name: string;
      description: string;
      config?: { loaded_at_query?: string };
      data_tests?: Array<string | Record<string, { arguments: Record<string, string>; config?: Record<string, string> }>>;
      columns: Array<{ name: string; description: string; data_type: string; data_tests?: unknown[] }>;
    }>;
  }>;
}

function sourcesOf(placement: DbtPlacement): Parsed {
  return parse(renderDbtSources(defs, views, placement)) as Parsed;
}

describe('the schema check itself', () => {
  it('refuses what dbt refuses: an unknown key, a test of no such name, a period dbt does not know, a missing name', () => {
    expect(sourcesFile({ sources: [{ name: 's', tables: [{ name: 't', colums: [] }] }] }, '$')).toEqual([
      '$.sources[0].tables[0].colums: not a dbt property',
    ]);
    expect(sourcesFile({ sources: [{ name: 's', tables: [{ name: 't', data_tests: ['unqiue'] }] }] }, '$')).toHaveLength(1);
    expect(
      sourcesFile({ sources: [{ name: 's', config: { freshness: { warn_after: { count: 1, period: 'week' } } } }] }, '$'),
    ).toHaveLength(1);
    expect(sourcesFile({ sources: [{ tables: [] }] }, '$')).toEqual(['$.sources[0].name: required']);
  });
});

describe.each<DbtPlacement>([
  { dialect: 'sqlite', schema: 'main', viewsSchema: 'main' },
  { dialect: 'postgres', database: 'warehouse', schema: 'svcsync', viewsSchema: 'svcsync_views' },
])('svcsync schema --dbt for $dialect', (placement) => {
  const parsed = sourcesOf(placement);

  it('is a sources file of the shape dbt documents', () => {
    expect(sourcesFile(parsed, '$')).toEqual([]);
  });

  it('names the warehouse in use: the tables\u2019 schema and the views\u2019, the database on Postgres', () => {
    const [tables, viewSource] = parsed.sources;
    expect([tables!.name, tables!.schema, viewSource!.name, viewSource!.schema]).toEqual([
      'svcsync',
      placement.schema,
      'svcsync_views',
      placement.viewsSchema,
    ]);
    expect(tables!.database).toBe(placement.database);
  });

  it('lists every table and view with its description and every column with its type and description', () => {
    const [tables, viewSource] = parsed.sources;
    expect(tables!.tables.map((t) => t.name)).toEqual(defs.map((d) => d.name));
    expect(viewSource!.tables.map((t) => t.name)).toEqual(views.map((v) => v.name));
    for (const t of [...tables!.tables, ...viewSource!.tables]) {
      expect(t.description.length, t.name).toBeGreaterThan(30);
      for (const c of t.columns) expect(c.data_type, `${t.name}.${c.name}`).toMatch(/^[a-z ]+$/);
    }
    const orders = tables!.tables.find((t) => t.name === 'inventory_sales_orders')!;
    expect(orders.columns.find((c) => c.name === 'total')).toEqual({
      name: 'total',
      description: expect.stringContaining('order\u2019s currency') as string,
      data_type: placement.dialect === 'postgres' ? 'numeric' : 'real',
    });
  });

  it('tests the keys: not_null on each key column, unique on the key (the columns joined when there are several)', () => {
    for (const [t, def] of parsed.sources[0]!.tables.map((t, i) => [t, defs[i]!] as const)) {
      for (const key of def.primaryKey) expect(t.columns.find((c) => c.name === key)!.data_tests, `${t.name}.${key}`).toContain('not_null');
      if (def.primaryKey.length === 1) expect(t.columns.find((c) => c.name === def.primaryKey[0])!.data_tests).toContain('unique');
      else
        expect(t.data_tests, t.name).toContainEqual({
          unique: { arguments: { column_name: def.primaryKey.map((c) => `"${c}"`).join(` || '|' || `) } },
        });
    }
  });

  it('has a relationships test per foreign key (an error) and per reference (a warning), to the table it points to', () => {
    const all = parsed.sources[0]!.tables.flatMap((t) =>
      (t.data_tests ?? []).flatMap((x) =>
        typeof x === 'object' && 'relationships' in x ? [{ table: t.name, ...x['relationships'] }] : [],
      ),
    );
    expect(all).toHaveLength(rels.length);
    for (const r of rels) {
      const found = all.find(
        (x) =>
          x.table === r.fromTable &&
          x.arguments['to'] === `source('svcsync', '${r.toTable}')` &&
          x.arguments['column_name']!.includes(`"${r.fromColumns.at(-1)!}"`),
      );
      expect(found, `${r.fromTable} -> ${r.toTable}`).toBeDefined();
      expect(found!.arguments['field']).toBe(r.toColumns.map((c) => `"${c}"`).join(` || '|' || `));
      expect(found!.config?.['severity']).toBe(r.kind === 'reference' ? 'warn' : undefined);
    }
  });

  it('has the same relationships tests on the _live views, between the views, for a BI tool shown only the views', () => {
    const all = parsed.sources[1]!.tables.flatMap((t) =>
      (t.data_tests ?? []).flatMap((x) => (typeof x === 'object' && 'relationships' in x ? [{ view: t.name, ...x['relationships'] }] : [])),
    );
    expect(all).toHaveLength(rels.length);
    for (const r of rels) {
      const found = all.find(
        (x) =>
          x.view === `${r.fromTable}_live` &&
          x.arguments['to'] === `source('svcsync_views', '${r.toTable}_live')` &&
          x.arguments['column_name'] === r.fromColumns.map((c) => `"${c}"`).join(` || '|' || `),
      );
      expect(found, `${r.fromTable}_live -> ${r.toTable}_live`).toBeDefined();
      expect(found!.arguments['field']).toBe(r.toColumns.map((c) => `"${c}"`).join(` || '|' || `));
      expect(found!.config?.['severity']).toBe(r.kind === 'reference' ? 'warn' : undefined);
    }
  });

  it('checks every table’s and view’s freshness on when svcsync last read its streams, not on _synced_at', () => {
    for (const s of parsed.sources) {
      expect(s.config).toEqual({ freshness: { warn_after: { count: 24, period: 'hour' }, error_after: { count: 48, period: 'hour' } } });
      for (const t of s.tables) {
        const query = t.config?.loaded_at_query ?? '';
        expect(query, t.name).toMatch(/^SELECT /);
        expect(query, t.name).not.toContain('_synced_at');
        expect(query, t.name).toContain(`"${placement.schema}".`);
      }
    }
    const query = (name: string): string =>
      [...parsed.sources[0]!.tables, ...parsed.sources[1]!.tables].find((t) => t.name === name)!.config!.loaded_at_query!;
    expect(query('inventory_sales_orders__line_items')).toBe(loadedAtQuery(['inventory.sales_orders'], placement));
    expect(query('inventory_sales_orders__line_items')).toContain(
      `FROM "${placement.schema}"."_svcsync_streams" WHERE stream IN ('inventory.sales_orders')`,
    );
    expect(query('inventory_contact_persons_live')).toContain(`WHERE stream IN ('inventory.contact_persons')`);
    expect(query('report_unbilled_hours')).toContain(`WHERE stream IN ('invoice.projects', 'invoice.tasks')`);
    expect(query('billing_organizations')).toContain(`FROM "${placement.schema}"."_svcsync_organizations" WHERE family IN ('billing')`);
    // Plans, recurring expenses and the organizations they are in: the least recent of the three.
    expect(query('report_recurring_by_customer')).toMatch(
      /^SELECT MIN\(read_at\) FROM \(.*_svcsync_streams.* UNION ALL .*_svcsync_organizations.*\) AS reads$/,
    );
    expect(query('billing_plans')).toContain(placement.dialect === 'postgres' ? 'CAST(' : 'MIN(COALESCE(');
  });

  it('lists no history table unless the warehouse holds some', () => {
    expect(parsed.sources[0]!.tables.filter((t) => t.name.endsWith('_history'))).toEqual([]);
  });

  it('is the same object as dbtSources gives', () => {
    expect(parsed).toEqual(JSON.parse(JSON.stringify(dbtSources(defs, views, placement))));
  });
});

describe('svcsync schema --dbt with history tables in the warehouse', () => {
  const placement: DbtPlacement = { dialect: 'postgres', database: 'warehouse', schema: 'svcsync', viewsSchema: 'analytics' };
  const history = historyTableDefinitions(CATALOG).filter((h) => h.stream === 'inventory.sales_orders');
  const parsed = parse(renderDbtSources(defs, views, placement, { history })) as Parsed;

  it('lists them after the tables, in the tables’ source, described, and is still a sources file dbt takes', () => {
    expect(sourcesFile(parsed, '$')).toEqual([]);
    // Written out in full: no YAML anchors or aliases for a reader to follow.
    expect(renderDbtSources(defs, views, placement, { history })).not.toMatch(/[&*]a\d+\b/);
    const listed = parsed.sources[0]!.tables.map((t) => t.name);
    expect(listed.slice(defs.length)).toEqual(history.map((h) => h.name));
    const orders = parsed.sources[0]!.tables.find((t) => t.name === 'inventory_sales_orders_history')!;
    expect(orders.description).toContain('_valid_from <= t AND (_valid_to IS NULL OR _valid_to > t)');
    expect(orders.columns.slice(-3).map((c) => [c.name, c.data_type])).toEqual([
      ['_valid_from', 'timestamptz'],
      ['_valid_to', 'timestamptz'],
      ['_change', 'text'],
    ]);
    expect(orders.config?.loaded_at_query).toBe(loadedAtQuery(['inventory.sales_orders'], placement));
  });

  it('tests a version’s key (the table’s and _valid_from) and what _change holds; no joins (they hold by instant)', () => {
    const lines = parsed.sources[0]!.tables.find((t) => t.name === 'inventory_sales_orders__line_items_history')!;
    expect(lines.data_tests).toEqual([
      {
        unique: {
          arguments: { column_name: `"organization_id" || '|' || "salesorder_id" || '|' || "line_item_id" || '|' || "_valid_from"` },
        },
      },
    ]);
    expect(lines.columns.find((c) => c.name === '_valid_from')!.data_tests).toEqual(['not_null']);
    expect(lines.columns.find((c) => c.name === '_change')!.data_tests).toEqual([
      'not_null',
      { accepted_values: { arguments: { values: ['created', 'updated', 'deleted', 'restored'] } } },
    ]);
  });
});
