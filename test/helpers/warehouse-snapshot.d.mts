// Types of warehouse-snapshot.mjs (plain JavaScript, shared with scripts/write-derived-fixtures.mjs).

export type Query = (text: string) => Promise<Array<Record<string, unknown>>>;

export interface ColumnRow {
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

export interface DerivedSnapshot {
  dialect: 'sqlite' | 'postgres';
  views: Array<{ name: string; sql: string }>;
  tables: Array<{ table_name: string; stream: string; parent_table: string | null; description: string }>;
  columns: ColumnRow[];
  comments: Array<{ table: string; column: string | null; comment: string }>;
  foreignKeys: Array<{
    name: string | null;
    table: string;
    columns: string[];
    references: string;
    referencedColumns: string[];
    onDelete: string;
  }>;
}

export function derivedSnapshot(dialect: 'sqlite' | 'postgres', query: Query): Promise<DerivedSnapshot>;
export function snapshotText(snapshot: DerivedSnapshot): string;
export function sqliteDump(query: Query): Promise<string>;
export const SCHEMA_PLACEHOLDER: string;
export function rewritePgDump(text: string, schema: string): string;
