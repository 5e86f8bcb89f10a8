import type { Dialect } from '../loaders/sql-dialect.js';
import type { NormalizeWarning } from '../normalize/normalize.js';

/**
 * Text the client repaired (A38: a NUL character or an unpaired surrogate became U+FFFD) as
 * data-shape warnings of the records that held it, so that they are counted per stream and
 * field like any other (WarningTally): one line per field in the log, the summary and
 * `_svcsync_run_streams.warnings`, however many answers carried such text.
 */

/** What happened to such text, said for the warehouse in use. */
export function repairMessage(dialect: Dialect | undefined): string {
  return dialect === 'postgres'
    ? 'held a NUL character or an unpaired surrogate, which Postgres cannot store: replaced with U+FFFD in the column and _raw'
    : 'held a NUL character or an unpaired surrogate: replaced with U+FFFD in the column and _raw, as on every warehouse';
}

/** `contacts[3].line_items[0].description`: the record's position in the list, and the field within it. */
const LIST_PATH = /^[^.[]*\[(\d+)\](?:\.(.+))?$/;
/** `salesorder.customer_name` or `salesorder[0].customer_name`: the field within the single record. */
const RECORD_PATH = /^[^.[]*(?:\[0\])?(?:\.(.+))?$/;

/** Warnings for a list answer's repaired paths; `records` are the answer's records, in its order. */
export function listRepairs(
  table: string,
  records: ReadonlyArray<{ id: string }>,
  paths: readonly string[],
  message: string,
): NormalizeWarning[] {
  return paths.map((path) => {
    const m = LIST_PATH.exec(path);
    const record = m ? records[Number(m[1])] : undefined;
    return record
      ? { table, id: record.id, field: m?.[2] ?? '(record)', kind: 'text_repaired', message }
      : { table, id: '(the answer, outside its records)', field: path, kind: 'text_repaired', message };
  });
}

/** Warnings for a single-record answer's repaired paths. */
export function recordRepairs(table: string, id: string, paths: readonly string[], message: string): NormalizeWarning[] {
  return paths.map((path) => ({ table, id, field: RECORD_PATH.exec(path)?.[1] ?? path, kind: 'text_repaired', message }));
}
