import type { Kysely } from 'kysely';

/**
 * Units of warehouse work that have committed, by the id each unit carries: a page, a pass's
 * end, a single record, a parent's child list, a daily-usage reservation. A unit retried after
 * its COMMIT's reply was lost (the connection dropped after the server committed) finds its id
 * here and changes nothing the second time; `result` holds what it reported the first time.
 * Rows are pruned once no retry can still be under way. Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_applied')
    .addColumn('unit', 'text', (c) => c.primaryKey())
    .addColumn('applied_at', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .execute();
  await db.schema.createIndex('_svcsync_applied_at').on('_svcsync_applied').column('applied_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_applied').execute();
}
