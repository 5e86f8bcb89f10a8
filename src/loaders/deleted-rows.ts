/**
 * Rows marked deleted, by table: a record's own row, its child-table rows (a sales order's line
 * items) and the rows of child streams under it (a contact's persons). Counted as rows, as
 * written rows are, so a run that marks 3 orders deleted with 13 lines between them says 16.
 * A plain object (table name to rows) so that a unit of work can store it with its claim.
 */
export type DeletedRows = Record<string, number>;

export function addDeleted(into: DeletedRows, table: string, rows: number): void {
  if (rows > 0) into[table] = (into[table] ?? 0) + rows;
}

export function mergeDeleted(into: DeletedRows, from: DeletedRows): DeletedRows {
  for (const [table, rows] of Object.entries(from)) addDeleted(into, table, rows);
  return into;
}

export function totalDeleted(rows: DeletedRows): number {
  let n = 0;
  for (const v of Object.values(rows)) n += v;
  return n;
}
