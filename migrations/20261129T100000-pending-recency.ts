import type { Kysely } from 'kysely';

/**
 * Queued single-record reads and child lists are taken newest record first: `recency` is the
 * record's change time (or date) as ISO-8601 UTC text, so text order is time order in both
 * dialects. Null for a stream with neither, for an item set aside (it goes behind the others),
 * and for rows queued before this column existed: those are taken after the dated ones, in the
 * order they were queued, since nothing says how recent their records are.
 * Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_pending').addColumn('recency', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_pending').dropColumn('recency').execute();
}
