import { allChildLayouts, streamLayout, type LaidColumn } from './layout.js';
import { relationships, type Relationship } from './relationships.js';
import { qualifiedName, type ColumnType, type StreamSpec } from './types.js';

export type Dialect = 'sqlite' | 'postgres';
/** Types of the columns svcsync adds itself (and of its `_svcsync_` tables). */
export type SystemColumnType = 'text' | 'timestamp' | 'integer';

export interface ColumnDef {
  name: string;
  type: ColumnType;
  nullable: boolean;
  /** The spec field path the value comes from ('billing_address.city', 'line_items[].rate'), or '(svcsync)'. */
  source: string;
  description?: string;
}

export interface TableDef {
  name: string;
  /** The stream that writes the table, `family.name`. */
  stream: string;
  parentTable?: string;
  primaryKey: string[];
  columns: ColumnDef[];
  description: string;
  /** The table's joins to other tables (src/catalog/relationships.ts); tableDefinitions always sets it. */
  relationships?: Relationship[];
}

/** Every table of the catalog: each stream's table, then its child tables, parents first. */
export function tableDefinitions(catalog: readonly StreamSpec[]): TableDef[] {
  const defs: TableDef[] = [];
  for (const stream of catalog) {
    const layout = streamLayout(stream);
    const stream_ = qualifiedName(stream);
    defs.push({
      name: layout.table,
      stream: stream_,
      primaryKey: [...layout.primaryKey],
      columns: layout.columns.map(columnDef),
      description: layout.description,
    });
    for (const child of allChildLayouts(layout)) {
      defs.push({
        name: child.table,
        stream: stream_,
        parentTable: child.parentTable,
        primaryKey: [...child.primaryKey],
        columns: child.columns.map(columnDef),
        description: child.description,
      });
    }
  }
  const rels = relationships(catalog);
  for (const d of defs) d.relationships = rels.filter((r) => r.fromTable === d.name);
  return defs;
}

/** A stream's table and its child tables (written with it), parent first, each with its primary key's columns. */
export function streamTables(stream: StreamSpec): KeyedTable[] {
  const layout = streamLayout(stream);
  return [layout, ...allChildLayouts(layout)].map((t) => ({ name: t.table, primaryKey: [...t.primaryKey] }));
}

export interface KeyedTable {
  name: string;
  primaryKey: string[];
}

function columnDef(c: LaidColumn): ColumnDef {
  const def: ColumnDef = { name: c.name, type: c.type, nullable: c.nullable, source: c.source };
  if (c.description !== undefined) def.description = c.description;
  return def;
}

const SQL_TYPES: Record<ColumnType, Record<Dialect, string>> = {
  id: { sqlite: 'text', postgres: 'text' },
  text: { sqlite: 'text', postgres: 'text' },
  integer: { sqlite: 'integer', postgres: 'bigint' },
  number: { sqlite: 'real', postgres: 'numeric' },
  hours: { sqlite: 'real', postgres: 'numeric' },
  // SQLite has no boolean: 0/1 in an integer column.
  boolean: { sqlite: 'integer', postgres: 'boolean' },
  date: { sqlite: 'text', postgres: 'date' },
  // SQLite holds ISO-8601 UTC text ending in Z, which sorts as the instant does.
  timestamp: { sqlite: 'text', postgres: 'timestamptz' },
  json: { sqlite: 'text', postgres: 'jsonb' },
};

/** The warehouse column type of a catalog type in a dialect. */
export function sqlType(type: ColumnType | SystemColumnType, dialect: Dialect): string {
  return SQL_TYPES[type][dialect];
}
