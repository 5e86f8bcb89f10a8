import { allChildLayouts, ORGANIZATION_ID, streamLayout, type LaidColumn } from './layout.js';
import { isOrganizationList, qualifiedName, tableName, type StreamSpec } from './types.js';

/**
 * How the warehouse tables join, derived from the catalog; no stream is named here.
 *
 * - foreign_key: a child table (`{table}__{field}`, an array inside a record) to the table of
 *   the row that holds it, on the organization and the parent's key. The parent row is written
 *   first in the same transaction and no row is ever removed, so Postgres enforces it.
 * - reference: a column holding another stream's primary key in the same organization and
 *   family: a child stream's `parent.key`, or a column the catalog marks with `references`.
 *   Never enforced, because a row may arrive before the row it points to (another stream,
 *   another run); published as metadata only.
 */
export type RelationshipKind = 'foreign_key' | 'reference';

export interface Relationship {
  kind: RelationshipKind;
  /** The constraint name of a foreign key; a stable name for a reference. */
  name: string;
  fromTable: string;
  fromColumns: string[];
  toTable: string;
  toColumns: string[];
  /** Why it exists: a child table, a child stream's parent, or a column's `references`. */
  origin: 'child_table' | 'parent_stream' | 'column';
}

/** Every relationship of the catalog's tables, in catalog order (each table's own, then its child tables'). */
export function relationships(catalog: readonly StreamSpec[]): Relationship[] {
  const byName = new Map(catalog.map((s) => [qualifiedName(s), s]));
  const out: Relationship[] = [];
  for (const stream of catalog) {
    const layout = streamLayout(stream);
    const parent = stream.parent ? byName.get(`${stream.family}.${stream.parent.stream}`) : undefined;
    if (stream.parent && parent) {
      out.push(reference(layout.table, stream.parent.key, parent, 'parent_stream'));
    }
    out.push(
      ...declared(
        layout.table,
        layout.columns.filter((c) => c.role === 'field'),
        byName,
        stream.parent?.key,
      ),
    );
    for (const child of allChildLayouts(layout)) {
      out.push({
        kind: 'foreign_key',
        name: foreignKeyName(child.table),
        fromTable: child.table,
        fromColumns: [...child.parentKeyColumns],
        toTable: child.parentTable,
        toColumns: [...child.parentKeySources],
        origin: 'child_table',
      });
      // A child's own key may be another stream's id (the contact persons an order is addressed to).
      out.push(
        ...declared(
          child.table,
          child.columns.filter((c) => c.role === 'field' || c.role === 'key'),
          byName,
          undefined,
        ),
      );
    }
  }
  return out;
}

/** The name of a child table's foreign key to its parent table. */
export function foreignKeyName(table: string): string {
  return `${table}_fk`;
}

function declared(
  table: string,
  columns: readonly LaidColumn[],
  byName: ReadonlyMap<string, StreamSpec>,
  parentKey: string | undefined,
): Relationship[] {
  const out: Relationship[] = [];
  for (const c of columns) {
    const target = c.name === parentKey ? undefined : c.spec?.references;
    if (target === undefined) continue;
    const stream = byName.get(target);
    // validateCatalog reports a target that is missing or is an organization list.
    if (stream && !isOrganizationList(stream)) out.push(reference(table, c.name, stream, 'column'));
  }
  return out;
}

function reference(table: string, column: string, target: StreamSpec, origin: Relationship['origin']): Relationship {
  return {
    kind: 'reference',
    name: `${table}.${column}`,
    fromTable: table,
    fromColumns: [ORGANIZATION_ID, column],
    toTable: tableName(target),
    toColumns: [ORGANIZATION_ID, target.primaryKey],
    origin,
  };
}

export interface ColumnReference {
  table: string;
  column: string;
  kind: RelationshipKind;
}

/** The references of a table's columns: column name → `table.column` it points to (organization_id left out). */
export function columnReferences(rels: readonly Relationship[]): Map<string, Map<string, ColumnReference>> {
  const out = new Map<string, Map<string, ColumnReference>>();
  for (const r of rels) {
    const table = out.get(r.fromTable) ?? new Map<string, ColumnReference>();
    out.set(r.fromTable, table);
    r.fromColumns.forEach((column, i) => {
      if (column === ORGANIZATION_ID) return;
      table.set(column, { table: r.toTable, column: r.toColumns[i] ?? column, kind: r.kind });
    });
  }
  return out;
}
