import type { Kysely } from 'kysely';

/**
 * The quota day may end at an instant the server tells (`X-Rate-Limit-Reset`) rather than at
 * midnight in the configured zone: `resets_at` keeps it with the day's count, so every process
 * on the warehouse, and `svcsync status`, which sends no request, count in the server's day.
 * Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_usage').addColumn('resets_at', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_usage').dropColumn('resets_at').execute();
}
