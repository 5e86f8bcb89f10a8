import type { Kysely } from 'kysely';

/**
 * A reconcile re-reads every parent's child lists only every `sync.reconcile_children_every_days`:
 * `children_reread_at` is when the stream's parents last had their children queued whole, and
 * `pass_children` whether the pass in flight queues them (so a resumed pass keeps doing so).
 * Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_streams').addColumn('children_reread_at', 'text').execute();
  await db.schema.alterTable('_svcsync_streams').addColumn('pass_children', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_streams').dropColumn('pass_children').execute();
  await db.schema.alterTable('_svcsync_streams').dropColumn('children_reread_at').execute();
}
