import { sql, type Kysely } from 'kysely';
import type { AnyDb } from '../loaders/db.js';

/** A row of `_svcsync_connections` (migration 20261126T120000-connection-auth). */
export interface ConnectionAuthRow {
  connection: string;
  /** `ok` (the service accepted the connection's token) or `refused`. */
  result: string;
  checked_at: string;
  /** `checked_at` in epoch ms (bigint: a string from Postgres). */
  checked_ms: number | string;
  error: string | null;
  hint: string | null;
  /** When the refusals now in a row began; null while authorized. */
  failing_since: string | null;
  last_ok_at: string | null;
}

type Db = Kysely<{ _svcsync_connections: ConnectionAuthRow }>;
const view = (db: AnyDb): Db => db as unknown as Db;

/** One connection's authorization as a run saw it. */
export interface AuthorizationSeen {
  connection: string;
  result: 'ok' | 'refused';
  /** Epoch ms. */
  at: number;
  error: string | null;
  hint: string | null;
}

/**
 * Records a connection's latest authorization result. Processes write side by side (the daemon
 * and `svcsync status`, or several workers): an older result never replaces a newer one.
 */
export async function recordAuthorization(db: AnyDb, seen: AuthorizationSeen): Promise<void> {
  const at = new Date(seen.at).toISOString();
  const refused = seen.result === 'refused';
  await view(db)
    .insertInto('_svcsync_connections')
    .values({
      connection: seen.connection,
      result: seen.result,
      checked_at: at,
      checked_ms: seen.at,
      error: seen.error,
      hint: seen.hint,
      failing_since: refused ? at : null,
      last_ok_at: refused ? null : at,
    })
    .onConflict((oc) =>
      oc
        .column('connection')
        .doUpdateSet({
          result: sql<string>`excluded.result`,
          checked_at: sql<string>`excluded.checked_at`,
          checked_ms: sql<number>`excluded.checked_ms`,
          error: sql<string | null>`excluded.error`,
          hint: sql<string | null>`excluded.hint`,
          // A refusal after a refusal keeps the first one's time; an acceptance ends the streak.
          failing_since: sql<string | null>`CASE WHEN excluded.result = 'ok' THEN NULL
            WHEN "_svcsync_connections"."result" = 'refused' THEN "_svcsync_connections"."failing_since"
            ELSE excluded.failing_since END`,
          last_ok_at: sql<string | null>`COALESCE(excluded.last_ok_at, "_svcsync_connections"."last_ok_at")`,
        })
        .where(sql<boolean>`"_svcsync_connections"."checked_ms" <= excluded.checked_ms`),
    )
    .execute();
}

export async function listAuthorizations(db: AnyDb): Promise<ConnectionAuthRow[]> {
  return view(db).selectFrom('_svcsync_connections').selectAll().orderBy('connection').execute();
}
