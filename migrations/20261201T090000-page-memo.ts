import type { Kysely } from 'kysely';

/**
 * What each page of a whole read of a list-only stream answered (the SHA-1 of its text) and the
 * ids it held, so that a later read of the same page that answers the same text, and whose rows
 * nothing has written since, is taken as read without parsing or comparing its records
 * (src/state/page-memo.ts). One row per page of each query; a page's row is replaced when the
 * page is read again. Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_pages')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('query', 'text', (c) => c.notNull())
    .addColumn('page', 'integer', (c) => c.notNull())
    .addColumn('body_hash', 'text', (c) => c.notNull())
    .addColumn('ids', 'text', (c) => c.notNull())
    .addColumn('has_more', 'integer', (c) => c.notNull())
    .addColumn('max_changed', 'text')
    .addColumn('synced_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('_svcsync_pages_pk', ['connection', 'organization_id', 'stream', 'query', 'page'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_pages').execute();
}
