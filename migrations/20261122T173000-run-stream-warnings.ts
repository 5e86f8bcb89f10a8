import type { Kysely } from 'kysely';

/**
 * Data-shape warnings of a stream's run, counted per table, field and kind (a JSON array of
 * {table, field, kind, count, example, message}), and the rows it wrote and marked deleted.
 * Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_run_streams').addColumn('warnings', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_run_streams').dropColumn('warnings').execute();
}
