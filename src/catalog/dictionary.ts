import { linkApiSections } from './api-sections.js';
import { addedHistoryColumns, asOfFunctionName, type HistoryTableDef } from './history.js';
import type { Relationship } from './relationships.js';
import { sqlType, type ColumnDef, type Dialect, type TableDef } from './tables.js';
import type { ViewColumn, ViewDef } from './view-types.js';

/**
 * The data dictionary: what `svcsync schema [--json]` prints and what docs/warehouse.md
 * lists. Generated from the table definitions, so it cannot drift from the warehouse.
 */
export function renderDictionary(
  defs: readonly TableDef[],
  dialect: Dialect,
  format: 'text' | 'json',
  views: readonly ViewDef[] = [],
  /** Fields the JSON form starts with (the command adds svcsync's version). */
  head: Readonly<Record<string, unknown>> = {},
  /** The history tables svcsync may keep (`historyTableDefinitions`), listed after the views. */
  history: readonly HistoryTableDef[] = [],
): string {
  if (format === 'json') return dictionaryJson(defs, dialect, views, head, history);
  const out: string[] = [`# Warehouse tables (${dialect})`, ''];
  for (const t of defs) {
    out.push(...tableHeading(t), '');
    out.push(
      ...markdownTable(
        ['column', 'type', 'null', 'from', 'description'],
        t.columns.map((c) => [c.name, sqlType(c.type, dialect), c.nullable ? 'yes' : 'no', c.source, c.description ?? '']),
      ),
      '',
    );
  }
  out.push(...renderViews(views, (type) => [sqlType(type, dialect)], ['type'], '#'));
  out.push(...renderHistory(history, (type) => [sqlType(type, dialect)], ['type'], '#'));
  return out.join('\n');
}

/** A column in the JSON form: its type in the dialect and in the catalog, where it comes from, what it means. */
function columnJson(c: ColumnDef | ViewColumn, dialect: Dialect): Record<string, unknown> {
  return {
    name: c.name,
    type: sqlType(c.type, dialect),
    catalogType: c.type,
    nullable: c.nullable,
    source: c.source,
    description: c.description ?? null,
  };
}

/** `svcsync schema --json`: the tables, their relationships, the views and the history tables svcsync may keep. */
function dictionaryJson(
  defs: readonly TableDef[],
  dialect: Dialect,
  views: readonly ViewDef[],
  head: Readonly<Record<string, unknown>>,
  history: readonly HistoryTableDef[],
): string {
  const doc = {
    ...head,
    dialect,
    tables: defs.map((t) => ({
      name: t.name,
      stream: t.stream,
      parent: t.parentTable ?? null,
      primaryKey: t.primaryKey,
      description: t.description,
      columns: t.columns.map((c) => columnJson(c, dialect)),
    })),
    relationships: defs.flatMap((t) =>
      (t.relationships ?? []).map((r) => ({
        name: r.name,
        kind: r.kind,
        from: { table: r.fromTable, columns: r.fromColumns },
        to: { table: r.toTable, columns: r.toColumns },
        origin: r.origin,
      })),
    ),
    views: views.map((v) => ({
      name: v.name,
      description: v.description,
      streams: v.streams,
      table: v.table ?? null,
      columns: v.columns.map((c) => columnJson(c, dialect)),
    })),
    historyTables: history.map((t) => ({
      name: t.name,
      table: t.table,
      stream: t.stream,
      parent: t.parentTable ?? null,
      primaryKey: t.primaryKey,
      asOf: dialect === 'postgres' ? asOfFunctionName(t.table) : null,
      description: t.description,
      columns: t.columns.map((c) => columnJson(c, dialect)),
    })),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** When a history table's versions begin. */
function versionsBegin(t: HistoryTableDef): string {
  if (t.parentTable !== undefined) return 'with its record’s';
  return t.changeColumn === null ? 'when svcsync writes it' : `its ${t.changeColumn}`;
}

/**
 * The history tables: what they add to their table's columns, then an index of every one svcsync
 * may keep. Each exists only once `history:` has named its stream, so none is listed column by
 * column: its columns are its table's, then the three below.
 */
function renderHistory(
  history: readonly HistoryTableDef[],
  types: (type: HistoryTableDef['columns'][number]['type']) => string[],
  typeHeads: readonly string[],
  level: string,
): string[] {
  if (history.length === 0) return [];
  const out = [`${level}# History tables`, ''];
  out.push(
    'A table whose stream keeps history (`history:` in the configuration) has a `{table}_history` beside it, made by the',
    'first run with history on for its stream: every version svcsync has seen of its rows, one row per version. It has its',
    'table’s columns, each the value in that version, then these three; its key is the table’s plus `_valid_from`. The table',
    "as it stood at an instant t: `_valid_from <= t AND (_valid_to IS NULL OR _valid_to > t) AND _change <> 'deleted'`; on",
    'Postgres `svcsync_as_of_<table>(t)` returns those rows. The warehouse’s own dictionary (`_svcsync_tables`, kind',
    '`history`) lists the history tables it holds.',
    '',
  );
  out.push(
    ...markdownTable(
      ['column', ...typeHeads, 'null', 'description'],
      addedHistoryColumns().map((c) => [`\`${c.name}\``, ...types(c.type), c.nullable ? 'yes' : 'no', c.description ?? '']),
    ),
    '',
  );
  out.push(
    ...markdownTable(
      ['history table', 'table', 'stream', 'versions begin', 'as of (Postgres)'],
      history.map((t) => [t.name, t.table, t.stream, versionsBegin(t), `${asOfFunctionName(t.table)}(t)`]),
    ),
    '',
  );
  return out;
}

/**
 * The views: an index of every view, then each `report_` view with its columns (a `_live` view
 * has its table's columns but `_deleted_at`, described with the table).
 */
function renderViews(
  views: readonly ViewDef[],
  types: (type: ViewDef['columns'][number]['type']) => string[],
  typeHeads: readonly string[],
  level: string,
): string[] {
  if (views.length === 0) return [];
  const out = [`${level}# Views and their columns`, ''];
  out.push(
    'Query these: `{table}_live` holds the live rows of each table (its columns but `_deleted_at`), and the `report_` views',
    'answer everyday questions.',
    '',
  );
  out.push(
    ...markdownTable(
      ['view', 'description'],
      views.map((v) => [v.name, v.description]),
    ),
    '',
  );
  for (const v of views.filter((x) => x.table === undefined)) {
    out.push(`${level}## ${v.name}`, '', v.description, '', `- reads: ${v.streams.join(', ')}`, '');
    out.push(
      ...markdownTable(
        ['column', ...typeHeads, 'null', 'from', 'description'],
        v.columns.map((c) => [`\`${c.name}\``, ...types(c.type), c.nullable ? 'yes' : 'no', c.source, c.description]),
      ),
      '',
    );
  }
  return out;
}

/** The tables part of docs/warehouse.md: an index, then every table with both dialects' types, then the views and the history tables. */
export function renderWarehouseMarkdown(
  defs: readonly TableDef[],
  views: readonly ViewDef[] = [],
  history: readonly HistoryTableDef[] = [],
): string {
  const out: string[] = ['## Tables', ''];
  out.push(
    ...markdownTable(
      ['table', 'stream', 'parent', 'primary key'],
      defs.map((t) => [`[${t.name}](#${t.name})`, t.stream, t.parentTable ?? '', t.primaryKey.join(', ')]),
    ),
    '',
  );
  for (const t of defs) {
    out.push(...tableHeading(t, '###'), '');
    out.push(
      ...markdownTable(
        ['column', 'SQLite', 'Postgres', 'null', 'from', 'description'],
        t.columns.map((c) => [
          `\`${c.name}\``,
          sqlType(c.type, 'sqlite'),
          sqlType(c.type, 'postgres'),
          c.nullable ? 'yes' : 'no',
          c.source === '(svcsync)' ? c.source : `\`${c.source}\``,
          c.description ?? '',
        ]),
      ),
      '',
    );
  }
  out.push(...renderViews(views, (type) => [sqlType(type, 'sqlite'), sqlType(type, 'postgres')], ['SQLite', 'Postgres'], '#'));
  out.push(...renderHistory(history, (type) => [sqlType(type, 'sqlite'), sqlType(type, 'postgres')], ['SQLite', 'Postgres'], '#'));
  // Beside docs/api.md, a citation of one of its sections is a link to it.
  return [...renderErd(defs), ...out.map(linkApiSections)].join('\n');
}

/**
 * The Mermaid entity-relationship diagrams of docs/warehouse.md, one per family: every table with
 * its key and reference columns; solid lines are foreign keys (child table to parent table),
 * dashed lines references between streams.
 */
export function renderErd(defs: readonly TableDef[]): string[] {
  const out: string[] = [
    '## Diagram',
    '',
    'How the tables join, one diagram per family. Solid lines are foreign keys from a child table to its parent table',
    '(enforced on Postgres); dashed lines are references between streams (metadata only). Each table shows its key',
    'columns (PK), the columns that join it to another table (FK), and no other column: see [Tables](#tables).',
    'A table whose stream keeps history has a `{table}_history` beside it, not drawn: the same columns and joins,',
    "keyed by the table's key and `_valid_from` (see [History](#history)).",
    '',
  ];
  const families = [...new Set(defs.map((d) => d.stream.split('.')[0] ?? ''))];
  for (const family of families) {
    const tables = defs.filter((d) => d.stream.split('.')[0] === family);
    out.push(`### ${family}`, '', '```mermaid', 'erDiagram');
    for (const t of tables) {
      const joining = new Set((t.relationships ?? []).flatMap((r) => r.fromColumns));
      const shown = t.columns.filter((c) => t.primaryKey.includes(c.name) || joining.has(c.name));
      out.push(`  ${t.name} {`);
      for (const c of shown) {
        const keys = [t.primaryKey.includes(c.name) ? 'PK' : '', joining.has(c.name) ? 'FK' : ''].filter((k) => k !== '');
        out.push(`    ${c.type} ${c.name} ${keys.join(', ')}`);
      }
      out.push('  }');
    }
    for (const t of tables) {
      for (const r of t.relationships ?? []) {
        const label = r.fromColumns.filter((c) => c !== 'organization_id').join(', ');
        const line = r.kind === 'foreign_key' ? '||--o{' : '|o..o{';
        out.push(`  ${r.toTable} ${line} ${r.fromTable} : "${label}"`);
      }
    }
    out.push('```', '');
  }
  return out;
}

function tableHeading(t: TableDef, level = '##'): string[] {
  const lines = [`${level} ${t.name}`, '', t.description, '', `- stream: ${t.stream}`, `- primary key: ${t.primaryKey.join(', ')}`];
  if (t.parentTable !== undefined) lines.push(`- parent: ${t.parentTable}`);
  for (const r of t.relationships ?? []) lines.push(`- ${describeRelationship(r)}`);
  return lines;
}

/** "foreign key (organization_id, salesorder_id) → inventory_sales_orders (organization_id, salesorder_id)" */
function describeRelationship(r: Relationship): string {
  const kind = r.kind === 'foreign_key' ? 'foreign key' : 'references';
  return `${kind} (${r.fromColumns.join(', ')}) \u2192 ${r.toTable} (${r.toColumns.join(', ')})`;
}

/** A markdown table padded so it also lines up in a terminal. */
function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const cells = [header, ...rows].map((r) => r.map((c) => c.replace(/\|/g, '\\|').replace(/\n/g, ' ')));
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`.trimEnd();
  const [head, ...body] = cells;
  return [line(head ?? []), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)];
}
