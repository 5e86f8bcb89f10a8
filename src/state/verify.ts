import type { AnyDb } from '../loaders/db.js';
import { stateDb, type VerifyRow } from './tables.js';

/**
 * `_svcsync_verify`: one row per verify run, connection, organization and stream, saying
 * whether the API's list and the warehouse's live rows agreed. Written by `svcsync verify`
 * as each stream finishes; read by dashboards and `latestVerifications`.
 */
export type VerifyStatus = 'agree' | 'differ' | 'incomplete' | 'failed';

export async function recordVerification(db: AnyDb, row: VerifyRow): Promise<void> {
  const changes = {
    verified_at: row.verified_at,
    status: row.status,
    api_count: row.api_count,
    warehouse_count: row.warehouse_count,
    missing_count: row.missing_count,
    extra_count: row.extra_count,
    missing_examples: row.missing_examples,
    extra_examples: row.extra_examples,
    requests: row.requests,
    error: row.error,
  };
  await stateDb(db)
    .insertInto('_svcsync_verify')
    .values(row)
    .onConflict((oc) => oc.columns(['run_id', 'connection', 'organization_id', 'stream']).doUpdateSet(changes))
    .execute();
}

/** Every row of one verify run, ordered by connection, organization and stream. */
export async function verificationsOfRun(db: AnyDb, runId: string): Promise<VerifyRow[]> {
  return stateDb(db)
    .selectFrom('_svcsync_verify')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('connection')
    .orderBy('organization_id')
    .orderBy('stream')
    .execute();
}

/** The most recent result of each connection, organization and stream. */
export async function latestVerifications(db: AnyDb, filter: { connection?: string; organizationId?: string } = {}): Promise<VerifyRow[]> {
  let q = stateDb(db).selectFrom('_svcsync_verify').selectAll();
  if (filter.connection) q = q.where('connection', '=', filter.connection);
  if (filter.organizationId) q = q.where('organization_id', '=', filter.organizationId);
  const rows = await q.orderBy('verified_at', 'desc').execute();
  const seen = new Set<string>();
  const out: VerifyRow[] = [];
  for (const r of rows) {
    const key = `${r.connection}\u0000${r.organization_id}\u0000${r.stream}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(r);
  }
  return out.sort(
    (a, b) =>
      a.connection.localeCompare(b.connection) || a.organization_id.localeCompare(b.organization_id) || a.stream.localeCompare(b.stream),
  );
}
