import type { AnyDb } from '../loaders/db.js';
import { processOwner } from '../loaders/org-lease.js';
import { stateDb, type RunRow, type RunStreamRow } from './tables.js';

export type RunStatus = 'running' | 'ok' | 'partial' | 'failed' | 'stopped';

/** One row per command run (sync, backfill, daemon job), with its counts and errors. */
export async function startRun(db: AnyDb, run: { runId: string; command: string; startedAt: string }): Promise<void> {
  await stateDb(db)
    .insertInto('_svcsync_runs')
    .values({
      run_id: run.runId,
      command: run.command,
      started_at: run.startedAt,
      finished_at: null,
      status: 'running',
      requests: 0,
      records: 0,
      errors: null,
      summary: null,
      process: processOwner(),
    })
    .execute();
}

export async function finishRun(
  db: AnyDb,
  runId: string,
  result: { finishedAt: string; status: RunStatus; requests: number; records: number; errors: string[]; summary?: unknown },
): Promise<void> {
  await stateDb(db)
    .updateTable('_svcsync_runs')
    .set({
      finished_at: result.finishedAt,
      status: result.status,
      requests: result.requests,
      records: result.records,
      errors: result.errors.length ? JSON.stringify(result.errors) : null,
      summary: result.summary === undefined ? null : JSON.stringify(result.summary),
    })
    .where('run_id', '=', runId)
    .execute();
}

export async function recordRunStream(db: AnyDb, row: RunStreamRow): Promise<void> {
  const changes = {
    finished_at: row.finished_at,
    status: row.status,
    pages: row.pages,
    records: row.records,
    requests: row.requests,
    error: row.error,
    warnings: row.warnings,
  };
  await stateDb(db)
    .insertInto('_svcsync_run_streams')
    .values(row)
    .onConflict((oc) => oc.columns(['run_id', 'connection', 'organization_id', 'stream']).doUpdateSet(changes))
    .execute();
}

export async function lastRuns(db: AnyDb, limit = 10): Promise<RunRow[]> {
  return stateDb(db).selectFrom('_svcsync_runs').selectAll().orderBy('started_at', 'desc').limit(limit).execute();
}
