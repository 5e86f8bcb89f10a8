import type { Kysely } from 'kysely';

/**
 * `_svcsync_connections`: each connection's last authorization result as the daemon's or a
 * worker's runs saw it (accepted, or refused with the error and its hint), so `svcsync status`,
 * every worker's status page and `/healthz` show a connection that cannot log in, whichever
 * process ran into it. One row per connection. `checked_ms` is the same instant as
 * `checked_at` in epoch milliseconds: writers from several processes keep the newest by it.
 * Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_connections')
    .addColumn('connection', 'text', (c) => c.primaryKey())
    .addColumn('result', 'text', (c) => c.notNull())
    .addColumn('checked_at', 'text', (c) => c.notNull())
    .addColumn('checked_ms', 'bigint', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('hint', 'text')
    .addColumn('failing_since', 'text')
    .addColumn('last_ok_at', 'text')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_connections').ifExists().execute();
}
