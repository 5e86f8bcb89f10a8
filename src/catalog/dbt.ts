import { stringify } from 'yaml';
import type { Relationship } from './relationships.js';
import { sqlType, type Dialect, type TableDef } from './tables.js';
import type { ViewDef } from './view-types.js';

/**
 * `svcsync schema --dbt`: the warehouse as dbt sources (a `sources.yml`), in the form dbt 1.10 and
 * later document for source properties: one source for the tables svcsync writes and one for its
 * views, each table and column described, `not_null` and `unique` on the keys, a `relationships`
 * test per foreign key (a child table to its parent) and per reference between streams (as a
 * warning: a row may arrive before the one it points to), and freshness on `_synced_at`.
 */

/** Where the warehouse's tables and views are, as dbt names them. */
export interface DbtPlacement {
  dialect: Dialect;
  /** The database (Postgres); SQLite has none dbt needs. */
  database?: string;
  /** The schema of the tables (SQLite: `main`). */
  schema: string;
  /** The schema of the views; the tables' schema when they share it. */
  viewsSchema: string;
}

export interface DbtOptions {
  /** The source of the tables; the views' is `{name}_views`. */
  name?: string;
  /** How old the newest `_synced_at` of a table may be before dbt warns, and errs, in hours. */
  warnAfterHours?: number;
  errorAfterHours?: number;
}

export const DBT_SOURCE = 'svcsync';
export const LOADED_AT_FIELD = '_synced_at';

interface TestArguments {
  arguments: Record<string, string>;
  config?: Record<string, string>;
}
type Test = string | Record<string, TestArguments>;

interface DbtColumn {
  name: string;
  description: string;
  data_type: string;
  data_tests?: Test[];
}

interface DbtTable {
  name: string;
  description: string;
  config?: Record<string, unknown>;
  data_tests?: Test[];
  columns: DbtColumn[];
}

/** A key of one or more columns as one SQL expression dbt's generic tests can take as a column. */
function keyExpression(columns: readonly string[]): string {
  return columns.map((c) => `"${c}"`).join(` || '|' || `);
}

/** `unique` and `not_null` on a key: on the column when it is one, on the joined columns when it is several. */
function keyTests(key: readonly string[]): { table: Test[]; columns: Map<string, Test[]> } {
  const columns = new Map<string, Test[]>(key.map((c) => [c, ['not_null']]));
  if (key.length === 1) {
    columns.get(key[0]!)!.push('unique');
    return { table: [], columns };
  }
  return { table: [{ unique: { arguments: { column_name: keyExpression(key) } } }], columns };
}

function relationshipTest(r: Relationship, source: string): Test {
  const relationships: TestArguments = {
    arguments: {
      column_name: keyExpression(r.fromColumns),
      to: `source('${source}', '${r.toTable}')`,
      field: keyExpression(r.toColumns),
    },
  };
  // A reference is metadata: the row it points to may arrive in a later run.
  if (r.kind === 'reference') relationships.config = { severity: 'warn' };
  return { relationships };
}

function describedColumn(name: string, description: string | undefined, dataType: string, tests: Test[] | undefined): DbtColumn {
  const column: DbtColumn = { name, description: description ?? '', data_type: dataType };
  if (tests && tests.length > 0) column.data_tests = tests;
  return column;
}

function table(def: TableDef, dialect: Dialect, source: string): DbtTable {
  const keys = keyTests(def.primaryKey);
  const tests = [...keys.table, ...(def.relationships ?? []).map((r) => relationshipTest(r, source))];
  return {
    name: def.name,
    description: def.description,
    ...(tests.length > 0 ? { data_tests: tests } : {}),
    columns: def.columns.map((c) => describedColumn(c.name, c.description, sqlType(c.type, dialect), keys.columns.get(c.name))),
  };
}

/** A view's key: a live view has its table's; a report view the columns it never leaves null. */
function viewKey(view: ViewDef, tables: ReadonlyMap<string, TableDef>): string[] {
  const own = view.table === undefined ? undefined : tables.get(view.table);
  return own ? own.primaryKey : view.columns.filter((c) => !c.nullable).map((c) => c.name);
}

function view(def: ViewDef, dialect: Dialect, tables: ReadonlyMap<string, TableDef>): DbtTable {
  const keys = keyTests(viewKey(def, tables));
  const fresh = def.columns.some((c) => c.name === LOADED_AT_FIELD);
  return {
    name: def.name,
    description: def.description,
    // A report view aggregates rows of several tables and has no _synced_at of its own.
    ...(fresh ? {} : { config: { freshness: null } }),
    ...(keys.table.length > 0 ? { data_tests: keys.table } : {}),
    columns: def.columns.map((c) => describedColumn(c.name, c.description, sqlType(c.type, dialect), keys.columns.get(c.name))),
  };
}

/** The sources file as an object (what the YAML says). */
export function dbtSources(
  defs: readonly TableDef[],
  views: readonly ViewDef[],
  placement: DbtPlacement,
  options: DbtOptions = {},
): Record<string, unknown> {
  const name = options.name ?? DBT_SOURCE;
  const freshness = {
    warn_after: { count: options.warnAfterHours ?? 24, period: 'hour' },
    error_after: { count: options.errorAfterHours ?? 48, period: 'hour' },
  };
  const where = (schema: string): Record<string, string> => ({
    ...(placement.database ? { database: placement.database } : {}),
    schema,
  });
  const config = { loaded_at_field: LOADED_AT_FIELD, freshness };
  const tables = new Map(defs.map((d) => [d.name, d]));
  return {
    version: 2,
    sources: [
      {
        name,
        description:
          'The tables svcsync writes: one per stream of the books, inventory, invoice and billing API families, and one per ' +
          'array of objects inside a record. Rows are never removed: a deleted record keeps its row with _deleted_at set ' +
          '(the views of the source ' +
          `${name}_views show live rows only). _synced_at is when svcsync last wrote a row.`,
        ...where(placement.schema),
        loader: 'svcsync',
        config,
        tables: defs.map((d) => table(d, placement.dialect, name)),
      },
      {
        name: `${name}_views`,
        description:
          'The views svcsync keeps beside its tables: {table}_live (the live rows of each table, a child row only while ' +
          'its parent lives) and the report_ views that answer everyday questions. Query these.',
        ...where(placement.viewsSchema),
        loader: 'svcsync',
        config,
        tables: views.map((v) => view(v, placement.dialect, tables)),
      },
    ],
  };
}

/** The sources file as YAML, with a header that says where it came from. */
export function renderDbtSources(
  defs: readonly TableDef[],
  views: readonly ViewDef[],
  placement: DbtPlacement,
  options: DbtOptions = {},
): string {
  const header =
    '# dbt sources for the svcsync warehouse, written by `svcsync schema --dbt` from its catalog.\n' +
    '# Write it again after an upgrade of svcsync; put your own models and tests in other files.\n';
  return header + stringify(dbtSources(defs, views, placement, options), { lineWidth: 0 });
}
