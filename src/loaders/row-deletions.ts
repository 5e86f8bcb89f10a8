import { childStreamsOf } from '../catalog/index.js';
import { tableName, type StreamSpec } from '../catalog/types.js';
import type { AnyDb } from './db.js';
import { addDeleted, mergeDeleted, type DeletedRows } from './deleted-rows.js';
import { recordDeletions, type HistoryLoader } from './history-sink.js';
import type { ListedPass, TableWriter } from './table-writer.js';

/** What marking rows deleted writes through: the writer of the warehouse's dialect, and the history it keeps. */
export interface RowDeleter extends HistoryLoader {
  writer: TableWriter;
}

/**
 * After a full read: rows of this organization not written since the pass began are gone.
 * Their child-table rows and the rows of child streams under them go with them. Returns the
 * rows marked, by table.
 */
export async function markVanishedWithChildren(
  loader: RowDeleter,
  db: AnyDb,
  stream: StreamSpec,
  organizationId: string,
  passStartedAt: string,
  now: string,
  listed?: ListedPass,
): Promise<DeletedRows> {
  const spare = listed ? { pass: listed, idColumn: stream.primaryKey } : undefined;
  const table = tableName(stream);
  const deleted: DeletedRows = {};
  addDeleted(deleted, table, await loader.writer.markVanished(db, table, organizationId, passStartedAt, now, undefined, spare));
  return deleted[table] ? mergeDeleted(deleted, await dependantsDeleted(loader, db, stream, organizationId, now)) : deleted;
}

/** One record the API says no longer exists, marked deleted with everything under it. Returns the rows marked, by table. */
export async function markDeletedWithChildren(
  loader: RowDeleter,
  db: AnyDb,
  stream: StreamSpec,
  organizationId: string,
  id: string,
  now: string,
): Promise<DeletedRows> {
  const table = tableName(stream);
  const deleted: DeletedRows = {};
  addDeleted(deleted, table, await loader.writer.markDeleted(db, table, stream.primaryKey, organizationId, id, now));
  return mergeDeleted(deleted, await dependantsDeleted(loader, db, stream, organizationId, now));
}

/**
 * The dependants of the rows of `stream` marked deleted at `deletedAt` are marked too, and the
 * history records the deletions. Returns the dependants marked, by table.
 */
export async function dependantsDeleted(
  loader: RowDeleter,
  db: AnyDb,
  stream: StreamSpec,
  organizationId: string,
  deletedAt: string,
): Promise<DeletedRows> {
  const deleted = await cascade(loader.writer, db, stream, organizationId, deletedAt);
  await recordDeletions(loader, db, stream, organizationId, deletedAt);
  return deleted;
}

/** Marks the dependants of rows of `stream` that were marked deleted at `at`; returns the rows marked, by table. */
async function cascade(writer: TableWriter, db: AnyDb, stream: StreamSpec, organizationId: string, at: string): Promise<DeletedRows> {
  const table = tableName(stream);
  const deleted: DeletedRows = {};
  for (const childTable of childTableNames(table, stream.children)) {
    const n = await writer.cascadeDeleted(db, childTable, table, stream.primaryKey, stream.primaryKey, organizationId, at);
    addDeleted(deleted, childTable, n);
  }
  for (const child of childStreamsOf(stream)) {
    const childTable = tableName(child);
    const n = await writer.cascadeDeleted(db, childTable, table, child.parent!.key, stream.primaryKey, organizationId, at);
    addDeleted(deleted, childTable, n);
    if (n > 0) mergeDeleted(deleted, await cascade(writer, db, child, organizationId, at));
  }
  return deleted;
}

function childTableNames(table: string, children: StreamSpec['children']): string[] {
  const out: string[] = [];
  for (const c of children) {
    const name = `${table}__${c.field}`;
    out.push(name, ...childTableNames(name, c.children ?? []));
  }
  return out;
}
