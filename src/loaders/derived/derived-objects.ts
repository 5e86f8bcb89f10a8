import { createHash } from 'node:crypto';
import { historyTableDefinitions, type HistoryTableDef } from '../../catalog/history.js';
import { relationships, sqlType, tableDefinitions, type Relationship, type StreamSpec, type TableDef } from '../../catalog/index.js';
import { qualifiedNaming, UNQUALIFIED } from '../../catalog/view-types.js';
import { liveViewName, viewDefinitions, type ViewDef } from '../../catalog/views.js';
import { ident } from '../sql-dialect.js';
import type { Warehouse } from '../warehouse.js';

/**
 * The warehouse objects svcsync derives from the catalog rather than freezing into migrations:
 * the views, the dictionary rows (`_svcsync_tables`, `_svcsync_columns`), and on Postgres the
 * table and column comments and the child tables' foreign keys. Nothing svcsync writes depends
 * on them, so they are rebuilt whole from the catalog whenever it changes
 * (src/loaders/derived/apply-derived.ts); tables and state stay in hand-written migrations.
 */

/**
 * Bump by one when this module or the catalog code it reads (src/catalog/views.ts,
 * relationships.ts, dictionary columns) changes what it derives from the same catalog. A catalog
 * change needs no bump: the hash follows it. A warehouse whose recorded revision is higher than
 * this belongs to a newer svcsync, whose objects this one leaves alone.
 */
export const DERIVED_REVISION = 3;

type DialectName = Warehouse['dialect'];

export interface DerivedView {
  /** The view's name, `schema.name` when the views live in a schema of their own (`warehouse.views_schema`). */
  name: string;
  /** The statement that creates it. */
  create: string;
}

/**
 * Where the views go on Postgres: in `views`, reading the tables in `tables`. When the two differ
 * the views' SQL names every table and view with its schema; when they are the same (the
 * default) nothing is qualified and the objects are those of every earlier version.
 */
export interface DerivedPlacement {
  tables: string;
  views: string;
}

export interface DictionaryTable {
  table_name: string;
  /** A table's stream; for a view, the streams whose tables it reads, comma-separated. */
  stream: string;
  /** A child table's parent table; a child table's live view reads its parent's live view. */
  parent_table: string | null;
  description: string;
  /** `table`, `view`, or `history` (a `{table}_history` the warehouse holds). */
  kind: 'table' | 'view' | 'history';
}

export interface DictionaryColumn {
  table_name: string;
  column_name: string;
  position: number;
  type: string;
  catalog_type: string;
  nullable: number;
  api_field: string;
  description: string | null;
  references_table: string | null;
  references_column: string | null;
  relationship: string | null;
}

export interface DerivedForeignKey {
  name: string;
  /** The statement that adds it. */
  add: string;
}

export interface DerivedObjects {
  revision: number;
  /** A digest of everything below: equal hashes, equal objects. */
  hash: string;
  /** In creation order: every view after the views it reads. */
  views: DerivedView[];
  tables: DictionaryTable[];
  columns: DictionaryColumn[];
  /** COMMENT statements (Postgres; none on SQLite, which has no comments). */
  comments: string[];
  /** Child table to parent table (Postgres; SQLite cannot add a constraint to a table). */
  foreignKeys: DerivedForeignKey[];
}

/** Descriptions of the dictionary's own tables, which no catalog entry describes. */
const OWN_TABLES: ReadonlyArray<[string, string]> = [
  [
    '_svcsync_tables',
    'Every warehouse table svcsync writes and every view it makes (kind: table or view), with the streams behind it and its description.',
  ],
  [
    '_svcsync_columns',
    'Every column of those tables and views: its type, the API field it comes from, its description and what it references.',
  ],
];

/**
 * A string literal for DDL (COMMENT takes no bound parameters): quotes doubled; text with a
 * backslash becomes an E'' literal with the backslashes doubled too, which reads the same
 * whatever standard_conforming_strings says.
 */
export function literal(text: string): string {
  if (text.includes('\0')) throw new Error('a comment cannot hold a NUL character');
  const quoted = text.replace(/'/g, "''");
  return text.includes('\\') ? `E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

/** The comment of a column: its description, and the API field it comes from. */
export function columnComment(apiField: string, description: string | null): string {
  const from = apiField === '(svcsync)' ? '' : `API field: ${apiField}.`;
  return [description ?? '', from].filter((s) => s !== '').join(' ');
}

function dictionaryColumns(defs: readonly TableDef[], rels: readonly Relationship[], dialect: DialectName): DictionaryColumn[] {
  // organization_id joins everything; the dictionary names what else a column points to.
  const refs = new Map<string, { r: Relationship; i: number }>();
  for (const r of rels) {
    r.fromColumns.forEach((c, i) => {
      if (c !== 'organization_id') refs.set(`${r.fromTable}.${c}`, { r, i });
    });
  }
  return defs.flatMap((d) =>
    d.columns.map((c, position): DictionaryColumn => {
      const ref = refs.get(`${d.name}.${c.name}`);
      return {
        table_name: d.name,
        column_name: c.name,
        position,
        type: sqlType(c.type, dialect),
        catalog_type: c.type,
        nullable: c.nullable ? 1 : 0,
        api_field: c.source,
        description: c.description ?? null,
        references_table: ref ? ref.r.toTable : null,
        references_column: ref ? (ref.r.toColumns[ref.i] ?? null) : null,
        relationship: ref ? ref.r.kind : null,
      };
    }),
  );
}

/**
 * The views' columns, after the tables' in the dictionary. A live view's columns point where its
 * table's do, at the live view of that table: a BI tool shown only the views joins view to view.
 */
function viewColumns(views: readonly ViewDef[], tableColumns: readonly DictionaryColumn[], dialect: DialectName): DictionaryColumn[] {
  const byTable = new Map<string, DictionaryColumn>(tableColumns.map((c) => [`${c.table_name}.${c.column_name}`, c]));
  return views.flatMap((v) =>
    v.columns.map((c, position): DictionaryColumn => {
      const same = v.table === undefined ? undefined : byTable.get(`${v.table}.${c.name}`);
      return {
        table_name: v.name,
        column_name: c.name,
        position,
        type: sqlType(c.type, dialect),
        catalog_type: c.type,
        nullable: c.nullable ? 1 : 0,
        api_field: c.source,
        description: c.description === '' ? null : c.description,
        references_table: same?.references_table ? liveViewName(same.references_table) : null,
        references_column: same?.references_column ?? null,
        relationship: same?.relationship ?? null,
      };
    }),
  );
}

/**
 * The history tables' columns: a column of the table points where the table's does (the current
 * row of what it references); `_valid_from`, `_valid_to` and `_change` point nowhere.
 */
function historyColumns(
  defs: readonly HistoryTableDef[],
  tableColumns: readonly DictionaryColumn[],
  dialect: DialectName,
): DictionaryColumn[] {
  const byTable = new Map<string, DictionaryColumn>(tableColumns.map((c) => [`${c.table_name}.${c.column_name}`, c]));
  return defs.flatMap((d) =>
    d.columns.map((c, position): DictionaryColumn => {
      const same = byTable.get(`${d.table}.${c.name}`);
      return {
        table_name: d.name,
        column_name: c.name,
        position,
        type: sqlType(c.type, dialect),
        catalog_type: c.type,
        nullable: c.nullable ? 1 : 0,
        api_field: c.source,
        description: c.description ?? null,
        references_table: same?.references_table ?? null,
        references_column: same?.references_column ?? null,
        relationship: same?.relationship ?? null,
      };
    }),
  );
}

function viewTables(views: readonly ViewDef[]): DictionaryTable[] {
  return views.map((v) => ({
    table_name: v.name,
    stream: v.streams.join(', '),
    parent_table: v.parentView ?? null,
    description: v.description,
    kind: 'view',
  }));
}

function comments(defs: readonly TableDef[], views: readonly ViewDef[], viewName: (name: string) => string): string[] {
  return [
    ...OWN_TABLES.map(([table, text]) => `COMMENT ON TABLE ${ident(table)} IS ${literal(text)}`),
    ...defs.map((d) => `COMMENT ON TABLE ${ident(d.name)} IS ${literal(d.description)}`),
    ...defs.flatMap((d) =>
      d.columns.map(
        (c) => `COMMENT ON COLUMN ${ident(d.name)}.${ident(c.name)} IS ${literal(columnComment(c.source, c.description ?? null))}`,
      ),
    ),
    ...views.map((v) => `COMMENT ON VIEW ${viewName(v.name)} IS ${literal(v.description)}`),
    ...views.flatMap((v) =>
      v.columns.map((c) => {
        const text = columnComment(c.source, c.description === '' ? null : c.description);
        return `COMMENT ON COLUMN ${viewName(v.name)}.${ident(c.name)} IS ${literal(text)}`;
      }),
    ),
  ];
}

function foreignKeys(rels: readonly Relationship[]): DerivedForeignKey[] {
  return rels
    .filter((r) => r.kind === 'foreign_key')
    .map((r) => ({
      name: r.name,
      add:
        `ALTER TABLE ${ident(r.fromTable)} ADD CONSTRAINT ${ident(r.name)} FOREIGN KEY (${r.fromColumns.map(ident).join(', ')}) ` +
        `REFERENCES ${ident(r.toTable)} (${r.toColumns.map(ident).join(', ')}) ON DELETE CASCADE`,
    }));
}

/**
 * Everything the catalog derives for a warehouse of this dialect, and its digest. `history`: the
 * history tables (`{table}_history`) the warehouse holds, which the dictionary and the comments
 * describe too; a table's history exists only once `history:` has named its stream.
 */
export function deriveObjects(
  catalog: readonly StreamSpec[],
  dialect: DialectName,
  revision = DERIVED_REVISION,
  placement?: DerivedPlacement,
  history: readonly string[] = [],
): DerivedObjects {
  const defs = tableDefinitions(catalog);
  const held = new Set(history);
  const historyDefs = historyTableDefinitions(catalog, defs).filter((d) => held.has(d.name));
  const rels = relationships(catalog);
  const postgres = dialect === 'postgres';
  const apart = postgres && placement !== undefined && placement.views !== placement.tables ? placement : undefined;
  const views = viewDefinitions(catalog, apart ? qualifiedNaming(apart.tables, apart.views) : UNQUALIFIED);
  const tableColumns = dictionaryColumns(defs, rels, dialect);
  const viewName = (name: string): string => (apart ? `${ident(apart.views)}.${ident(name)}` : ident(name));
  const content = {
    views: views.map((v) => ({
      name: apart ? `${apart.views}.${v.name}` : v.name,
      create: `CREATE VIEW ${viewName(v.name)} AS\n${v.sql.join('\n')}`,
    })),
    tables: [
      ...defs.map((d): DictionaryTable => ({
        table_name: d.name,
        stream: d.stream,
        parent_table: d.parentTable ?? null,
        description: d.description,
        kind: 'table',
      })),
      ...viewTables(views),
      ...historyDefs.map((d): DictionaryTable => ({
        table_name: d.name,
        stream: d.stream,
        parent_table: d.parentTable ?? null,
        description: d.description,
        kind: 'history',
      })),
    ],
    columns: [...tableColumns, ...viewColumns(views, tableColumns, dialect), ...historyColumns(historyDefs, tableColumns, dialect)],
    comments: postgres ? comments([...defs, ...historyDefs], views, viewName) : [],
    foreignKeys: postgres ? foreignKeys(rels) : [],
  };
  const hash = createHash('sha256').update(JSON.stringify(content)).digest('hex');
  return { revision, hash, ...content };
}

const cache = new WeakMap<readonly StreamSpec[], Map<string, DerivedObjects>>();

/** `deriveObjects` once per catalog, dialect, placement and history tables: `migrateToLatest` asks before every run. */
export function derivedObjectsOf(
  catalog: readonly StreamSpec[],
  dialect: DialectName,
  placement?: DerivedPlacement,
  history: readonly string[] = [],
): DerivedObjects {
  let byKey = cache.get(catalog);
  if (!byKey) cache.set(catalog, (byKey = new Map<string, DerivedObjects>()));
  const key = `${dialect} ${placement?.tables ?? ''} ${placement?.views ?? ''} ${[...history].sort().join(',')}`;
  let objects = byKey.get(key);
  if (!objects) byKey.set(key, (objects = deriveObjects(catalog, dialect, DERIVED_REVISION, placement, history)));
  return objects;
}
