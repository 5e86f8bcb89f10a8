import type { AnyDb } from '../loaders/db.js';
import { localProcessGone, processOwner } from '../loaders/lease/lease.js';
import { stateDb, type RunRow, type RunStreamRow } from './tables.js';

export type RunStatus = 'running' | 'ok' | 'partial' | 'failed' | 'stopped' | 'abandoned';

/**
 * The runs this process has started and not yet finished. A row of this process that says
 * `running` but is not here lost its end (its `finishRun` failed on a warehouse fault) and is
 * a ghost, though the process lives on (the daemon, a worker).
 */
const inFlight = new Set<string>();

/**
 * Closes the runs that will never record their end: `running` rows whose process on this host
 * is gone (killed, crashed), or is this process, which no longer runs them. Each becomes
 * `abandoned`, with the instant it was found, so status pages show no ghost. A run of another
 * host is left alone: its process cannot be seen from here.
 */
export async function closeAbandonedRuns(db: AnyDb, by: { runId: string; at: string }): Promise<string[]> {
  const me = processOwner();
  const running = await stateDb(db).selectFrom('_svcsync_runs').select(['run_id', 'process']).where('status', '=', 'running').execute();
  const ghosts = running.filter(
    (r) => r.process !== null && ((r.process === me && !inFlight.has(r.run_id)) || (r.process !== me && localProcessGone(r.process))),
  );
  for (const ghost of ghosts) {
    const why =
      `the run ended without recording its end (process ${ghost.process ?? 'unknown'} ` +
      `${ghost.process === me ? 'could not write it' : 'is gone'}); closed by run ${by.runId}`;
    await stateDb(db)
      .updateTable('_svcsync_runs')
      .set({ status: 'abandoned', abandoned_at: by.at, errors: JSON.stringify([why]) })
      .where('run_id', '=', ghost.run_id)
      .where('status', '=', 'running')
      .execute();
  }
  return ghosts.map((g) => g.run_id);
}

/** One row per command run (sync, backfill, daemon job), with its counts and errors. */
export async function startRun(db: AnyDb, run: { runId: string; command: string; startedAt: string }): Promise<void> {
  inFlight.add(run.runId);
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
    // Sent again after a lost reply, the row is already there: the run id is fresh for every run.
    .onConflict((oc) => oc.column('run_id').doNothing())
    .execute();
}

export async function finishRun(
  db: AnyDb,
  runId: string,
  result: { finishedAt: string; status: RunStatus; requests: number; records: number; errors: string[]; summary?: unknown },
): Promise<void> {
  // Out of the set even when the write below fails: the next run then finds the row a ghost and closes it.
  inFlight.delete(runId);
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
    reads: row.reads,
    written: row.written,
    deleted: row.deleted ?? null,
    deleted_tables: row.deleted_tables ?? null,
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
