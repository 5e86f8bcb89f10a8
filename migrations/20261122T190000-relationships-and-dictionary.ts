import type { Kysely } from 'kysely';

/**
 * The data dictionary's tables. Their rows, the Postgres comments and the child tables' foreign
 * keys are derived from the catalog by src/loaders/derived/ after the migrations.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('_svcsync_tables')
    .ifNotExists()
    .addColumn('table_name', 'text', (c) => c.notNull().primaryKey())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('parent_table', 'text')
    .addColumn('description', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('_svcsync_columns')
    .ifNotExists()
    .addColumn('table_name', 'text', (c) => c.notNull())
    .addColumn('column_name', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('catalog_type', 'text', (c) => c.notNull())
    .addColumn('nullable', 'integer', (c) => c.notNull())
    .addColumn('api_field', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('references_table', 'text')
    .addColumn('references_column', 'text')
    .addColumn('relationship', 'text')
    .addPrimaryKeyConstraint('_svcsync_columns_pk', ['table_name', 'column_name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('_svcsync_columns').ifExists().execute();
  await db.schema.dropTable('_svcsync_tables').ifExists().execute();
}
