import type { Family } from './families.js';
import { BILLING_STREAMS } from './streams/billing.js';
import { BOOKS_STREAMS } from './streams/books.js';
import { INVENTORY_STREAMS } from './streams/inventory.js';
import { INVOICE_STREAMS } from './streams/invoice.js';
import { qualifiedName, type StreamSpec } from './types.js';

export * from './types.js';
export { validateCatalog } from './validate.js';
export {
  tableDefinitions,
  sqlType,
  streamTables,
  type ColumnDef,
  type Dialect,
  type KeyedTable,
  type SystemColumnType,
  type TableDef,
} from './tables.js';
export { renderDictionary, renderErd, renderWarehouseMarkdown } from './dictionary.js';
export {
  columnReferences,
  foreignKeyName,
  relationships,
  type ColumnReference,
  type Relationship,
  type RelationshipKind,
} from './relationships.js';

/** Every stream svcsync syncs, parents before their children within a family. */
export const CATALOG: readonly StreamSpec[] = [...BOOKS_STREAMS, ...INVENTORY_STREAMS, ...INVOICE_STREAMS, ...BILLING_STREAMS];

const BY_NAME = new Map(CATALOG.map((s) => [qualifiedName(s), s]));

/** The stream named `family.name` ("inventory.sales_orders"). */
export function findStream(qualified: string): StreamSpec | undefined {
  return BY_NAME.get(qualified);
}

const NAMES = new Set(CATALOG.flatMap((s) => [qualifiedName(s), s.name]));

/** Whether a user may name a stream so: `family.stream`, or the bare stream name (as `--stream` and `streams:` take them). */
export function isStreamName(name: string): boolean {
  return NAMES.has(name);
}

export function streamsOf(family: Family, catalog: readonly StreamSpec[] = CATALOG): StreamSpec[] {
  return catalog.filter((s) => s.family === family);
}

/** Streams read per record of `stream` (refunds per vendor credit, tasks per project). */
export function childStreamsOf(stream: Pick<StreamSpec, 'family' | 'name'>, catalog: readonly StreamSpec[] = CATALOG): StreamSpec[] {
  return catalog.filter((s) => s.family === stream.family && s.parent?.stream === stream.name);
}

/**
 * Whether a stream's single record embeds every child list it has (`detail.embeddedChildren`):
 * re-reading the record re-reads them all, in one request where each list costs one (A48).
 */
export function carriesChildren(stream: StreamSpec, catalog: readonly StreamSpec[] = CATALOG): boolean {
  const embedded = new Set((stream.detail?.embeddedChildren ?? []).map((e) => e.stream));
  const children = childStreamsOf(stream, catalog);
  return children.length > 0 && children.every((c) => embedded.has(c.name));
}
