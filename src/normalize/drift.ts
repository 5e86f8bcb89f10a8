import { CATALOG, childStreamsOf } from '../catalog/index.js';
import { ORGANIZATION_ID } from '../catalog/layout.js';
import type { ChildSpec, ColumnSpec, StreamSpec } from '../catalog/types.js';

/**
 * Schema drift: fields a raw record carries that the stream's catalog entry does not declare.
 * They stay in `_raw`; the drift report (`_svcsync_drift`, `svcsync schema --drift`) says
 * they exist. Only the field's path and the JSON type of its value are reported, never the
 * value: it may be personal data.
 */

/** The JSON type of a value, as `typeof` would say it for JSON (arrays and null apart). */
export type JsonType = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'null';

export interface UnknownField {
  /**
   * Where the field sits in the record: `x_new`, `billing_address.x_new` (inside an object
   * whose other fields are columns), `line_items[].x_new` (inside the elements of a child array).
   */
  path: string;
  type: JsonType;
}

/**
 * What the catalog declares at one level of a record: fields whose whole value is known
 * (a column, a key, a JSON column, a redacted field), objects some of whose fields are
 * columns (`billing_address.city`), and arrays of objects that are child tables.
 */
export interface KnownFields {
  leaves: ReadonlySet<string>;
  objects: ReadonlyMap<string, KnownFields>;
  arrays: ReadonlyMap<string, KnownFields>;
}

interface Building {
  leaves: Set<string>;
  objects: Map<string, Building>;
  arrays: Map<string, Building>;
}

const NONE: readonly UnknownField[] = Object.freeze([]);
const known = new WeakMap<StreamSpec, KnownFields>();

function building(): Building {
  return { leaves: new Set(), objects: new Map(), arrays: new Map() };
}

function addPath(level: Building, path: readonly string[]): void {
  let at = level;
  for (let i = 0; i < path.length - 1; i++) {
    const segment = path[i] as string;
    if (at.leaves.has(segment)) return;
    let next = at.objects.get(segment);
    if (!next) {
      next = building();
      at.objects.set(segment, next);
    }
    at = next;
  }
  const last = path[path.length - 1];
  if (last === undefined) return;
  // A JSON column holds the whole value: nothing under it is drift.
  at.leaves.add(last);
  at.objects.delete(last);
}

function addColumns(level: Building, columns: readonly ColumnSpec[]): void {
  for (const c of columns) {
    addPath(level, c.path ?? [c.name]);
    for (const p of c.alsoAt ?? []) addPath(level, p);
  }
}

function addChildren(level: Building, children: readonly ChildSpec[]): void {
  for (const child of children) {
    const element = building();
    if (child.key !== undefined) element.leaves.add(child.key);
    addColumns(element, child.columns);
    addChildren(element, child.children ?? []);
    for (const field of [child.field, ...(child.aliases ?? [])]) level.arrays.set(field, element);
  }
}

/**
 * Every field path the catalog declares for a stream, whichever response (list or single
 * record) carries it: a list record with a field only the single record maps is not drift.
 * An array that a child stream reads on its own (a vendor credit's `vendor_credit_refunds`)
 * is left in `_raw` on purpose, so it is not drift either. Worked out once per catalog entry.
 */
export function knownFields(stream: StreamSpec, catalog: readonly StreamSpec[] = CATALOG): KnownFields {
  let k = known.get(stream);
  if (!k) {
    const top = building();
    top.leaves.add(stream.primaryKey);
    // Organization lists are keyed by it, and records of other lists may repeat it.
    top.leaves.add(ORGANIZATION_ID);
    if (stream.parent) top.leaves.add(stream.parent.key);
    if (stream.cursor) top.leaves.add(stream.cursor.field);
    for (const field of stream.redact ?? []) top.leaves.add(field);
    for (const child of childStreamsOf(stream, catalog)) for (const field of child.recordsKey) top.leaves.add(field);
    addColumns(top, stream.columns);
    addChildren(top, stream.children);
    k = top;
    known.set(stream, k);
  }
  return k;
}

export function jsonType(value: unknown): JsonType {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  if (t === 'string' || t === 'number' || t === 'boolean') return t;
  return 'object';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The fields of `record` that `known` does not declare, each path once (the elements of an
 * array report a field once however many carry it; the first one's type is the sample).
 * A record with none gets one shared, frozen empty array: most records allocate nothing.
 */
export function unknownFields(known: KnownFields, record: Record<string, unknown>): readonly UnknownField[] {
  const out: UnknownField[] = [];
  scan(known, record, '', out, false);
  return out.length === 0 ? NONE : out;
}

function scan(level: KnownFields, record: Record<string, unknown>, prefix: string, out: UnknownField[], repeated: boolean): void {
  for (const key in record) {
    if (level.leaves.has(key)) continue;
    const value = record[key];
    const object = level.objects.get(key);
    if (object !== undefined) {
      // A scalar or null where an object is expected is a value problem, not drift.
      if (isObject(value)) scan(object, value, `${prefix}${key}.`, out, repeated);
      continue;
    }
    const element = level.arrays.get(key);
    if (element !== undefined) {
      const at = `${prefix}${key}[].`;
      if (Array.isArray(value)) {
        for (const e of value) if (isObject(e)) scan(element, e, at, out, true);
      } else if (isObject(value)) {
        // A lone object where an array of one is usual: the normalizer reads it as one.
        scan(element, value, at, out, true);
      }
      continue;
    }
    const path = `${prefix}${key}`;
    if (repeated && out.some((u) => u.path === path)) continue;
    out.push({ path, type: jsonType(value) });
  }
}
