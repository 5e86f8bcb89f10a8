import { sql, type Kysely } from 'kysely';

/**
 * A run whose process died before it could record its end (a full disk, a lost warehouse, a
 * SIGKILL) stayed `running` for ever. The next run closes it: status `abandoned`, and
 * `abandoned_at`, the instant that run found it. A partial index keeps the look for such rows
 * cheap however many runs the table holds. Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_runs').addColumn('abandoned_at', 'text').execute();
  await sql`CREATE INDEX _svcsync_runs_running ON _svcsync_runs (started_at) WHERE status = 'running'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX _svcsync_runs_running`.execute(db);
  await db.schema.alterTable('_svcsync_runs').dropColumn('abandoned_at').execute();
}
