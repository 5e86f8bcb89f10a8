import type { Kysely } from 'kysely';

/**
 * `_svcsync_leases`: one row per connection and organization, the organization's current owner
 * (src/loaders/org-lease.ts). `generation` goes up by one on every acquire; each page's
 * transaction checks it still equals its lease's (the fence), so a process that lost the
 * organization cannot commit after another took it over.
 *
 * On Postgres the owner really holds a session advisory lock and the row only carries the
 * generation (and who, for people). On SQLite the row is the lock: `owner` is null when
 * released, and `expires_at` (epoch milliseconds, compared as numbers) is pushed forward by
 * the owner's heartbeat; a lease past it may be taken over. Frozen: later changes go in new
 * migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_leases')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('generation', 'bigint', (c) => c.notNull())
    .addColumn('owner', 'text')
    .addColumn('acquired_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addPrimaryKeyConstraint('_svcsync_leases_pk', ['connection', 'organization_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_leases').ifExists().execute();
}
