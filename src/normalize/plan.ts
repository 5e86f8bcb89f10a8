import { allChildLayouts, ORGANIZATION_ID, streamLayout, type ChildLayout, type LaidColumn } from '../catalog/layout.js';
import { qualifiedName, type Source, type StreamSpec } from '../catalog/types.js';
import { knownFields, type KnownFields } from './drift.js';
import type { Redaction } from './redaction.js';
import { CONVERTERS, type Converter } from './values.js';

/**
 * What the normalizer does for one (stream, source), worked out once from the catalog:
 * which columns to write, where each value sits and which converter it goes through.
 * Records then run through flat arrays with no per-record closures or lookups by name.
 */

export interface FieldStep {
  /** The column; for a discount, the text column (amount and percentage follow it). */
  name: string;
  /** First path segment, and the rest when the value is nested (null when it is not). */
  head: string;
  tail: readonly string[] | null;
  /** Field path used in warnings, relative to the element ('billing_address.city'). */
  label: string;
  convert: Converter;
  discount: { amount: string; percentage: string } | null;
  /** The catalog's `alsoAt`: where else to look when the path holds nothing (null for most columns). */
  fallbacks: ReadonlyArray<{ head: string; tail: readonly string[] | null }> | null;
}

export interface ChildPlan {
  table: string;
  field: string;
  /** The field and its other spellings; the first one present wins. */
  fields: readonly string[];
  /** Index of this plan in StreamPlan.childPlans (depth-first), and of its descendants. */
  index: number;
  descendants: readonly number[];
  columns: readonly string[];
  /** Every column null: each element's row starts as a copy of it (see `rowTemplate`). */
  rowTemplate: Readonly<Record<string, null>>;
  keyColumns: readonly string[];
  /** Parent key columns of this table, and the parent row's columns they copy. */
  parentKeyColumns: readonly string[];
  parentKeySources: readonly string[];
  key: FieldStep | null;
  steps: readonly FieldStep[];
  children: readonly ChildPlan[];
}

export interface StreamPlan {
  stream: string;
  table: string;
  source: Source;
  primaryKey: string;
  keyedByOrganization: boolean;
  columns: readonly string[];
  /** Every column null: each record's row starts as a copy of it (see `rowTemplate`). */
  rowTemplate: Readonly<Record<string, null>>;
  steps: readonly FieldStep[];
  rawColumn: '_raw' | '_raw_detail';
  writesHash: boolean;
  cursor: { head: string; tail: readonly string[] | null } | null;
  /** The column naming the parent record, filled from the caller when the record lacks it. */
  parentColumn: string | null;
  /** Null when the stream redacts nothing. */
  redaction: Redaction | null;
  children: readonly ChildPlan[];
  /** Every child plan, depth-first: the order of NormalizedRecord.children. */
  childPlans: readonly ChildPlan[];
  /** The field paths the catalog declares for the stream (any source): the rest is drift. */
  known: KnownFields;
}

const plans = new WeakMap<StreamSpec, Partial<Record<Source, StreamPlan>>>();

/**
 * An object holding every one of `columns`, null, for each row to start as a copy of
 * (`{ ...template }`). A row filled column by column from `{}` turns into a dictionary after a
 * dozen stores by computed name, and grows with every store: each record left about 3 KB of
 * garbage behind, and the collector took a tenth of a sync's CPU. `JSON.parse` builds an object
 * with fast properties, and a copy of it is one allocation of the right size. Not frozen: a
 * copy of a frozen object takes the slow path. Nothing may add a column the template lacks.
 */
function rowTemplate(columns: readonly string[]): Record<string, null> {
  const nulls: Record<string, null> = {};
  for (const c of columns) nulls[c] = null;
  return JSON.parse(JSON.stringify(nulls)) as Record<string, null>;
}

export function streamPlan(stream: StreamSpec, source: Source): StreamPlan {
  let bySource = plans.get(stream);
  if (!bySource) {
    bySource = {};
    plans.set(stream, bySource);
  }
  let plan = bySource[source];
  if (!plan) {
    plan = compile(stream, source);
    bySource[source] = plan;
  }
  return plan;
}

function writes(c: LaidColumn, source: Source): boolean {
  return c.sources.includes(source);
}

function step(c: LaidColumn, columns: readonly LaidColumn[]): FieldStep {
  const path = c.path ?? [c.name];
  const isDiscount = c.spec?.amountOrPercentage === true;
  let discount: FieldStep['discount'] = null;
  if (isDiscount) {
    const i = columns.indexOf(c);
    discount = { amount: columns[i + 1]?.name ?? `${c.name}__amount`, percentage: columns[i + 2]?.name ?? `${c.name}__percentage` };
  }
  return {
    name: c.name,
    head: path[0] ?? c.name,
    tail: path.length > 1 ? path.slice(1) : null,
    label: path.join('.'),
    convert: CONVERTERS[c.type],
    discount,
    fallbacks: c.spec?.alsoAt?.map((p) => ({ head: p[0] ?? c.name, tail: p.length > 1 ? p.slice(1) : null })) ?? null,
  };
}

function compile(stream: StreamSpec, source: Source): StreamPlan {
  const layout = streamLayout(stream);
  const written = layout.columns.filter((c) => c.role === 'organization' || c.role === 'key' || writes(c, source));
  const steps = written.filter((c) => c.role === 'field').map((c) => step(c, layout.columns));
  const cursorColumn = stream.cursor ? stream.columns.find((c) => c.name === stream.cursor?.field) : undefined;
  const cursorPath = cursorColumn ? (cursorColumn.path ?? [cursorColumn.name]) : null;

  const childPlans: ChildPlan[] = [];
  const compileChild = (child: ChildLayout): ChildPlan => {
    const index = childPlans.length;
    const plan: ChildPlan = {
      table: child.table,
      field: child.spec.field,
      fields: [child.spec.field, ...(child.spec.aliases ?? [])],
      index,
      descendants: [],
      // Shared by every ChildRows of this table: frozen so no caller can change another's.
      columns: Object.freeze(child.columns.map((c) => c.name)),
      rowTemplate: rowTemplate(child.columns.map((c) => c.name)),
      keyColumns: Object.freeze([...child.primaryKey]),
      parentKeyColumns: child.parentKeyColumns,
      parentKeySources: child.parentKeySources,
      key: null,
      steps: [],
      children: [],
    };
    childPlans.push(plan);
    const keyColumn = child.columns.find((c) => c.role === 'key');
    const children = child.children.map(compileChild);
    return Object.assign(plan, {
      key: keyColumn ? step(keyColumn, child.columns) : null,
      steps: child.columns.filter((c) => c.role === 'field').map((c) => step(c, child.columns)),
      children,
      descendants: allChildLayouts(child).map((d) => childPlans.findIndex((p) => p.table === d.table)),
    });
  };
  const children = layout.children.filter((c) => c.sources.includes(source)).map(compileChild);

  return {
    stream: qualifiedName(stream),
    table: layout.table,
    source,
    primaryKey: stream.primaryKey,
    keyedByOrganization: stream.primaryKey === ORGANIZATION_ID,
    // Shared by every record of this (stream, source): frozen so no caller can change another's.
    columns: Object.freeze(written.map((c) => c.name)),
    rowTemplate: rowTemplate(written.map((c) => c.name)),
    steps,
    rawColumn: source === 'list' ? '_raw' : '_raw_detail',
    writesHash: written.some((c) => c.name === '_hash'),
    cursor: cursorPath ? { head: cursorPath[0] ?? '', tail: cursorPath.length > 1 ? cursorPath.slice(1) : null } : null,
    parentColumn: stream.parent && steps.some((s) => s.name === stream.parent?.key) ? stream.parent.key : null,
    redaction:
      (stream.redact?.length ?? 0) > 0 || stream.redactByName ? { fields: stream.redact ?? [], byName: stream.redactByName ?? null } : null,
    children,
    childPlans,
    known: knownFields(stream),
  };
}
