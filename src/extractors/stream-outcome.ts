import type { Family } from '../catalog/families.js';
import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName } from '../catalog/types.js';
import type { WarehouseError } from '../core/errors.js';
import type { LeaseLost } from '../loaders/lease/fence.js';
import type { DriftCount } from '../state/drift.js';
import { recordRunStream } from '../state/runs.js';
import { saveStreamState } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { reportDrift } from './drift-report.js';
import type { ShortcutNote } from './shortcuts.js';
import type { StreamTally, WarningCount } from './stream-tally.js';

/** stopped: the run was asked to stop (a signal, the daemon's shutdown or budget) while the stream was read. */
export type StreamStatus = 'ok' | 'failed' | 'quota' | 'skipped' | 'stopped';

export interface StreamOutcome {
  organizationId: string;
  stream: string;
  status: StreamStatus;
  pages: number;
  /** The stream's records (a list record and its single-record read are one). */
  records: number;
  /** Records received: list records, single-record reads, child records. */
  reads: number;
  /** Rows new or changed. */
  written: number;
  /** Rows marked deleted: the records', their child-table rows, and child streams' rows under them. */
  deleted: number;
  /** The same rows by table. */
  deletedTables: Record<string, number>;
  requests: number;
  /** Data-shape warnings, one entry per table, field and kind. */
  warnings: WarningCount[];
  /** Fields the catalog does not know, one entry per field path (also in `_svcsync_drift`). */
  drift: DriftCount[];
  error?: string;
}

export interface OrganizationOutcome {
  connection: string;
  organizationId: string;
  families: Family[];
  /**
   * busy: another live process owns the organization (its lease), so this run left it alone.
   * stopped: the run was asked to stop while it synced the organization; what it committed is counted.
   */
  status: 'ok' | 'partial' | 'failed' | 'quota' | 'busy' | 'stopped';
  streams: StreamOutcome[];
  error?: string;
  /**
   * What ended a failed organization, when it was not the API: the warehouse (a classified
   * fault, which ends the run's other organizations too) or the loss of its lease through this
   * process's own connection. Both are failures of this run (exit 4), never "busy".
   */
  failure?: 'warehouse' | 'lease';
  /** When the daily quota ran out: when calls may resume. */
  resumeAt?: string;
  /** Request-saving readings of the API that a check found wrong in this run (src/extractors/shortcuts.ts). */
  shortcuts?: ShortcutNote[];
}

/**
 * What ended an organization's run early, beside its outcome: a warehouse fault that outlived
 * its retries, or the loss of its lease. Either way nothing more is written for it; the
 * caller decides what the loss means (another owner, or this process's own connection).
 */
export interface OrganizationRun {
  outcome: OrganizationOutcome;
  ended: WarehouseError | LeaseLost | null;
}

/** A stream's counts as its tally has them. */
export function counts(tally: StreamTally): Omit<StreamOutcome, 'organizationId' | 'stream' | 'status' | 'error'> {
  return {
    pages: tally.pages,
    records: tally.records,
    reads: tally.reads,
    written: tally.written,
    deleted: tally.deleted,
    deletedTables: { ...tally.deletedTables },
    requests: tally.meter.requests,
    warnings: tally.warnings.entries(),
    drift: tally.drift.entries(),
  };
}

/** A stream with no requests yet: every count at zero. */
export function outcomeOf(organizationId: string, stream: StreamSpec): StreamOutcome {
  return {
    organizationId,
    stream: qualifiedName(stream),
    status: 'ok',
    pages: 0,
    records: 0,
    reads: 0,
    written: 0,
    deleted: 0,
    deletedTables: {},
    requests: 0,
    warnings: [],
    drift: [],
  };
}

/**
 * Records a finished stream in the warehouse: its row of the run, the fields it found that the
 * catalog does not know, its last run in its state, and tells the progress.
 */
export async function recordStream(
  ctx: SyncContext,
  outcome: StreamOutcome,
  tally: StreamTally,
  startedAt: string,
  log: SyncContext['logger'],
): Promise<void> {
  const { organizationId, stream: name } = outcome;
  const finishedAt = ctx.stamp.next();
  await recordRunStream(ctx.warehouse.db, {
    run_id: ctx.runId,
    connection: ctx.connection.name,
    organization_id: organizationId,
    stream: name,
    started_at: startedAt,
    finished_at: finishedAt,
    status: outcome.status,
    pages: outcome.pages,
    records: outcome.records,
    reads: outcome.reads,
    written: outcome.written,
    deleted: outcome.deleted,
    deleted_tables: outcome.deleted > 0 ? JSON.stringify(outcome.deletedTables) : null,
    requests: outcome.requests,
    error: outcome.error ?? null,
    warnings: outcome.warnings.length ? JSON.stringify(outcome.warnings) : null,
  });
  await reportDrift(ctx, { organizationId, stream: name, seenAt: finishedAt }, tally.drift, log);
  await saveStreamState(
    ctx.warehouse.db,
    { connection: ctx.connection.name, organizationId, stream: name },
    {
      last_run_id: ctx.runId,
      last_started_at: startedAt,
      last_finished_at: finishedAt,
      last_status: outcome.status,
      last_error: outcome.error ?? null,
      last_pages: outcome.pages,
      last_requests: outcome.requests,
      last_records: outcome.records,
      ...(outcome.status === 'ok' ? { last_success_at: finishedAt } : {}),
    },
    finishedAt,
  );
  ctx.progress.streamFinished({
    connection: ctx.connection.name,
    organizationId,
    stream: name,
    status: outcome.status === 'ok' ? 'ok' : 'failed',
    records: outcome.records,
    pages: outcome.pages,
  });
}
