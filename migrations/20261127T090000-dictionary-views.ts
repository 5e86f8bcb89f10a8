import type { Kysely } from 'kysely';

/**
 * The data dictionary describes the views too (`_live` and `report_`): `_svcsync_tables.kind`
 * tells a table (`table`) from a view (`view`). The rows themselves are derived objects, rewritten
 * after the migrations (src/loaders/derived/). Frozen: later changes go in new migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('_svcsync_tables')
    .addColumn('kind', 'text', (c) => c.notNull().defaultTo('table'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('_svcsync_tables').dropColumn('kind').execute();
}
