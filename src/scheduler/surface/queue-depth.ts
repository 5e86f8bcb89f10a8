import { sql } from 'kysely';
import { PLAIN_SCHEMA_NAME } from '../../config/schema.js';
import type { AnyDb } from '../../loaders/db.js';

/** One job per (connection, organization, job class) that is due. */
export const SYNC_QUEUE = 'svcsync-sync';

/** The sync queue of `svcsync worker` as it stands: jobs by pg-boss state, and the oldest waiting. */
export interface QueueDepth {
  /** Waiting to be taken (`created`), including continuations and retries not yet due. */
  waiting: number;
  /** Taken by a worker now (`active`). */
  running: number;
  /** Failed and waiting for pg-boss's retry. */
  retrying: number;
  /** How long the oldest job that may start now has waited, in seconds; 0 when none waits. */
  oldestWaitingSeconds: number;
}

/**
 * Reads the depth of the worker queue from pg-boss's job table in the warehouse database, or
 * null when there is none (SQLite, or no worker has run with this `worker.schema`). The schema
 * name is `worker.schema` from the configuration, which the config schema keeps to a plain
 * Postgres name; it is quoted as an identifier, never bound into the query text.
 */
export async function queueDepth(db: AnyDb, schema: string, queue: string): Promise<QueueDepth | null> {
  if (!PLAIN_SCHEMA_NAME.test(schema)) return null;
  const exists = await sql<{ n: number }>`SELECT 1 AS n FROM information_schema.tables
    WHERE table_schema = ${schema} AND table_name = 'job'`
    .execute(db)
    .catch(() => ({ rows: [] }));
  if (exists.rows.length === 0) return null;
  const r = await sql<{ state: string; n: string | number; oldest: string | number | null }>`SELECT state, count(*) AS n,
      extract(epoch FROM now() - min(start_after) FILTER (WHERE state = 'created' AND start_after <= now())) AS oldest
    FROM ${sql.id(schema, 'job')} WHERE name = ${queue} AND state IN ('created', 'active', 'retry') GROUP BY state`.execute(db);
  const of = (state: string): number => Number(r.rows.find((x) => x.state === state)?.n ?? 0);
  const oldest = r.rows.find((x) => x.state === 'created')?.oldest;
  return {
    waiting: of('created'),
    running: of('active'),
    retrying: of('retry'),
    oldestWaitingSeconds: oldest === null || oldest === undefined ? 0 : Math.max(0, Math.round(Number(oldest))),
  };
}

/** One line for `svcsync status`. */
export function queueLine(schema: string, q: QueueDepth): string {
  const oldest = q.waiting > 0 && q.oldestWaitingSeconds > 0 ? ` (the oldest due for ${q.oldestWaitingSeconds} s)` : '';
  return `worker queue (pg-boss schema ${schema}): ${q.waiting} waiting${oldest}, ${q.running} running, ${q.retrying} to retry`;
}
