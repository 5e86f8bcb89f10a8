import type { Kysely } from 'kysely';

/**
 * svcsync's own bookkeeping, beside the data it describes so that rows and cursors commit
 * in one transaction. Frozen: later changes go in new migrations.
 * Instants are ISO-8601 UTC text in both dialects; flags are 0/1 integers.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_streams')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('cursor', 'text')
    .addColumn('pass_kind', 'text')
    .addColumn('pass_started_at', 'text')
    .addColumn('pass_next_page', 'integer')
    .addColumn('pass_floor', 'text')
    .addColumn('pass_max_changed', 'text')
    .addColumn('pass_unsorted', 'integer')
    .addColumn('pass_records', 'integer')
    .addColumn('last_run_id', 'text')
    .addColumn('last_started_at', 'text')
    .addColumn('last_finished_at', 'text')
    .addColumn('last_success_at', 'text')
    .addColumn('last_status', 'text')
    .addColumn('last_error', 'text')
    .addColumn('last_pages', 'integer')
    .addColumn('last_requests', 'integer')
    .addColumn('last_records', 'integer')
    .addColumn('updated_at', 'text')
    .addPrimaryKeyConstraint('_svcsync_streams_pk', ['connection', 'organization_id', 'stream'])
    .execute();

  await db.schema
    .createTable('_svcsync_pending')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('enqueued_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('_svcsync_pending_pk', ['connection', 'organization_id', 'stream', 'kind', 'item_id'])
    .execute();

  await db.schema
    .createTable('_svcsync_runs')
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('command', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('requests', 'integer')
    .addColumn('records', 'integer')
    .addColumn('errors', 'text')
    .addColumn('summary', 'text')
    .execute();

  await db.schema
    .createTable('_svcsync_run_streams')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('pages', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('records', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('requests', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('_svcsync_run_streams_pk', ['run_id', 'connection', 'organization_id', 'stream'])
    .execute();

  await db.schema
    .createTable('_svcsync_usage')
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('blocked_until', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('_svcsync_usage_pk', ['organization_id', 'day'])
    .execute();

  await db.schema
    .createTable('_svcsync_organizations')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('family', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('is_active', 'integer')
    .addColumn('time_zone', 'text')
    .addColumn('discovered_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('_svcsync_organizations_pk', ['connection', 'family', 'organization_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of [
    '_svcsync_organizations',
    '_svcsync_usage',
    '_svcsync_run_streams',
    '_svcsync_runs',
    '_svcsync_pending',
    '_svcsync_streams',
  ]) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
