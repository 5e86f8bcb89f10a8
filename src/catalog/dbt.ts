import { stringify } from 'yaml';
import type { HistoryTableDef } from './history.js';
import { findStream } from './index.js';
import type { Relationship } from './relationships.js';
import { sqlType, type Dialect, type TableDef } from './tables.js';
import { liveViewName, quoteIdentifier, type ViewDef } from './view-types.js';

/**
 * `svcsync schema --dbt`: the warehouse as dbt sources (a `sources.yml`), in the form dbt 1.10 and
 * later document for source properties: one source for the tables svcsync writes (and the history
 * tables the warehouse holds) and one for its views, each table and column described, `not_null`
 * and `unique` on the keys, a `relationships` test per foreign key (a child table to its parent)
 * and per reference between streams (as a warning: a row may arrive before the one it points to),
 * on the tables and again on their `_live` views, and freshness on when svcsync last read the
 * streams behind each (`loaded_at_query` over `_svcsync_streams`).
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
  /** How long since svcsync last read a table's stream before dbt warns, and errs, in hours. */
  warnAfterHours?: number;
  errorAfterHours?: number;
  /** The history tables the warehouse holds (each exists once `history:` has named its stream). */
  history?: readonly HistoryTableDef[];
}

export const DBT_SOURCE = 'svcsync';

/** What `_change` of a history table holds. */
export const CHANGE_KINDS = ['created', 'updated', 'deleted', 'restored'] as const;

/** Where `_svcsync_streams.last_success_at` is null: the stream has never been read successfully for that organization. */
export const NEVER_READ = '1970-01-01T00:00:00.000Z';

interface TestArguments {
  arguments: Record<string, string | readonly string[]>;
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

/** How a relationship's test names the two sides: the tables, or their `_live` views. */
type Side = (table: string) => string;

function relationshipTest(r: Relationship, source: string, side: Side): Test {
  const relationships: TestArguments = {
    arguments: {
      column_name: keyExpression(r.fromColumns),
      to: `source('${source}', '${side(r.toTable)}')`,
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

/**
 * dbt's freshness query for a table or view: when svcsync last read the streams behind it, the
 * longest ago of every connection and organization, whether or not the read changed a row. A
 * stream read per organization counts from `_svcsync_streams.last_success_at`, never as long ago
 * as can be while it has not succeeded for one of them; an organization list from the last
 * discovery that listed it (`_svcsync_organizations.discovered_at`). No row at all (a stream
 * svcsync does not read) gives null, which dbt reports as an error. dbt runs it as a subquery.
 */
export function loadedAtQuery(streams: readonly string[], placement: Pick<DbtPlacement, 'dialect' | 'schema'>): string {
  const own = (table: string): string => `${quoteIdentifier(placement.schema)}.${quoteIdentifier(table)}`;
  const instant = (e: string): string => (placement.dialect === 'postgres' ? `CAST(${e} AS timestamptz)` : e);
  const list = (names: readonly string[]): string => names.map((n) => `'${n.replace(/'/g, "''")}'`).join(', ');
  const lists = streams.filter((s) => findStream(s)?.organizationList === true);
  const read = streams.filter((s) => !lists.includes(s));
  const parts: string[] = [];
  if (read.length > 0)
    parts.push(
      `SELECT MIN(${instant(`COALESCE(last_success_at, '${NEVER_READ}')`)}) AS read_at FROM ${own('_svcsync_streams')} ` +
        `WHERE stream IN (${list(read)})`,
    );
  if (lists.length > 0)
    parts.push(
      `SELECT MAX(${instant('discovered_at')}) AS read_at FROM ${own('_svcsync_organizations')} ` +
        `WHERE family IN (${list(lists.map((s) => findStream(s)!.family))})`,
    );
  return parts.length === 1 ? parts[0]! : `SELECT MIN(read_at) FROM (${parts.join(' UNION ALL ')}) AS reads`;
}

interface Context {
  dialect: Dialect;
  placement: DbtPlacement;
  /** The names of the two sources: the tables' and the views'. */
  tables: string;
  views: string;
}

function table(def: TableDef, ctx: Context): DbtTable {
  const keys = keyTests(def.primaryKey);
  const tests = [...keys.table, ...(def.relationships ?? []).map((r) => relationshipTest(r, ctx.tables, (t) => t))];
  return {
    name: def.name,
    description: def.description,
    config: { loaded_at_query: loadedAtQuery([def.stream], ctx.placement) },
    ...(tests.length > 0 ? { data_tests: tests } : {}),
    columns: def.columns.map((c) => describedColumn(c.name, c.description, sqlType(c.type, ctx.dialect), keys.columns.get(c.name))),
  };
}

/** A history table: its key with `_valid_from`, and what `_change` may hold; its joins are its table's, by instant. */
function historyTable(def: HistoryTableDef, ctx: Context): DbtTable {
  const keys = keyTests(def.primaryKey);
  keys.columns.set('_change', ['not_null', { accepted_values: { arguments: { values: CHANGE_KINDS } } }]);
  return {
    name: def.name,
    description: def.description,
    config: { loaded_at_query: loadedAtQuery([def.stream], ctx.placement) },
    ...(keys.table.length > 0 ? { data_tests: keys.table } : {}),
    columns: def.columns.map((c) => describedColumn(c.name, c.description, sqlType(c.type, ctx.dialect), keys.columns.get(c.name))),
  };
}

/** A view's key: a live view has its table's; a report view the columns it never leaves null. */
function viewKey(view: ViewDef, tables: ReadonlyMap<string, TableDef>): string[] {
  const own = view.table === undefined ? undefined : tables.get(view.table);
  return own ? own.primaryKey : view.columns.filter((c) => !c.nullable).map((c) => c.name);
}

/** A live view joins as its table does, to the live views of what the table points to (a BI tool shown only the views). */
function view(def: ViewDef, ctx: Context, tables: ReadonlyMap<string, TableDef>): DbtTable {
  const keys = keyTests(viewKey(def, tables));
  const own = def.table === undefined ? undefined : tables.get(def.table);
  const joins = (own?.relationships ?? []).map((r) => relationshipTest(r, ctx.views, liveViewName));
  const tests = [...keys.table, ...joins];
  return {
    name: def.name,
    description: def.description,
    config: { loaded_at_query: loadedAtQuery(def.streams, ctx.placement) },
    ...(tests.length > 0 ? { data_tests: tests } : {}),
    columns: def.columns.map((c) => describedColumn(c.name, c.description, sqlType(c.type, ctx.dialect), keys.columns.get(c.name))),
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
  const ctx: Context = { dialect: placement.dialect, placement, tables: name, views: `${name}_views` };
  const tables = new Map(defs.map((d) => [d.name, d]));
  const history = options.history ?? [];
  return {
    version: 2,
    sources: [
      {
        name,
        description:
          'The tables svcsync writes: one per stream of the books, inventory, invoice and billing API families, and one per ' +
          'array of objects inside a record' +
          (history.length > 0 ? ', and {table}_history (every version seen) for the streams that keep history' : '') +
          '. Rows are never removed: a deleted record keeps its row with _deleted_at set (the views of the source ' +
          `${ctx.views} show live rows only). Freshness is when svcsync last read each table's stream, changed or not.`,
        ...where(placement.schema),
        loader: 'svcsync',
        config: { freshness },
        tables: [...defs.map((d) => table(d, ctx)), ...history.map((d) => historyTable(d, ctx))],
      },
      {
        name: ctx.views,
        description:
          'The views svcsync keeps beside its tables: {table}_live (the live rows of each table, a child row only while ' +
          'its parent lives) and the report_ views that answer everyday questions. Query these.',
        ...where(placement.viewsSchema),
        loader: 'svcsync',
        config: { freshness },
        tables: views.map((v) => view(v, ctx, tables)),
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
  return header + stringify(dbtSources(defs, views, placement, options), { lineWidth: 0, aliasDuplicateObjects: false });
}
