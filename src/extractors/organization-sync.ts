import pLimit from 'p-limit';
import type { Family } from '../catalog/families.js';
import type { StreamSpec } from '../catalog/types.js';
import { isOrganizationList, qualifiedName } from '../catalog/types.js';
import { childStreamsOf } from '../catalog/index.js';
import { AuthorizationError, describeError, QuotaExhaustedError, WarehouseError } from '../core/errors.js';
import { LeaseLost } from '../loaders/lease/fence.js';
import { recordRunStream } from '../state/runs.js';
import { saveStreamState } from '../state/stream-state.js';
import { completeChildren, completeDetails } from './completion.js';
import { runAll } from './settle.js';
import { reportDrift } from './drift-report.js';
import { mergeTally, newTally, type StreamTally, type WarningCount } from './stream-tally.js';
import { type DriftCount } from '../state/drift.js';
import type { SyncContext } from './context.js';
import { endsTheRun, raiseIfStopped } from './stop.js';
import { detailIsEnabled } from './page-records.js';
import type { SyncMode } from './pass-start.js';
import { runStreamPass } from './stream-pass.js';
import { countPending } from '../state/pending.js';
import { healUnhealed, sampleChildChecks } from './child-checks.js';
import { OrgShortcuts, type ShortcutNote } from './shortcuts.js';
import { requiredScopes } from '../api/scopes.js';

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
 * Which top-level streams to run for an organization in the given families. An allowlist
 * entry is `family.stream` or `stream` (every family); a child stream pulls in its parent,
 * since the parent's changes decide which children to read.
 */
export function selectStreams(
  catalog: readonly StreamSpec[],
  families: readonly Family[],
  allow: readonly string[] | undefined,
): { top: StreamSpec[]; allowed: (s: StreamSpec) => boolean } {
  const allowed = (s: StreamSpec): boolean => !allow || allow.includes(qualifiedName(s)) || allow.includes(s.name);
  const wanted = (s: StreamSpec): boolean => allowed(s) || childStreamsOf(s).some(wanted);
  const top = catalog.filter((s) => families.includes(s.family) && !s.parent && !isOrganizationList(s) && wanted(s));
  return { top, allowed };
}

/**
 * Why a stream is skipped without a request, or null when it runs: the organization's quota
 * is spent, the connection's token was refused, or a scope it needs was refused.
 */
function whySkipped(why: {
  ended: WarehouseError | LeaseLost | null;
  quota: boolean;
  halted: boolean;
  denied: string | null;
}): string | null {
  if (why.ended instanceof WarehouseError) return 'the warehouse failed';
  if (why.ended) return "the organization's lease was lost";
  if (why.quota) return 'daily quota spent';
  if (why.halted) return "the connection's token was refused";
  if (why.denied !== null) return why.denied;
  return null;
}

/**
 * Whether an earlier stream's refusal for want of a scope rules this stream out: it needs that
 * scope (its list or single-record path; a child list's path lies under its parent's resource),
 * or the refusal named no scope and it is of the same family. Streams of the family under other
 * scopes are still read (a grant of contacts but not sales orders reads the contacts).
 */
function deniedBy(stream: StreamSpec, denied: { scopes: ReadonlySet<string>; families: ReadonlySet<Family> }): string | null {
  if (denied.families.has(stream.family)) return 'not authorized for this family';
  if (denied.scopes.size === 0) return null;
  const missing = requiredScopes([stream], [stream.family]).find((s) => denied.scopes.has(s));
  return missing === undefined ? null : `not authorized: the token lacks scope ${missing}`;
}

/** Whether single-record reads of the stream are queued for the organization (work a held-back stream leaves undone). */
async function detailsQueued(ctx: SyncContext, organizationId: string, stream: StreamSpec): Promise<boolean> {
  if (!detailIsEnabled(ctx, stream)) return false;
  const key = { connection: ctx.connection.name, organizationId, stream: qualifiedName(stream), kind: 'detail' as const };
  return (await countPending(ctx.warehouse.db, key)) > 0;
}

/** A stream's counts as its tally has them. */
function counts(tally: StreamTally): Omit<StreamOutcome, 'organizationId' | 'stream' | 'status' | 'error'> {
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

/**
 * What ended an organization's run early, beside its outcome: a warehouse fault that outlived
 * its retries, or the loss of its lease. Either way nothing more is written for it; the
 * caller decides what the loss means (another owner, or this process's own connection).
 */
export interface OrganizationRun {
  outcome: OrganizationOutcome;
  ended: WarehouseError | LeaseLost | null;
}

/**
 * Syncs every selected stream of one organization: every top-level stream's list pages first,
 * then their queued single-record reads and child lists (a backfill, tree by tree). A stream
 * that fails is reported and the others carry on; a spent quota stops this organization only;
 * a missing scope stops the streams that need it; a warehouse fault or a lost lease stops them all.
 */
export async function syncOrganization(
  runCtx: SyncContext,
  organizationId: string,
  families: Family[],
  options: {
    mode: SyncMode;
    since?: string | undefined;
    deep?: boolean | undefined;
    wholeReadCycle?: boolean | undefined;
    streams?: readonly string[] | undefined;
    /** Told the organization's outcome so far when the run is stopped under it (the stop itself propagates). */
    onStopped?: (outcome: OrganizationOutcome) => void;
  },
): Promise<OrganizationRun> {
  const shortcuts = await OrgShortcuts.load(runCtx.warehouse.db, runCtx.config, {
    connection: runCtx.connection.name,
    organizationId,
    now: () => runCtx.clock.now(),
    logger: runCtx.logger,
  });
  const ctx: SyncContext = { ...runCtx, shortcuts };
  const startedAt = ctx.stamp.next();
  // What a shortcut found wrong in an earlier run may have missed, if that run ended before queuing it.
  await healUnhealed(ctx, organizationId);
  const outcome: OrganizationOutcome = { connection: ctx.connection.name, organizationId, families, status: 'ok', streams: [] };
  const { top, allowed } = selectStreams(ctx.catalog, families, options.streams);
  const log = ctx.logger.child({ organization_id: organizationId });
  let quota: QuotaExhaustedError | null = null;
  // A warehouse fault that outlived its retries, or a lost lease: nothing more may be written, so no other stream starts.
  let ended: WarehouseError | LeaseLost | null = null;
  const denied = { scopes: new Set<string>(), families: new Set<Family>() };
  // Streams of one organization share its limiter; two at a time keeps a page being
  // written while the next is fetched, without crowding the per-minute window.
  const limit = pLimit(2);

  /** A stream under way: its outcome so far, what it spent and committed, when it started. */
  interface Started {
    stream: StreamSpec;
    base: StreamOutcome;
    tally: StreamTally;
    startedAt: string;
  }
  // Started and not yet reported: what a stop reports as 'stopped'.
  const open = new Set<Started>();

  const outcomeOf = (stream: StreamSpec): StreamOutcome => ({
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
  });

  /** What keeps a stream from its next request (see whySkipped), or null. */
  const blocked = (stream: StreamSpec): string | null => {
    const lost = ctx.fence?.lost();
    if (lost) ended ??= lost;
    return whySkipped({ ended, quota: quota !== null, halted: ctx.halt.authorization !== null, denied: deniedBy(stream, denied) });
  };

  /** Starts a stream, or reports it skipped without a request (null). */
  const start = (stream: StreamSpec): Started | null => {
    const base = outcomeOf(stream);
    const skipped = whySkipped({
      ended,
      quota: quota !== null,
      halted: ctx.halt.authorization !== null,
      denied: deniedBy(stream, denied),
    });
    if (skipped !== null) {
      outcome.streams.push({ ...base, status: 'skipped', error: skipped });
      return null;
    }
    // No new stream starts once a stop is asked for.
    raiseIfStopped(ctx);
    const lost = ctx.fence?.lost();
    if (lost) {
      ended ??= lost;
      outcome.streams.push({ ...base, status: 'skipped', error: "the organization's lease was lost" });
      return null;
    }
    const started: Started = { stream, base, tally: newTally(), startedAt: ctx.stamp.next() };
    open.add(started);
    return started;
  };

  /**
   * One step of a started stream's work. A failure is the stream's (false): it is classified,
   * and a spent quota, a refused token or scope, a warehouse fault or a lost lease holds back
   * the streams after it. A stop propagates.
   */
  const attempt = async (started: Started, work: (tally: StreamTally) => Promise<unknown>): Promise<boolean> => {
    try {
      await work(started.tally);
      return true;
    } catch (error) {
      if (endsTheRun(error, ctx.signal)) throw error;
      const { base, stream } = started;
      base.status = error instanceof QuotaExhaustedError ? 'quota' : 'failed';
      base.error = describeError(error);
      // A lost lease ends the organization here: nothing more is written for it.
      if (error instanceof WarehouseError || error instanceof LeaseLost) ended ??= error;
      if (error instanceof QuotaExhaustedError) quota = error;
      if (error instanceof AuthorizationError) {
        // Every stream of the connection shares the token: one message stops them all.
        if (error.reach === 'connection') ctx.halt.authorization ??= error;
        else if (error.scope !== undefined) denied.scopes.add(error.scope);
        else denied.families.add(stream.family);
      }
      log.error({ stream: base.stream, err: error }, `stream failed: ${describeError(error)}`);
      return false;
    }
  };

  /** Reports a started stream: whatever way it ended, what it spent and committed. */
  const finish = async (started: Started): Promise<void> => {
    const { base, tally, startedAt } = started;
    open.delete(started);
    const name = base.stream;
    Object.assign(base, counts(tally));
    tally.warnings.log(log, { stream: name });
    outcome.streams.push(base);
    // The warehouse cannot take the stream's record now, or may no longer (the lease is gone); what it committed is in the summary.
    if (ended) return;
    const finishedAt = ctx.stamp.next();
    await recordRunStream(ctx.warehouse.db, {
      run_id: ctx.runId,
      connection: ctx.connection.name,
      organization_id: organizationId,
      stream: name,
      started_at: startedAt,
      finished_at: finishedAt,
      status: base.status,
      pages: base.pages,
      records: base.records,
      reads: base.reads,
      written: base.written,
      deleted: base.deleted,
      deleted_tables: base.deleted > 0 ? JSON.stringify(base.deletedTables) : null,
      requests: base.requests,
      error: base.error ?? null,
      warnings: base.warnings.length ? JSON.stringify(base.warnings) : null,
    });
    await reportDrift(ctx, { organizationId, stream: name, seenAt: finishedAt }, tally.drift, log);
    await saveStreamState(
      ctx.warehouse.db,
      { connection: ctx.connection.name, organizationId, stream: name },
      {
        last_run_id: ctx.runId,
        last_started_at: startedAt,
        last_finished_at: finishedAt,
        last_status: base.status,
        last_error: base.error ?? null,
        last_pages: base.pages,
        last_requests: base.requests,
        last_records: base.records,
        ...(base.status === 'ok' ? { last_success_at: finishedAt } : {}),
      },
      finishedAt,
    );
    ctx.progress.streamFinished({
      connection: ctx.connection.name,
      organizationId,
      stream: name,
      status: base.status === 'ok' ? 'ok' : 'failed',
      records: base.records,
      pages: base.pages,
    });
  };

  const runOne = async (stream: StreamSpec, work: (tally: StreamTally) => Promise<unknown>): Promise<void> => {
    const started = start(stream);
    if (!started) return;
    await attempt(started, work);
    await finish(started);
  };

  // Phase 1, every header: each top-level stream's list pages. Their single-record reads and
  // child lists wait in `_svcsync_pending` (committed with each page) until phase 2, so a
  // first sync that runs out of quota has delivered every stream's list rows.
  const headersRead = new Map<StreamSpec, Started>();
  const readHeaders = async (stream: StreamSpec): Promise<void> => {
    const started = start(stream);
    if (!started) return;
    if (await attempt(started, (tally) => runStreamPass(ctx, organizationId, stream, options, tally))) headersRead.set(stream, started);
    else await finish(started);
  };

  // Phase 2, the details: each stream's queued single-record reads (newest record first, see
  // takePending), then its child streams. A stream whose headers are in but whose details are
  // held back (the quota spent, the token refused, the warehouse gone) reports why, with its counts.
  const readDetails = async (stream: StreamSpec): Promise<void> => {
    const embedded = new Map<string, StreamTally>();
    const started = headersRead.get(stream);
    if (started) {
      const why = blocked(stream);
      if (why === null) {
        await attempt(started, async (tally) => {
          // A few unchanged records' children, as checks of A25; a reconcile's cycle re-reads some anyway.
          if (options.mode === 'incremental') await sampleChildChecks(ctx, organizationId, stream, startedAt);
          await completeDetails(ctx, organizationId, stream, tally, allowed, embedded);
        });
      } else if (await detailsQueued(ctx, organizationId, stream)) {
        started.base.status = quota !== null && ended === null ? 'quota' : 'failed';
        started.base.error = quota !== null && ended === null ? describeError(quota) : why;
      }
      await finish(started);
    }
    const drain = async (parent: StreamSpec): Promise<void> => {
      for (const child of childStreamsOf(parent)) {
        if (!allowed(child) && !childStreamsOf(child).some(allowed)) continue;
        await runOne(child, (tally) => {
          // Children the parents' single records carried are this stream's: records, rows changed, warnings and drift.
          const fromParents = embedded.get(qualifiedName(child));
          if (fromParents) mergeTally(tally, fromParents);
          return completeChildren(ctx, organizationId, child, parent, tally);
        });
        await drain(child);
      }
    };
    await drain(stream);
  };

  // A backfill goes tree by tree instead: the daemon leaves a tree a backfill has started on to
  // it until it is finished (treesInBackfill), so a backfill that started every tree's list at
  // once would hold back every incremental run of the organization for days.
  const phases =
    options.mode === 'backfill'
      ? [
          top.map((s) => async () => {
            await readHeaders(s);
            await readDetails(s);
          }),
        ]
      : [top.map((s) => () => readHeaders(s)), top.map((s) => () => readDetails(s))];
  try {
    for (const phase of phases) await runAll(limit, phase);
  } catch (error) {
    if (endsTheRun(error, ctx.signal)) {
      // What each stream under way committed before the stop is still the run's to report.
      for (const { base, tally } of open) outcome.streams.push({ ...base, ...counts(tally), status: 'stopped' });
      open.clear();
      options.onStopped?.({ ...outcome, status: 'stopped' });
    }
    throw error;
  }

  // Set inside the streams' closures, which the compiler cannot follow.
  const stop = ended as WarehouseError | LeaseLost | null;
  if (!stop) await shortcuts.flush();
  if (shortcuts.refutedNow.length) outcome.shortcuts = [...shortcuts.refutedNow];
  const failed = outcome.streams.filter((s) => s.status === 'failed' || s.status === 'quota');
  if (stop) {
    outcome.status = 'failed';
    outcome.failure = stop instanceof WarehouseError ? 'warehouse' : 'lease';
    outcome.error = stop.describe();
  } else if (ctx.halt.authorization) {
    outcome.status = 'failed';
    outcome.error = ctx.halt.authorization.describe();
  } else if (quota) {
    outcome.status = 'quota';
    outcome.resumeAt = (quota as QuotaExhaustedError).resumeAt.toISOString();
    outcome.error = (quota as QuotaExhaustedError).describe();
  } else if (failed.length === outcome.streams.length && failed.length > 0) {
    outcome.status = 'failed';
    outcome.error = failed[0]!.error;
  } else if (failed.length) {
    outcome.status = 'partial';
    outcome.error = `${failed.length} of ${outcome.streams.length} streams failed`;
  }
  return { outcome, ended: stop };
}
