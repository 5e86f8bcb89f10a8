import type { CompiledQuery } from 'kysely';
import { childStreamsOf } from '../catalog/index.js';
import { qualifiedName, type StreamSpec } from '../catalog/types.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import type { AnyDb } from './db.js';
import type { HistoryPlan } from './derived/history-tables.js';
import type { HistoryWriter } from './history-writer.js';

/**
 * The history of a unit of work (src/state/unit-of-work.ts): which streams keep it (the
 * connection's plan) and the writer for the warehouse's dialect. Absent: no history is written.
 */
export interface HistorySink {
  plan: HistoryPlan;
  writer: HistoryWriter;
}

export interface HistoryLoader {
  history?: HistorySink;
  /** The run writing, recorded in each version's `_run_id`. */
  runId?: string;
}

/** The statements that record the versions of records just upserted (run after their upserts). */
export function historyQueries(
  loader: HistoryLoader,
  stream: StreamSpec,
  organizationId: string,
  records: readonly NormalizedRecord[],
  now: string,
): CompiledQuery[] {
  const s = loader.history?.plan.get(qualifiedName(stream));
  if (!s || records.length === 0) return [];
  const ids = records.map((r) => r.id);
  return loader.history!.writer.recordQueries(s, { kind: 'ids', organizationId, ids }, now, loader.runId ?? null);
}

/**
 * Records the deletions marked at `at` (`_deleted_at`) in a stream and, through the cascade, in
 * its child streams: a `deleted` version each, and the versions they end closed.
 */
export async function recordDeletions(
  loader: HistoryLoader,
  db: AnyDb,
  stream: StreamSpec,
  organizationId: string,
  at: string,
): Promise<void> {
  const sink = loader.history;
  if (!sink || sink.plan.size === 0) return;
  const s = sink.plan.get(qualifiedName(stream));
  if (s)
    for (const q of sink.writer.deletionQueries(s, { kind: 'deletedAt', organizationId, at }, loader.runId ?? null))
      await db.executeQuery(q);
  for (const child of childStreamsOf(stream)) await recordDeletions(loader, db, child, organizationId, at);
}
