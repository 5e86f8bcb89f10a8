import { CompiledQuery } from 'kysely';
import type { SqlDialect } from '../loaders/sql-dialect.js';
import type { ListedPass } from '../loaders/table-writer.js';
import type { StreamKey } from './stream-state.js';

/**
 * The ids a full read listed unchanged (`_svcsync_listed`, one row per page, the ids as a JSON
 * array). An unchanged row is not rewritten, so at the pass's end its `_synced_at` alone would
 * take it for gone: `TableWriter.markVanished` spares the ids kept here, then they are forgotten.
 * The pass's key (`ListedPass`) is the writer's, which reads these rows in that statement.
 */
export class ListedIds {
  /** `sql` is the warehouse's dialect object (`warehouse.sql`). */
  constructor(readonly sql: SqlDialect) {}

  /** Keeps the ids one page of a full read listed unchanged. The rows themselves are not touched. */
  listedQuery(pass: ListedPass, page: number, ids: readonly string[]): CompiledQuery {
    const ph = this.sql.param;
    return CompiledQuery.raw(
      `INSERT INTO "_svcsync_listed" ("connection", "organization_id", "stream", "pass_started_at", "page", "ids") ` +
        `VALUES (${ph(1)}, ${ph(2)}, ${ph(3)}, ${ph(4)}, ${ph(5)}, ${ph(6)}) ` +
        `ON CONFLICT ("connection", "organization_id", "stream", "pass_started_at", "page") DO UPDATE SET "ids" = excluded."ids"`,
      [pass.connection, pass.organizationId, pass.stream, pass.startedAt, page, JSON.stringify(ids)],
    );
  }

  /** Forgets what every pass of a stream listed (at a pass's end, once vanished rows are marked). */
  forgetListedQuery(pass: Omit<ListedPass, 'startedAt'>): CompiledQuery {
    const ph = this.sql.param;
    return CompiledQuery.raw(
      `DELETE FROM "_svcsync_listed" WHERE "connection" = ${ph(1)} AND "organization_id" = ${ph(2)} AND "stream" = ${ph(3)}`,
      [pass.connection, pass.organizationId, pass.stream],
    );
  }
}

/** The pass of a full read that started at `startedAt`, as `_svcsync_listed` keys it. */
export function listedPass(key: StreamKey, startedAt: string): ListedPass {
  return { connection: key.connection, organizationId: key.organizationId, stream: key.stream, startedAt };
}
