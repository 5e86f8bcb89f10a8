import type { Kysely } from 'kysely';

/**
 * A stream's run counts the rows it marked deleted (`deleted`), child-table rows and the rows of
 * child streams under a deleted record included, and how many per table (`deleted_tables`, a
 * JSON object of table name to rows). Rows of earlier runs keep null. Frozen: later changes go
 * in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_run_streams').addColumn('deleted', 'integer').execute();
  await db.schema.alterTable('_svcsync_run_streams').addColumn('deleted_tables', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_run_streams').dropColumn('deleted_tables').execute();
  await db.schema.alterTable('_svcsync_run_streams').dropColumn('deleted').execute();
}
