import { allChildLayouts, ORGANIZATION_ID, streamLayout, type ChildLayout, type LaidColumn } from './layout.js';
import { modelledViewDefinitions } from './report-views.js';
import { qualifiedName, tableName, type StreamSpec } from './types.js';
import { liveViewName, UNQUALIFIED, type ViewColumn, type ViewDef, type ViewNaming } from './view-types.js';

export { LIVE_SUFFIX, liveViewName, type ViewColumn, type ViewDef, type ViewNaming } from './view-types.js';
export { modelledViewDefinitions } from './report-views.js';

/**
 * The warehouse's views, generated from the catalog (docs/warehouse.md, "Views"). `migrateToLatest`
 * creates them again whenever what this generates changes (src/loaders/derived/), so a catalog
 * change reaches them without a migration.
 *
 * The SQL is portable: every identifier quoted, no dialect-specific function, so the same text
 * runs on SQLite and Postgres.
 */

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

interface LiveSource {
  table: string;
  stream: string;
  columns: readonly LaidColumn[];
  description: string;
  parent?: { table: string; pairs: ReadonlyArray<[string, string]> };
}

/** A live view's columns: its table's, without `_deleted_at`, described as the table describes them. */
function liveColumns(columns: readonly LaidColumn[]): ViewColumn[] {
  return columns
    .filter((c) => c.name !== '_deleted_at')
    .map((c) => ({
      name: c.name,
      type: c.type,
      nullable: c.nullable,
      source: c.source,
      description: c.description ?? '',
    }));
}

function liveView(source: LiveSource, naming: ViewNaming): ViewDef {
  const columns = liveColumns(source.columns);
  const sql = [
    'SELECT',
    ...columnLines(
      't',
      columns.map((c) => c.name),
    ),
    `FROM ${naming.table(source.table)} AS ${q('t')}`,
    `WHERE ${q('t')}.${q('_deleted_at')} IS NULL`,
  ];
  const view: ViewDef = {
    name: liveViewName(source.table),
    description: source.description,
    sql,
    columns,
    streams: [source.stream],
    table: source.table,
  };
  if (source.parent) {
    const parentView = liveViewName(source.parent.table);
    sql.push(`  AND EXISTS (SELECT 1 FROM ${naming.view(parentView)} AS ${q('p')}`);
    const conditions = joinConditions(source.parent.pairs, 'p', 't');
    sql.push(...conditions.map((c, i) => `    ${i === 0 ? 'WHERE' : 'AND'} ${c}${i === conditions.length - 1 ? ')' : ''}`));
    view.parentView = parentView;
  }
  return view;
}

/** The first sentence of a table's description: what its rows are. */
function whatRowsAre(description: string): string {
  const end = description.search(/\.(\s|$)/);
  return end < 0 ? description : description.slice(0, end + 1);
}

function childLiveView(child: ChildLayout, stream: string, naming: ViewNaming): ViewDef {
  const pairs = child.parentKeyColumns.map((c, i): [string, string] => [child.parentKeySources[i] ?? c, c]);
  return liveView(
    {
      table: child.table,
      stream,
      columns: child.columns,
      description:
        `${whatRowsAre(child.description)} The live rows of ${child.table}: those not marked deleted, ` +
        `of a parent that is live in ${liveViewName(child.parentTable)}.`,
      parent: { table: child.parentTable, pairs },
    },
    naming,
  );
}

/**
 * `{table}_live` for every table: rows whose `_deleted_at` is null and whose parent is live. The
 * parent of a child table (`{table}__{field}`) is the row of the record it came from; the parent
 * of a child stream's table (contact persons, refunds, tasks) is the parent stream's row. Each
 * view reads its parent's view, so grandchildren follow their whole chain. The columns are the
 * table's, without `_deleted_at`.
 */
export function liveViewDefinitions(catalog: readonly StreamSpec[], naming: ViewNaming = UNQUALIFIED): ViewDef[] {
  const views: ViewDef[] = [];
  for (const stream of catalog) {
    const layout = streamLayout(stream);
    const name = qualifiedName(stream);
    const what = stream.description.trim();
    if (stream.parent) {
      const parentTable = tableName({ family: stream.family, name: stream.parent.stream });
      const key = stream.parent.key;
      views.push(
        liveView(
          {
            table: layout.table,
            stream: name,
            columns: layout.columns,
            description:
              `${what} The live rows of ${layout.table}: records not marked deleted, ` +
              `whose ${parentTable} record is live in ${liveViewName(parentTable)}.`,
            parent: {
              table: parentTable,
              pairs: [
                [ORGANIZATION_ID, ORGANIZATION_ID],
                [key, key],
              ],
            },
          },
          naming,
        ),
      );
    } else {
      views.push(
        liveView(
          {
            table: layout.table,
            stream: name,
            columns: layout.columns,
            description: `${what} The live rows of ${layout.table}: records not marked deleted (_deleted_at is null).`,
          },
          naming,
        ),
      );
    }
    for (const child of allChildLayouts(layout)) views.push(childLiveView(child, name, naming));
  }
  return views;
}

/** Every view, in an order where each view comes after the views it reads. */
export function viewDefinitions(catalog: readonly StreamSpec[], naming: ViewNaming = UNQUALIFIED): ViewDef[] {
  return [...liveViewDefinitions(catalog, naming), ...modelledViewDefinitions(catalog, naming)];
}
