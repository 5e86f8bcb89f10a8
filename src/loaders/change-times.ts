import { CompiledQuery } from 'kysely';
import { tableName, type StreamSpec } from '../catalog/types.js';
import { parseInstant } from '../normalize/values.js';
import type { Warehouse } from './warehouse.js';

/**
 * The change times (epoch ms) of one organization's records of a stream since `since`, read from
 * the stream's cursor column (`last_modified_time`, `event_time`, …): what the change model
 * learns from (src/scheduler/timing/change-model.ts). Empty for a stream without a change field,
 * and before the first sync creates its table.
 */
export async function changeTimes(warehouse: Warehouse, stream: StreamSpec, organizationId: string, since: number): Promise<number[]> {
  const column = stream.cursor?.field;
  if (!column || !stream.columns.some((c) => c.name === column)) return [];
  const [p1, p2] = [warehouse.sql.param(1), warehouse.sql.param(2)];
  let rows: Array<{ at: unknown }>;
  try {
    const r = await warehouse.db.executeQuery<{ at: unknown }>(
      CompiledQuery.raw(`SELECT "${column}" AS at FROM "${tableName(stream)}" WHERE "organization_id" = ${p1} AND "${column}" >= ${p2}`, [
        organizationId,
        new Date(since).toISOString(),
      ]),
    );
    rows = r.rows;
  } catch (err) {
    if (isMissingTable(err)) return [];
    throw err;
  }
  const out: number[] = [];
  for (const { at } of rows) {
    let ms: number | null = null;
    if (at instanceof Date) ms = at.getTime();
    else if (typeof at === 'string') ms = parseInstant(at);
    if (ms !== null && Number.isFinite(ms)) out.push(ms);
  }
  return out;
}

/** SQLite's "no such table", Postgres's undefined_table (42P01). */
function isMissingTable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return e?.code === '42P01' || (typeof e?.message === 'string' && e.message.includes('no such table'));
}
