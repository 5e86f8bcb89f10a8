import { CompiledQuery } from 'kysely';
import { CATALOG, streamTables } from '../../catalog/index.js';
import { qualifiedName } from '../../catalog/types.js';
import type { Warehouse } from '../../loaders/warehouse.js';

/** A stream's rows in one organization: live, and marked deleted (its child tables' included). */
export type RowCount = { rows: number; deleted: number };

const rowCountCache = new WeakMap<Warehouse, { at: number; counts: Map<string, RowCount> }>();

/**
 * Each organization's rows per stream (`organization|books.invoices`), for the status document.
 * Row counts of every organization read every table whole (a GROUP BY per table), so a long-lived
 * process may reuse them for `maxAgeMs`; one organization's counts are read fresh.
 */
export async function cachedRowCounts(
  warehouse: Warehouse,
  now: number,
  organizationId: string | undefined,
  maxAgeMs: number,
): Promise<Map<string, RowCount>> {
  if (organizationId !== undefined || maxAgeMs <= 0) return rowCounts(warehouse, organizationId);
  const hit = rowCountCache.get(warehouse);
  if (hit && now >= hit.at && now - hit.at < maxAgeMs) return hit.counts;
  const counts = await rowCounts(warehouse, undefined);
  rowCountCache.set(warehouse, { at: now, counts });
  return counts;
}

async function rowCounts(warehouse: Warehouse, organizationId: string | undefined): Promise<Map<string, RowCount>> {
  const out = new Map<string, RowCount>();
  const where = organizationId === undefined ? '' : ` WHERE "organization_id" = ${warehouse.sql.param(1)}`;
  for (const stream of CATALOG) {
    // The stream's own table gives its rows; deleted rows are counted in its child tables too (a deleted order's lines).
    for (const [i, { name: table }] of streamTables(stream).entries()) {
      try {
        const result = await warehouse.db.executeQuery<{ organization_id: string; live: number | string; gone: number | string }>(
          CompiledQuery.raw(
            'SELECT "organization_id", SUM(CASE WHEN "_deleted_at" IS NULL THEN 1 ELSE 0 END) AS live, ' +
              `SUM(CASE WHEN "_deleted_at" IS NULL THEN 0 ELSE 1 END) AS gone FROM "${table}"${where} GROUP BY "organization_id"`,
            organizationId === undefined ? [] : [organizationId],
          ),
        );
        for (const r of result.rows) {
          const key = `${r.organization_id}|${qualifiedName(stream)}`;
          const c = out.get(key) ?? { rows: 0, deleted: 0 };
          if (i === 0) c.rows = Number(r.live);
          c.deleted += Number(r.gone);
          out.set(key, c);
        }
      } catch {
        // A table the warehouse does not have yet has no rows to count.
      }
    }
  }
  return out;
}
