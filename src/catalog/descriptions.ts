import { CONTEXT, FIELDS, NESTED, NESTED_FIELDS } from './streams/field-descriptions.js';

/**
 * The description of a field's column where its catalog entry gives none: what the spec says the
 * field is, in the table's context (src/catalog/streams/field-descriptions.ts). Looked up as
 * `{table}.{column}` (without the family), then `{array}.{column}` for a child table of that array,
 * then the column alone; a flattened `{object}__{field}` column is described from its field and
 * its object. Undefined when nothing describes it.
 */
export function fieldDescription(table: string, column: string): string | undefined {
  const text = lookUp(table, column);
  if (text === undefined) return undefined;
  // "{family}_" names the table of the column's own family; a table's own key joins nothing.
  const family = table.slice(0, table.indexOf('_') + 1);
  return text.replaceAll('{family}_', family).replace(`; joins ${table}.${column}.`, ', unique in the organization.');
}

function lookUp(table: string, column: string): string | undefined {
  const local = table.replace(/^[a-z]+_/, '');
  const parts = local.split('__');
  // A child table's own context, then its array's (`line_items`), never its parent's: a line's quantity is not the order's.
  const keys = [`${local}.${column}`, ...parts.slice(1).map((_, i) => `${parts.slice(i + 1).join('__')}.${column}`)];
  for (const key of keys) {
    const found = CONTEXT[key];
    if (found !== undefined) return found;
  }
  const own = FIELDS[column];
  if (own !== undefined) return own;
  const split = column.indexOf('__');
  if (split < 0) return undefined;
  const object = column.slice(0, split);
  const field = column.slice(split + 2);
  const whose = NESTED[object];
  if (whose === undefined) return undefined;
  const part = NESTED_FIELDS[field];
  if (part !== undefined) return `${part} ${whose}.`;
  // A lone nested object's fields mean what they mean in an array of its kind (`line_item` as `line_items`).
  const inner = CONTEXT[`${object}s.${field}`] ?? FIELDS[field] ?? lookUp(table, field);
  if (inner === undefined) return undefined;
  const lower = /^(The|What|Where|Whether|How|That|A|An)\b/.test(inner) ? `${inner.charAt(0).toLowerCase()}${inner.slice(1)}` : inner;
  return `${whose.charAt(0).toUpperCase()}${whose.slice(1)}: ${lower}`;
}
