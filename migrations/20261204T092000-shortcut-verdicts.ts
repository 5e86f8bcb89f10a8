import type { Kysely } from 'kysely';

/**
 * What svcsync has found of each request-saving reading of the API it checks against the long
 * way (src/extractors/shortcuts.ts), per connection, organization, shortcut and the stream it
 * concerns: `verifying` (a new connection, checking its first uses), `trusted`, or `refuted`
 * (a check disagreed: the shortcut is off for the organization, `evidence` says what differed).
 * `checks` counts the checks that agreed; `since_check` the uses taken since the last check;
 * `healed_at` when the records a refuted shortcut may have missed were queued to be read the long way.
 * Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_shortcuts')
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('shortcut', 'text', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('checks', 'integer', (c) => c.notNull())
    .addColumn('since_check', 'integer', (c) => c.notNull())
    .addColumn('first_checked_at', 'text')
    .addColumn('last_checked_at', 'text')
    .addColumn('refuted_at', 'text')
    .addColumn('evidence', 'text')
    .addColumn('healed_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('_svcsync_shortcuts_pk', ['connection', 'organization_id', 'shortcut', 'stream'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_shortcuts').execute();
}
