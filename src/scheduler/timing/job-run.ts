import type { SyncSummary } from '../../extractors/sync-run.js';
import type { JobSpec } from './jobs.js';

/**
 * One job run as its drivers see it: what admission grants, what the run is handed, and what it
 * tells back. The cron scheduler (`svcsync daemon`) and the queue handler (`svcsync worker`)
 * speak only this to the job runner.
 */

/** `busy`: another process (a hand-run sync, a worker) held the organization, so nothing ran. */
export type JobStatus = 'ok' | 'partial' | 'failed' | 'quota' | 'stopped' | 'busy';

/** What a finished job tells its driver. */
export interface JobOutcome {
  status: JobStatus;
  /** Organizations (or the connection, as `null`) that failed and should back off. */
  failed?: Array<string | null>;
  /** The daily quota is gone until this instant (epoch ms): the organization pauses. */
  quotaUntil?: number | undefined;
  requests?: number;
  error?: string | undefined;
  /** A backfill that ran to the end (nothing left to read). */
  complete?: boolean;
}

/** Handed to a running job: `soft` asks it to stop after the page in flight, `hard` abandons that page. */
export interface JobRun {
  soft: AbortSignal;
  hard: AbortSignal;
  /** Requests of the organization's day to leave untouched (held for higher priorities). */
  floor: number;
  estimate: number;
  /** Called for each request the run sends (the worker's slice waits for the first one). */
  onRequest?: () => void;
}

/** Whether a job may start now: on which streams (a narrowed job), with what floor and estimate, or why not. */
export type Admission = { run: false; reason: string } | { run: true; job: JobSpec; floor: number; estimate: number };

/**
 * A run's status: a failure anywhere makes it failed (partial when some organization still
 * succeeded); then a spent quota; then any partial organization.
 */
function jobStatus(summary: SyncSummary, quotaSpent: boolean): JobStatus {
  if (summary.connectionFailures.length > 0 || summary.organizations.some((o) => o.status === 'failed'))
    return summary.organizations.some((o) => o.status === 'ok') ? 'partial' : 'failed';
  if (quotaSpent) return 'quota';
  // A family skipped for want of a scope is reported, but backs nothing off: the next run can only do the same.
  if (summary.organizations.some((o) => o.status === 'partial') || summary.skippedFamilies.length > 0) return 'partial';
  if (summary.organizations.length > 0 && summary.organizations.every((o) => o.status === 'busy')) return 'busy';
  if (summary.organizations.some((o) => o.status === 'busy')) return 'partial';
  return 'ok';
}

/** A driver's view of a run: who failed, whether the quota is gone, whether a backfill ended. */
export function outcomeOf(job: JobSpec, summary: SyncSummary): JobOutcome {
  // A failed connection is `null`: the whole connection backs off.
  const failed: Array<string | null> = summary.connectionFailures.map(() => null);
  let quotaUntil: number | undefined;
  for (const o of summary.organizations) {
    if (o.status === 'failed') failed.push(o.organizationId);
    if (o.status === 'quota' && o.resumeAt) quotaUntil = Math.max(quotaUntil ?? 0, Date.parse(o.resumeAt));
  }
  const requests = summary.organizations.reduce((a, o) => a + o.streams.reduce((b, s) => b + s.requests, 0), 0);
  const errors = [
    ...summary.connectionFailures.map((f) => f.error),
    ...summary.skippedFamilies.map((f) => `${f.connection}: ${f.error}`),
    ...summary.organizations.filter((o) => o.error).map((o) => `${o.organizationId}: ${o.error}`),
  ];
  const status = jobStatus(summary, quotaUntil !== undefined);
  const out: JobOutcome = { status, requests, failed, quotaUntil, error: errors.join('; ') || undefined };
  if (job.jobClass === 'backfill' && status === 'ok') out.complete = true;
  return out;
}
