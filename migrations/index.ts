import type { Migration } from 'kysely';
import * as stateTables from './20261122T050000-state-tables.js';
import * as warehouseTables from './20261122T060000-warehouse-tables.js';
import * as runStreamWarnings from './20261122T173000-run-stream-warnings.js';
import * as verifyTable from './20261122T180000-verify-table.js';

/**
 * Every migration, by name. Listed statically (rather than read from the folder) so the
 * same list works from TypeScript under the tests and from the compiled dist/.
 */
export const MIGRATIONS: Record<string, Migration> = {
  '20261122T050000-state-tables': stateTables,
  '20261122T060000-warehouse-tables': warehouseTables,
  '20261122T173000-run-stream-warnings': runStreamWarnings,
  '20261122T180000-verify-table': verifyTable,
};
