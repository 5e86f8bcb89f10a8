import type { Kysely } from 'kysely';

/**
 * `_svcsync_derived`: one row recording the derived objects in place (the views, the dictionary
 * rows, the Postgres comments and foreign keys; src/loaders/derived/): the revision of the code
 * that made them, a digest of everything made, the views created (a JSON array of names, in
 * creation order, so they can be dropped dependents first), when, and by which svcsync version.
 * `migrateToLatest` rebuilds them when its revision or digest differs, and never when the
 * recorded revision is newer. Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_derived')
    .addColumn('id', 'integer', (c) => c.notNull().primaryKey())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('views', 'text', (c) => c.notNull())
    .addColumn('applied_at', 'text', (c) => c.notNull())
    .addColumn('svcsync_version', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_derived').ifExists().execute();
}
