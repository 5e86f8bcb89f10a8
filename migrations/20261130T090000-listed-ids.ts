import type { Kysely } from 'kysely';

/**
 * A full read (a full-refresh stream, a reconcile) keeps, per page, the ids of the rows it listed
 * unchanged, as a JSON array: at the pass's end a row neither written by the pass nor listed is
 * gone. One small row per page instead of an UPDATE of every unchanged row, which rewrote each
 * whole row (its `_raw` included) to change two columns. The pass's rows are deleted when it ends.
 * Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_listed')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('pass_started_at', 'text', (c) => c.notNull())
    .addColumn('page', 'integer', (c) => c.notNull())
    .addColumn('ids', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('_svcsync_listed_pk', ['connection', 'organization_id', 'stream', 'pass_started_at', 'page'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_listed').execute();
}
