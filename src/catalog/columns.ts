import type { ChildSpec, ColumnSpec, ColumnType, Source } from './types.js';

/**
 * Small builders that keep catalog entries close to the spec's field lists: a stream is
 * one object literal, and these only save repeating `{ name, type }` a hundred times.
 */

type Extra = Omit<ColumnSpec, 'name' | 'type'>;

export function col(name: string, type: ColumnType, extra: Extra = {}): ColumnSpec {
  return { name, type, ...extra };
}

/** Columns from a `{ field: type }` map, in the map's order; `extra` applies to each. */
export function cols(fields: Readonly<Record<string, ColumnType>>, extra: Extra = {}): ColumnSpec[] {
  return Object.entries(fields).map(([name, type]) => ({ name, type, ...extra }));
}

/**
 * A nested object flattened into `{prefix}__{field}` columns read from `[prefix, field]`
 * (addresses, communication preferences, default templates, a single line item).
 */
export function nested(prefix: string, fields: Readonly<Record<string, ColumnType>>, extra: Extra = {}): ColumnSpec[] {
  return Object.entries(fields).map(([field, type]) => ({
    name: `${prefix}__${field}`,
    type,
    path: [prefix, field],
    ...extra,
  }));
}

/** An address object; every address field is text. */
export function address(prefix: string, fields: readonly string[], extra: Extra = {}): ColumnSpec[] {
  return nested(prefix, Object.fromEntries(fields.map((f) => [f, 'text' as const])), extra);
}

/** Marks columns or children as carried by only some responses. */
export function only<T extends ColumnSpec | ChildSpec>(sources: readonly Source[], items: readonly T[]): T[] {
  return items.map((item) => ({ ...item, sources }));
}

export const LIST: readonly Source[] = ['list'];
export const DETAIL: readonly Source[] = ['detail'];

/**
 * Columns shared by several entries (spec 2.8 vendor credits), with `references` added for one
 * family: `{ vendor_id: 'inventory.contacts' }`. The other columns are returned as they are.
 */
export function referencing(columns: readonly ColumnSpec[], references: Readonly<Record<string, string>>): ColumnSpec[] {
  return columns.map((c) => {
    const target = references[c.name];
    return target === undefined ? c : { ...c, references: target };
  });
}
