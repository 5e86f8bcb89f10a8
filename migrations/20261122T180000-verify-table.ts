import type { Kysely } from 'kysely';

/**
 * `_svcsync_verify`: what each `svcsync verify` found per connection, organization and
 * stream (the API's list ids against the warehouse's live rows), for data-health dashboards.
 * Frozen: later changes go in new migrations.
 * Instants are ISO-8601 UTC text in both dialects, as in the other `_svcsync_` tables;
 * example ids are a JSON array of text.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_verify')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('verified_at', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('api_count', 'integer')
    .addColumn('warehouse_count', 'integer')
    .addColumn('missing_count', 'integer')
    .addColumn('extra_count', 'integer')
    .addColumn('missing_examples', 'text')
    .addColumn('extra_examples', 'text')
    .addColumn('requests', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('_svcsync_verify_pk', ['run_id', 'connection', 'organization_id', 'stream'])
    .execute();
  // "The latest result per stream", the question a dashboard asks.
  await db.schema
    .createIndex('_svcsync_verify_latest')
    .on('_svcsync_verify')
    .columns(['connection', 'organization_id', 'stream', 'verified_at'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_verify').ifExists().execute();
}
