import type { Kysely } from 'kysely';

/**
 * A stream's run counts its records (a list record and its single-record read are one), the
 * rows it changed (`written`: an unchanged row a full read rewrites is not one) and, apart,
 * what it received (`reads`). Rows of earlier runs keep null in both. Frozen: later changes go
 * in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_run_streams').addColumn('reads', 'integer').execute();
  await db.schema.alterTable('_svcsync_run_streams').addColumn('written', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_run_streams').dropColumn('written').execute();
  await db.schema.alterTable('_svcsync_run_streams').dropColumn('reads').execute();
}
