import type { Kysely } from 'kysely';

/**
 * `_svcsync_drift`: fields the API sent that the catalog does not know (schema drift), per
 * connection, organization, stream and field path. No values: only where the field sits,
 * the JSON type of a value seen, when it was first and last seen, and in how many records.
 * Frozen: later changes go in new migrations.
 * Keyed per organization: organizations may run different editions or API versions, and the
 * metric and `svcsync status` report per organization. Instants are ISO-8601 UTC text in both
 * dialects, as in the other `_svcsync_` tables.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_drift')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('field', 'text', (c) => c.notNull())
    .addColumn('sample_type', 'text', (c) => c.notNull())
    .addColumn('first_seen', 'text', (c) => c.notNull())
    .addColumn('last_seen', 'text', (c) => c.notNull())
    .addColumn('occurrences', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_run_id', 'text')
    .addPrimaryKeyConstraint('_svcsync_drift_pk', ['connection', 'organization_id', 'stream', 'field'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_drift').ifExists().execute();
}
