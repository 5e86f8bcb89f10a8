import type { ColumnType } from './types.js';

/**
 * What the warehouse's views are made of (src/catalog/views.ts, report-views.ts): their SQL, and
 * the columns they show with a description each, for the data dictionary, the Postgres comments
 * and `svcsync schema --dbt`.
 */
export interface ViewColumn {
  name: string;
  type: ColumnType;
  nullable: boolean;
  /** The API field the value comes from, as the tables' dictionary names it, or '(svcsync)' for what a view computes. */
  source: string;
  description: string;
}

export interface ViewDef {
  name: string;
  description: string;
  /** The SELECT the view is created from, one array entry per line. */
  sql: string[];
  columns: ViewColumn[];
  /** The streams whose tables the view reads (`family.stream`), for the dictionary. */
  streams: string[];
  /** A `_live` view: the table whose live rows it shows. */
  table?: string;
  /** A child table's `_live` view: the live view of its parent it filters on. */
  parentView?: string;
}

/**
 * How a view's SQL names the tables and views it reads: quoted, and on Postgres with the schema
 * when the views live in a schema of their own (`warehouse.views_schema`).
 */
export interface ViewNaming {
  table(name: string): string;
  view(name: string): string;
}

/** A table's view of its live rows. */
export const LIVE_SUFFIX = '_live';

export function liveViewName(table: string): string {
  return `${table}${LIVE_SUFFIX}`;
}

/** An SQL identifier in double quotes (both dialects). */
export const quoteIdentifier = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** Tables and views named without a schema: they live side by side in the connection's schema. */
export const UNQUALIFIED: ViewNaming = { table: quoteIdentifier, view: quoteIdentifier };

/** Tables in `tables`, views in `views` (Postgres schemas). */
export function qualifiedNaming(tables: string, views: string): ViewNaming {
  return {
    table: (name) => `${quoteIdentifier(tables)}.${quoteIdentifier(name)}`,
    view: (name) => `${quoteIdentifier(views)}.${quoteIdentifier(name)}`,
  };
}
