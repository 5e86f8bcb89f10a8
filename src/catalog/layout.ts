import {
  discountColumns,
  qualifiedName,
  streamSources,
  tableName,
  type ChildSpec,
  type ColumnSpec,
  type ColumnType,
  type Source,
  type StreamSpec,
} from './types.js';
import { citeSources } from './api-sections.js';
import { fieldDescription } from './descriptions.js';

/**
 * The one place that decides which warehouse columns a catalog entry produces and in
 * what order. Table definitions (DDL, dictionary) and the normalizer's plans both read
 * it, so a row always has exactly the columns its table has.
 */

export type ColumnRole = 'organization' | 'parent-key' | 'key' | 'position' | 'field' | 'amount' | 'percentage' | 'system';

export interface LaidColumn {
  name: string;
  type: ColumnType;
  nullable: boolean;
  role: ColumnRole;
  /** Where the value comes from, for the dictionary: a field path, or '(svcsync)'. */
  source: string;
  description?: string;
  /** The catalog column behind a field, key, amount or percentage column. */
  spec?: ColumnSpec;
  /** Where the value sits in the record or element (field and key columns). */
  path?: readonly string[];
  /** Responses that write this column (on child tables: the child's sources). */
  sources: readonly Source[];
}

export interface ChildLayout {
  spec: ChildSpec;
  table: string;
  parentTable: string;
  /** The array's place in the record, for the dictionary: 'addons[].price_brackets'. */
  fieldPath: string;
  sources: readonly Source[];
  /** organization_id and the parent row's key columns, in the parent's key order. */
  parentKeyColumns: string[];
  /** The parent's primary-key columns that parentKeyColumns copy, position for position. */
  parentKeySources: string[];
  keyColumn: string | undefined;
  primaryKey: string[];
  columns: LaidColumn[];
  children: ChildLayout[];
  description: string;
}

export interface StreamLayout {
  stream: StreamSpec;
  table: string;
  sources: readonly Source[];
  primaryKey: string[];
  columns: LaidColumn[];
  children: ChildLayout[];
  description: string;
}

export const ORGANIZATION_ID = 'organization_id';
export const POSITION = '_position';
export const SYSTEM = '(svcsync)';

/** Row lineage: a join to `_svcsync_runs` says which command wrote a row, when, and how it ended. */
const RUN_ID_DESCRIPTION = 'The run that last wrote the row (joins _svcsync_runs.run_id).';

const layouts = new WeakMap<StreamSpec, StreamLayout>();

/** The stream's table layout; computed once per catalog entry. */
export function streamLayout(stream: StreamSpec): StreamLayout {
  let layout = layouts.get(stream);
  if (!layout) {
    layout = buildStreamLayout(stream);
    layouts.set(stream, layout);
  }
  return layout;
}

/** Every child table of a stream, parents before their children. */
export function allChildLayouts(layout: { children: ChildLayout[] }): ChildLayout[] {
  const out: ChildLayout[] = [];
  const walk = (children: ChildLayout[]): void => {
    for (const child of children) {
      out.push(child);
      walk(child.children);
    }
  };
  walk(layout.children);
  return out;
}

function buildStreamLayout(stream: StreamSpec): StreamLayout {
  const table = tableName(stream);
  const sources = streamSources(stream);
  const redacted = new Set(stream.redact ?? []);
  const pkSpec = stream.columns.find((c) => c.name === stream.primaryKey);
  const keyedByOrganization = stream.primaryKey === ORGANIZATION_ID;
  const columns: LaidColumn[] = [];

  columns.push(
    keyedByOrganization
      ? fieldColumn(table, pkSpec ?? { name: ORGANIZATION_ID, type: 'id' }, 'key', sources, '', false)
      : {
          name: ORGANIZATION_ID,
          type: 'id',
          nullable: false,
          role: 'organization',
          source: SYSTEM,
          description: `The organization the record was read from; joins ${stream.family}_organizations.organization_id.`,
          sources,
        },
  );
  for (const spec of stream.columns) {
    if (keyedByOrganization && spec === pkSpec) continue;
    if (redacted.has(spec.name)) continue;
    const isKey = spec.name === stream.primaryKey;
    const own = isKey ? sources : (spec.sources ?? sources);
    columns.push(fieldColumn(table, spec, isKey ? 'key' : 'field', own, '', !isKey));
    if (spec.amountOrPercentage) columns.push(...discountParts(spec, own, ''));
  }
  columns.push(system('_raw', 'json', ['list'], true, 'The list record exactly as received (secrets redacted).'));
  if (stream.detail) {
    columns.push(system('_raw_detail', 'json', ['detail'], true, 'The single-record response as received.'));
  }
  columns.push(system('_hash', 'text', ['list'], true, 'SHA-1 of _raw; a changed hash means a changed record.'));
  columns.push(system('_synced_at', 'timestamp', sources, false, 'When svcsync last wrote the row.'));
  columns.push(system('_run_id', 'text', sources, true, RUN_ID_DESCRIPTION));
  columns.push(system('_deleted_at', 'timestamp', sources, true, 'When svcsync saw the record gone; rows are never removed.'));

  const primaryKey = keyedByOrganization ? [ORGANIZATION_ID] : [ORGANIZATION_ID, stream.primaryKey];
  const children = stream.children.map((child) =>
    buildChildLayout(child, table, '', primaryKey, keyColumnSource(stream.primaryKey), child.sources ?? sources),
  );
  return {
    stream,
    table,
    sources,
    primaryKey,
    columns,
    children,
    description: `${stream.description} Stream ${qualifiedName(stream)}; ${citeSources(stream.spec)}.`,
  };
}

function keyColumnSource(primaryKey: string): (column: string) => string {
  return (column) => (column === primaryKey ? column : SYSTEM);
}

function buildChildLayout(
  child: ChildSpec,
  parentTable: string,
  parentFieldPath: string,
  parentPrimaryKey: readonly string[],
  parentKeySource: (column: string) => string,
  sources: readonly Source[],
): ChildLayout {
  const table = `${parentTable}__${child.field}`;
  const fieldPath = `${parentFieldPath}${child.field}`;
  const parentField = parentFieldPath === '' ? '' : lastField(parentFieldPath);
  // A parent keyed by position hands its _position down under a name that says whose it is.
  const parentKeyColumns = parentPrimaryKey.map((c) => (c === POSITION ? `${parentField}__position` : c));
  const taken = new Set(parentKeyColumns);
  const describeParentKey = (name: string): string => {
    if (name === ORGANIZATION_ID)
      return `The organization the record was read from; joins ${parentTable.split('_')[0]}_organizations.organization_id.`;
    if (name.endsWith('__position')) return `Position of the parent element in ${parentField}[] (0-based).`;
    return `The row of ${parentTable} this element belongs to, by its ${name}.`;
  };
  const columns: LaidColumn[] = parentKeyColumns.map((name, i) => ({
    name,
    type: name.endsWith('__position') ? ('integer' as const) : ('id' as const),
    nullable: false,
    role: name === ORGANIZATION_ID ? ('organization' as const) : ('parent-key' as const),
    source: name === ORGANIZATION_ID ? SYSTEM : parentKeySource(parentPrimaryKey[i] ?? name),
    description: describeParentKey(name),
    sources,
  }));

  const keySpec = child.key === undefined ? undefined : child.columns.find((c) => c.name === child.key);
  const elementPath = `${fieldPath}[].`;
  if (child.key !== undefined) {
    columns.push(fieldColumn(table, keySpec ?? { name: child.key, type: 'id' }, 'key', sources, elementPath, false));
  }
  columns.push({
    name: POSITION,
    type: 'integer',
    nullable: false,
    role: 'position',
    source: SYSTEM,
    description: `Position of the element in ${child.field}[] (0-based).`,
    sources,
  });
  for (const spec of child.columns) {
    if (spec === keySpec) continue;
    // The parent's key is the truth about which parent this is; the element's copy of it is dropped.
    if (taken.has(spec.name)) continue;
    columns.push(fieldColumn(table, spec, 'field', sources, elementPath, true));
    if (spec.amountOrPercentage) columns.push(...discountParts(spec, sources, elementPath));
  }
  columns.push(system('_synced_at', 'timestamp', sources, false, 'When svcsync last wrote the row.'));
  columns.push(system('_run_id', 'text', sources, true, RUN_ID_DESCRIPTION));
  columns.push(system('_deleted_at', 'timestamp', sources, true, 'When svcsync saw the element gone.'));

  const primaryKey = [...parentKeyColumns, child.key ?? POSITION];
  const childKeySource = (column: string): string => {
    if (column === POSITION) return SYSTEM;
    if (column === child.key) return `${elementPath}${child.key}`;
    const i = parentKeyColumns.indexOf(column);
    return i >= 0 ? parentKeySource(parentPrimaryKey[i] ?? column) : SYSTEM;
  };
  const children = (child.children ?? []).map((grandchild) =>
    buildChildLayout(grandchild, table, `${fieldPath}[].`, primaryKey, childKeySource, sources),
  );
  return {
    spec: child,
    table,
    parentTable,
    fieldPath,
    sources,
    parentKeyColumns,
    parentKeySources: [...parentPrimaryKey],
    keyColumn: child.key,
    primaryKey,
    columns,
    children,
    description: `${child.description ?? `Elements of ${child.field}[].`} Keyed by ${
      child.key ?? 'position'
    } within the parent row of ${parentTable}${child.spec ? `; ${citeSources(child.spec)}` : ''}.`,
  };
}

function lastField(fieldPath: string): string {
  const parts = fieldPath.replace(/\[\]\.$/, '').split('[].');
  return parts[parts.length - 1] ?? fieldPath;
}

function fieldColumn(
  table: string,
  spec: ColumnSpec,
  role: 'field' | 'key',
  sources: readonly Source[],
  prefix: string,
  nullable: boolean,
): LaidColumn {
  const path = spec.path ?? [spec.name];
  const column: LaidColumn = {
    name: spec.name,
    type: spec.type,
    nullable,
    role,
    source: `${prefix}${path.join('.')}`,
    spec,
    path,
    sources,
  };
  // The entry's own words, else what the spec says the field is in this table.
  const description = spec.description ?? fieldDescription(table, spec.name);
  if (description !== undefined) column.description = description;
  return column;
}

function discountParts(spec: ColumnSpec, sources: readonly Source[], prefix: string): LaidColumn[] {
  const names = discountColumns(spec);
  const path = spec.path ?? [spec.name];
  const source = `${prefix}${path.join('.')}`;
  return [
    {
      name: names.amount,
      type: 'number',
      nullable: true,
      role: 'amount',
      source,
      spec,
      path,
      sources,
      description:
        `The ${spec.name} read as an amount in the record\u2019s currency, when the API sent an amount; ` +
        'null when it sent a percentage.',
    },
    {
      name: names.percentage,
      type: 'number',
      nullable: true,
      role: 'percentage',
      source,
      spec,
      path,
      sources,
      description: `The ${spec.name} read as a percentage when the API sent one ("12.5%" is 12.5); null when it sent an amount.`,
    },
  ];
}

function system(name: string, type: ColumnType, sources: readonly Source[], nullable: boolean, description: string): LaidColumn {
  return { name, type, nullable, role: 'system', source: SYSTEM, description, sources };
}
