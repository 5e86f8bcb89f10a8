/**
 * The comparison behind `svcsync verify`, kept pure: the ids an API list returned against
 * the ids of the warehouse's live rows. No I/O; test/extractors/verify-compare.test.ts
 * drives it from a table.
 */

export interface IdComparison {
  status: 'agree' | 'differ';
  /** Distinct ids the API listed. */
  apiCount: number;
  /** Distinct ids of live rows (`_deleted_at IS NULL`). */
  warehouseCount: number;
  /** Ids the API lists and the warehouse has no live row for, sorted. */
  missing: string[];
  /** Live rows whose id the API no longer lists, sorted. */
  extra: string[];
}

/** Code-unit order: deterministic, and the same on every platform and locale. */
function byText(a: string, b: string): number {
  if (a < b) return -1;
  if (a > b) return 1;
  return 0;
}

/**
 * Ids are compared as the exact text the API sent (`"4600000000123456789"` and
 * `"4600000000123456788"` differ; `"0012"` and `"12"` differ), never as numbers.
 * An id listed twice (a list that shifted while it was paged) counts once.
 */
export function compareIds(apiIds: Iterable<string>, warehouseIds: Iterable<string>): IdComparison {
  const api = apiIds instanceof Set ? (apiIds as Set<string>) : new Set(apiIds);
  const warehouse = warehouseIds instanceof Set ? (warehouseIds as Set<string>) : new Set(warehouseIds);
  const missing: string[] = [];
  const extra: string[] = [];
  for (const id of api) if (!warehouse.has(id)) missing.push(id);
  for (const id of warehouse) if (!api.has(id)) extra.push(id);
  missing.sort(byText);
  extra.sort(byText);
  return {
    status: missing.length === 0 && extra.length === 0 ? 'agree' : 'differ',
    apiCount: api.size,
    warehouseCount: warehouse.size,
    missing,
    extra,
  };
}
