import type { Kysely } from 'kysely';

/**
 * `_svcsync_history`: which tables keep history for which connection, since when, and since when
 * no longer (the `history` setting). The `{table}_history` tables themselves are derived from the
 * catalog at run start (src/loaders/derived/history-tables.ts); this record is what tells a table
 * newly turned on (its history starts from the current rows) from one already kept.
 * Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_history')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('table_name', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('enabled_at', 'text', (c) => c.notNull())
    .addColumn('disabled_at', 'text')
    .addPrimaryKeyConstraint('_svcsync_history_pk', ['connection', 'table_name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_history').ifExists().execute();
}
