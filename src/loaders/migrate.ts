import { Migrator, type MigrationResultSet } from 'kysely';
import { MIGRATIONS } from '../../migrations/index.js';
import { describeError, FatalError } from '../core/errors.js';
import type { Warehouse } from './warehouse.js';

export interface MigrationReport {
  applied: string[];
  pending: string[];
}

async function migrator(warehouse: Warehouse): Promise<Migrator> {
  // Kysely looks for its bookkeeping tables in every schema; two warehouses in one Postgres
  // database (different search_path) would see each other's. Pin them to ours.
  const schema = await warehouse.sql.migrationSchema(warehouse.db);
  return new Migrator({
    db: warehouse.db,
    provider: { getMigrations: () => Promise.resolve(MIGRATIONS) },
    migrationTableName: '_svcsync_migrations',
    migrationLockTableName: '_svcsync_migrations_lock',
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
}

/** Applies every pending migration; safe to call before every sync. */
export async function migrateToLatest(warehouse: Warehouse): Promise<MigrationReport> {
  const m = await migrator(warehouse);
  const result: MigrationResultSet = await m.migrateToLatest();
  const applied = (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  if (result.error) {
    const failed = (result.results ?? []).find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new FatalError(`Migration ${failed} failed on ${warehouse.displayUrl}: ${describeError(result.error)}`, {
      hint: 'Nothing after it was applied. Fix the cause (permissions, disk space) and run `svcsync migrate` again.',
      cause: result.error,
    });
  }
  const all = await m.getMigrations();
  return { applied, pending: all.filter((x) => !x.executedAt).map((x) => x.name) };
}

export async function migrationStatus(warehouse: Warehouse): Promise<Array<{ name: string; executedAt: Date | undefined }>> {
  const all = await (await migrator(warehouse)).getMigrations();
  return all.map((x) => ({ name: x.name, executedAt: x.executedAt }));
}
