import type { AnyDb } from '../loaders/db.js';
import { stateDb, type ShortcutRow } from './tables.js';

/**
 * `_svcsync_shortcuts`: per connection, organization, shortcut and stream, whether svcsync's
 * request-saving reading of the API has held where it was checked (src/extractors/shortcuts.ts).
 * Written with absolute values, so a statement sent twice leaves the same row.
 */
export async function loadVerdicts(db: AnyDb, connection: string, organizationId?: string): Promise<ShortcutRow[]> {
  let q = stateDb(db).selectFrom('_svcsync_shortcuts').selectAll().where('connection', '=', connection);
  if (organizationId !== undefined) q = q.where('organization_id', '=', organizationId);
  const rows = await q.orderBy('organization_id').orderBy('shortcut').orderBy('stream').execute();
  return rows.map((r) => ({ ...r, checks: Number(r.checks), since_check: Number(r.since_check) }));
}

/** Every verdict of the warehouse (status, plan), numbers as numbers. */
export async function allVerdicts(db: AnyDb): Promise<ShortcutRow[]> {
  const rows = await stateDb(db).selectFrom('_svcsync_shortcuts').selectAll().execute();
  return rows.map((r) => ({ ...r, checks: Number(r.checks), since_check: Number(r.since_check) }));
}

export async function saveVerdict(db: AnyDb, row: ShortcutRow): Promise<void> {
  const { connection: _c, organization_id: _o, shortcut: _s, stream: _t, ...changes } = row;
  await stateDb(db)
    .insertInto('_svcsync_shortcuts')
    .values(row)
    .onConflict((oc) => oc.columns(['connection', 'organization_id', 'shortcut', 'stream']).doUpdateSet(changes))
    .execute();
}
