import type { Kysely } from 'kysely';

/**
 * The per-minute window travels with the organization's lease (issue 12, "Limits across
 * processes"; src/loaders/org-lease.ts):
 *
 * - `window_json`: written by a clean release, in the statement that clears `owner`: the
 *   releasing limiter's window (`WindowState`: when each slot still held frees, on the
 *   limiters' clock, and any hold). Left as it is by an acquire.
 * - `handover`: set by every acquire from the row as it found it: `clean` when the previous
 *   owner had released (owner null), `takeover` when it had not (a lost lock session or an
 *   expired heartbeat); a new row is `first`. A `clean` owner seeds its limiter with
 *   `window_json`; a `takeover` owner waits one `window_ms` before its first request.
 *
 * Both nullable; rows from before it read as `first`. Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_leases').addColumn('window_json', 'text').execute();
  await db.schema.alterTable('_svcsync_leases').addColumn('handover', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_leases').dropColumn('handover').execute();
  await db.schema.alterTable('_svcsync_leases').dropColumn('window_json').execute();
}
