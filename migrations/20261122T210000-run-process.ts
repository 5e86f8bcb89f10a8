import type { Kysely } from 'kysely';

/**
 * Which process ran each run (issue 12): `_svcsync_runs.process` is its `host/pid`, the same
 * text as a lease's owner and the User-Agent's comment. With several workers on several
 * machines, a row's `_run_id` now leads to the machine that wrote it. Null for runs recorded
 * before this migration. Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_runs').addColumn('process', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_runs').dropColumn('process').execute();
}
