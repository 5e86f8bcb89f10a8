import { hash as digest } from 'node:crypto';
import type { Source, StreamSpec } from '../catalog/types.js';
import { FatalError } from '../core/errors.js';
import { unknownFields, type UnknownField } from './drift.js';
import { streamPlan, type ChildPlan, type FieldStep, type StreamPlan } from './plan.js';
import { redactRecord } from './redaction.js';
import { jsonText, parseDiscount, parseInstant, toId, type Note, type SqlValue } from './values.js';

export type { SqlValue } from './values.js';
export type { JsonType, UnknownField } from './drift.js';
export type Row = Record<string, SqlValue>;

export interface NormalizeWarning {
  table: string;
  /** The record's id (for a child row, the id of the record it belongs to). */
  id: string;
  /** The field as found in the record: 'discount', 'line_items[2].rate'. */
  field: string;
  /** What kind of surprise: warnings are counted per stream, field and kind (WarningTally). */
  kind: WarningKind;
  message: string;
}

/** text_repaired: a NUL character or an unpaired surrogate the client replaced with U+FFFD (A38). */
export type WarningKind = 'value' | 'not_an_array' | 'element_not_object' | 'no_child_key' | 'repeated_child_key' | 'text_repaired';

export interface ChildRows {
  table: string;
  /**
   * organization_id and the record's key: these rows replace every row of `table` that
   * belongs to that record. For a grandchild table too (price brackets of all the plan's
   * add-ons), so elements of a parent element that disappeared go with it.
   */
  parentKey: Row;
  /** This child table's full primary key (shared and frozen, as is `columns`). */
  keyColumns: string[];
  /** Every column of this child table, in table order; every row has all of them. */
  columns: string[];
  rows: Row[];
}

export interface NormalizedRecord {
  table: string;
  id: string;
  key: Row;
  /** Epoch ms of the cursor field; null when the stream has no cursor or the record lacks it. */
  changedAt: number | null;
  /** Columns this source writes: the key, its fields, its system columns. Fixed per (stream, source); shared and frozen. */
  columns: string[];
  row: Row;
  /** SHA-1 of the record's JSON text; compared across list reads to spot changes. */
  hash: string;
  /**
   * One entry per child table whose array the record carries, even empty; a record that
   * omits an array leaves that table alone (A24).
   */
  children: ChildRows[];
  warnings: NormalizeWarning[];
  /**
   * Fields the record carries that the catalog does not declare (schema drift): their paths
   * and the JSON type of a value, never the value. Kept in `_raw` like every field.
   */
  unknown: readonly UnknownField[];
}

export interface NormalizeOptions {
  organizationId: string;
  source: Source;
  /** ISO-8601 UTC instant written to _synced_at (the caller owns the clock). */
  syncedAt: string;
  /** The run writing the rows, written to _run_id (row lineage); null outside a run. */
  runId?: string | null;
  /**
   * The parent record's id, for a stream read per parent: fills the parent column
   * when the record itself lacks it.
   */
  parentId?: string;
  /** The record's `listIdentity`, when the caller took it first: its JSON text and hash are not made twice. */
  identity?: ListIdentity;
}

/** What comparing a list record with the stored row needs, taken without normalizing the record. */
export interface ListIdentity {
  id: string;
  /** The organization the row belongs to (`opts.organizationId`). */
  organizationId: string;
  /** The `hash` normalizeRecord gives the record. */
  hash: string;
  /** The `changedAt` normalizeRecord gives the record. */
  changedAt: number | null;
  /** The record as `_raw` keeps it (redacted where the stream redacts), and that JSON text. */
  raw: Record<string, unknown>;
  text: string;
}

/**
 * A raw record's id, hash and change time, as `normalizeRecord` would give them, for a fraction
 * of its work: an unchanged record (its hash equals the stored one) need not be normalized at all.
 * Throws as normalizeRecord does when the record has no primary key.
 */
export function listIdentity(
  stream: StreamSpec,
  received: Record<string, unknown>,
  opts: Pick<NormalizeOptions, 'organizationId' | 'source'>,
): ListIdentity {
  const plan = streamPlan(stream, opts.source);
  const raw = redacted(plan, received);
  const id = primaryKeyOf(plan, raw, { message: null }, opts);
  const text = jsonText(raw);
  return { id, organizationId: opts.organizationId, hash: digest('sha1', text, 'hex'), changedAt: changedAtOf(plan, raw), raw, text };
}

function redacted(plan: StreamPlan, received: Record<string, unknown>): Record<string, unknown> {
  return plan.redaction === null ? received : redactRecord(plan.redaction, received);
}

function changedAtOf(plan: StreamPlan, raw: Record<string, unknown>): number | null {
  if (plan.cursor === null) return null;
  const value = valueAt(raw, plan.cursor.head, plan.cursor.tail);
  return typeof value === 'string' ? parseInstant(value) : null;
}

/**
 * A raw record of `stream`, as one response (`source`) gave it, into the row of the
 * stream's table and the rows of its child tables. Pure: the same input gives the same
 * output, and nothing is read or written. Throws only when the record has no primary key
 * (a FatalError naming the stream, the field and the record, with what to do).
 */
export function normalizeRecord(stream: StreamSpec, received: Record<string, unknown>, opts: NormalizeOptions): NormalizedRecord {
  const plan = streamPlan(stream, opts.source);
  const known = opts.identity;
  const raw = known?.raw ?? redacted(plan, received);
  const note: Note = { message: null };
  const warnings: NormalizeWarning[] = [];

  const id = primaryKeyOf(plan, raw, note, opts);
  if (note.message !== null) {
    warnings.push({ table: plan.table, id, field: plan.primaryKey, kind: 'value', message: note.message });
    note.message = null;
  }
  const organizationId = plan.keyedByOrganization ? id : opts.organizationId;
  const key: Row = plan.keyedByOrganization ? { organization_id: id } : { organization_id: organizationId, [plan.primaryKey]: id };

  const row: Row = { ...plan.rowTemplate };
  row.organization_id = organizationId;
  if (!plan.keyedByOrganization) row[plan.primaryKey] = id;
  writeSteps(plan.steps, raw, row, note, warnings, plan.table, id, '');
  if (plan.parentColumn !== null && opts.parentId !== undefined) {
    const current = row[plan.parentColumn];
    if (current === null || current === undefined || current === '') row[plan.parentColumn] = opts.parentId;
  }

  const text = known ? known.text : jsonText(raw);
  // One-shot crypto.hash (Node 20.12+): about three times faster than a Hash object per record.
  const hash = known ? known.hash : digest('sha1', text, 'hex');
  row[plan.rawColumn] = text;
  if (plan.writesHash) row._hash = hash;
  row._synced_at = opts.syncedAt;
  row._run_id = opts.runId ?? null;
  row._deleted_at = null;

  const changedAt = known ? known.changedAt : changedAtOf(plan, raw);

  const children: ChildRows[] = [];
  if (plan.childPlans.length > 0) {
    const slots: (ChildRows | undefined)[] = new Array<ChildRows | undefined>(plan.childPlans.length);
    const ctx: ChildContext = { plan, rootKey: key, slots, note, warnings, id, syncedAt: opts.syncedAt, runId: opts.runId ?? null };
    for (const child of plan.children) normalizeChild(ctx, child, raw, row, '');
    for (const entry of slots) if (entry !== undefined) children.push(entry);
  }

  const unknown = unknownFields(plan.known, raw);
  return { table: plan.table, id, key, changedAt, columns: plan.columns as string[], row, hash, children, warnings, unknown };
}

/** The columns `normalizeRecord` writes for this stream and source, in order. */
export function columnsFor(stream: StreamSpec, source: Source): string[] {
  return [...streamPlan(stream, source).columns];
}

function primaryKeyOf(
  plan: StreamPlan,
  raw: Record<string, unknown>,
  note: Note,
  opts: Pick<NormalizeOptions, 'organizationId' | 'source'>,
): string {
  const value = raw[plan.primaryKey];
  const id = value === undefined || value === null ? null : toId(value, note);
  if (id === null || id === '' || typeof id !== 'string') {
    let snippet: string;
    try {
      // Redacted as in _raw: the message is logged, a webhook's secret must not be.
      snippet = jsonText(raw).slice(0, 200);
    } catch {
      snippet = '(unprintable)';
    }
    throw new FatalError(
      `${plan.stream}: a record of the ${opts.source} response has no ${plan.primaryKey} (its primary key): ${snippet}`,
      {
        hint:
          `svcsync cannot key or store a ${plan.stream} record without ${plan.primaryKey}. If the API names this id differently, ` +
          `change primaryKey of ${plan.stream} in src/catalog; if not, report the record above: the API sent it without its id.`,
        organizationId: opts.organizationId,
      },
    );
  }
  return id;
}

/** The value at the first of `places` that holds one (see `ColumnSpec.alsoAt`). */
function firstFound(record: Record<string, unknown>, places: NonNullable<FieldStep['fallbacks']>): unknown {
  for (const p of places) {
    const value = valueAt(record, p.head, p.tail);
    if (value !== undefined) return value;
  }
  return undefined;
}

function valueAt(record: Record<string, unknown>, head: string, tail: readonly string[] | null): unknown {
  let value: unknown = record[head];
  if (tail === null) return value;
  for (const segment of tail) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

function writeSteps(
  steps: readonly FieldStep[],
  record: Record<string, unknown>,
  row: Row,
  note: Note,
  warnings: NormalizeWarning[],
  table: string,
  id: string,
  prefix: string,
): void {
  for (const s of steps) {
    let value = valueAt(record, s.head, s.tail);
    if (value === undefined && s.fallbacks !== null) value = firstFound(record, s.fallbacks);
    if (s.discount === null) {
      row[s.name] = value === undefined ? null : s.convert(value, note);
    } else {
      const d = parseDiscount(value, note);
      row[s.name] = d.text;
      row[s.discount.amount] = d.amount;
      row[s.discount.percentage] = d.percentage;
    }
    if (note.message !== null) {
      warnings.push({ table, id, field: `${prefix}${s.label}`, kind: 'value', message: note.message });
      note.message = null;
    }
  }
}

interface ChildContext {
  plan: StreamPlan;
  rootKey: Row;
  slots: (ChildRows | undefined)[];
  note: Note;
  warnings: NormalizeWarning[];
  id: string;
  syncedAt: string;
  runId: string | null;
}

function entryFor(ctx: ChildContext, child: ChildPlan): ChildRows {
  let entry = ctx.slots[child.index];
  if (entry === undefined) {
    entry = {
      table: child.table,
      parentKey: ctx.rootKey,
      keyColumns: child.keyColumns as string[],
      columns: child.columns as string[],
      rows: [],
    };
    ctx.slots[child.index] = entry;
  }
  return entry;
}

/**
 * The elements of a child array, under whichever of its field names the record uses. A single
 * object where an array of objects is expected is a one-element array: published payloads do
 * that (a recurring expense's `line_item`, a vendor credit's lone line item).
 */
function arrayOf(record: Record<string, unknown>, child: ChildPlan): { field: string; elements: unknown[] } | undefined {
  for (const field of child.fields) {
    const value = record[field];
    if (Array.isArray(value)) return { field, elements: value };
  }
  for (const field of child.fields) {
    const value = record[field];
    if (value !== null && typeof value === 'object') return { field, elements: [value] };
  }
  return undefined;
}

/**
 * The rows of one child array of one parent (the record, or an element of a parent array).
 * `parentRow` holds the parent's key columns; `prefix` locates the parent in warnings.
 */
function normalizeChild(ctx: ChildContext, child: ChildPlan, record: Record<string, unknown>, parentRow: Row, prefix: string): void {
  const found = arrayOf(record, child);
  if (found === undefined) {
    const present = child.fields.find((f) => record[f] !== undefined && record[f] !== null && record[f] !== '');
    if (present !== undefined) {
      ctx.warnings.push({
        table: child.table,
        id: ctx.id,
        field: `${prefix}${present}`,
        kind: 'not_an_array',
        message: 'expected an array of objects, got a scalar; left this table untouched',
      });
    }
    return;
  }
  const { field, elements } = found;
  const entry = entryFor(ctx, child);
  // An empty parent array means its elements' arrays are empty too: clear them all.
  if (elements.length === 0) {
    for (const d of child.descendants) {
      const descendant = ctx.plan.childPlans[d];
      if (descendant !== undefined) entryFor(ctx, descendant);
    }
    return;
  }
  const seen = child.key === null ? null : new Set<string>();
  for (let i = 0; i < elements.length; i++) {
    const element = elements[i];
    const at = `${prefix}${field}[${i}]`;
    if (element === null || typeof element !== 'object' || Array.isArray(element)) {
      ctx.warnings.push({
        table: child.table,
        id: ctx.id,
        field: at,
        kind: 'element_not_object',
        message: 'element is not an object; skipped',
      });
      continue;
    }
    const values = element as Record<string, unknown>;
    const row: Row = { ...child.rowTemplate };
    for (let k = 0; k < child.parentKeyColumns.length; k++) {
      row[child.parentKeyColumns[k] as string] = parentRow[child.parentKeySources[k] as string] ?? null;
    }
    if (child.key !== null && seen !== null) {
      let raw = values[child.key.head];
      if (raw === undefined && child.key.fallbacks !== null) raw = firstFound(values, child.key.fallbacks);
      let key = raw === undefined ? null : child.key.convert(raw, ctx.note);
      if (ctx.note.message !== null) {
        ctx.warnings.push({ table: child.table, id: ctx.id, field: `${at}.${child.key.label}`, kind: 'value', message: ctx.note.message });
        ctx.note.message = null;
      }
      const text = key === null ? '' : String(key);
      if (text === '' || seen.has(text)) {
        ctx.warnings.push({
          table: child.table,
          id: ctx.id,
          field: `${at}.${child.key.label}`,
          kind: text === '' ? 'no_child_key' : 'repeated_child_key',
          message:
            text === ''
              ? `no ${child.key.label}; keyed by position as #${i}`
              : `${child.key.label} ${text} repeats within the record; keyed by position as #${i}`,
        });
        key = `#${i}`;
      }
      seen.add(String(key));
      row[child.key.name] = key;
    }
    row._position = i;
    writeSteps(child.steps, values, row, ctx.note, ctx.warnings, child.table, ctx.id, `${at}.`);
    row._synced_at = ctx.syncedAt;
    row._run_id = ctx.runId;
    row._deleted_at = null;
    entry.rows.push(row);
    for (const grandchild of child.children) normalizeChild(ctx, grandchild, values, row, `${at}.`);
  }
}
