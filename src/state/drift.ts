import { sql } from 'kysely';
import type { JsonType } from '../normalize/drift.js';
import type { AnyDb } from '../loaders/db.js';
import { stateDb, type DriftRow } from './tables.js';

/** One field the catalog does not know, as one stream's run saw it. Never a value. */
export interface DriftCount {
  /** `x_new`, `billing_address.x_new`, `line_items[].x_new`: relative to the stream's record. */
  field: string;
  /** The JSON type of the first value seen. */
  type: JsonType;
  /** Records that carried it. */
  occurrences: number;
}

/**
 * `_svcsync_drift`: the fields the API sent that the catalog does not know, per connection,
 * organization, stream and field path, with when they were first and last seen, in how many
 * records, and the JSON type of a value. Never a value. Written at each stream's end from its
 * tally; read by `svcsync status`, `svcsync schema --drift` and the daemon's metrics.
 */
export interface DriftSighting {
  connection: string;
  organizationId: string;
  stream: string;
  runId: string;
  /** When the stream's run ended: first_seen of a new field, last_seen of every field. */
  seenAt: string;
}

/** Upserts each field the stream saw: one statement per field, bound parameters only. */
export async function recordDrift(db: AnyDb, at: DriftSighting, fields: readonly DriftCount[]): Promise<void> {
  for (const f of fields) {
    await stateDb(db)
      .insertInto('_svcsync_drift')
      .values({
        connection: at.connection,
        organization_id: at.organizationId,
        stream: at.stream,
        field: f.field,
        sample_type: f.type,
        first_seen: at.seenAt,
        last_seen: at.seenAt,
        occurrences: f.occurrences,
        last_run_id: at.runId,
      })
      .onConflict((oc) =>
        oc.columns(['connection', 'organization_id', 'stream', 'field']).doUpdateSet({
          last_seen: sql<string>`excluded.last_seen`,
          last_run_id: sql<string>`excluded.last_run_id`,
          occurrences: sql<number>`"_svcsync_drift"."occurrences" + excluded.occurrences`,
          // A null says little about a field's type: keep the type seen before.
          sample_type: sql<string>`CASE WHEN excluded.sample_type = 'null'
            THEN "_svcsync_drift"."sample_type" ELSE excluded.sample_type END`,
        }),
      )
      .execute();
  }
}

/** Every field recorded, ordered by connection, organization, stream and field; occurrences as numbers. */
export async function listDrift(db: AnyDb, connection?: string): Promise<DriftRow[]> {
  let q = stateDb(db).selectFrom('_svcsync_drift').selectAll();
  if (connection) q = q.where('connection', '=', connection);
  const rows = await q.orderBy('connection').orderBy('organization_id').orderBy('stream').orderBy('field').execute();
  return rows.map((r) => ({ ...r, occurrences: Number(r.occurrences) }));
}
