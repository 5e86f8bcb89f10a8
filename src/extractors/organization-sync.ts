import pLimit from 'p-limit';
import type { Family } from '../config/plans.js';
import type { StreamSpec } from '../catalog/types.js';
import { isOrganizationList, qualifiedName } from '../catalog/types.js';
import { childStreamsOf } from '../catalog/index.js';
import { AuthorizationError, QuotaExhaustedError, SvcsyncError } from '../core/errors.js';
import { recordRunStream } from '../state/runs.js';
import { saveStreamState } from '../state/stream-state.js';
import { completeChildren, completeDetails } from './completion.js';
import { runAll } from './settle.js';
import { newTally, type StreamTally, type WarningCount } from './stream-tally.js';
import type { SyncContext } from './context.js';
import { runStreamPass, type SyncMode } from './stream-pass.js';

export type StreamStatus = 'ok' | 'failed' | 'quota' | 'skipped';

export interface StreamOutcome {
  organizationId: string;
  stream: string;
  status: StreamStatus;
  pages: number;
  records: number;
  written: number;
  deleted: number;
  requests: number;
  /** Data-shape warnings, one entry per table, field and kind. */
  warnings: WarningCount[];
  error?: string;
}

export interface OrganizationOutcome {
  connection: string;
  organizationId: string;
  families: Family[];
  status: 'ok' | 'partial' | 'failed' | 'quota';
  streams: StreamOutcome[];
  error?: string;
  /** When the daily quota ran out: when calls may resume. */
  resumeAt?: string;
}

/**
 * Which top-level streams to run for an organization in the given families. An allowlist
 * entry is `family.stream` or `stream` (every family); a child stream pulls in its parent,
 * since the parent's changes decide which children to read.
 */
export function selectStreams(catalog: readonly StreamSpec[], families: readonly Family[], allow: readonly string[] | undefined): { top: StreamSpec[]; allowed: (s: StreamSpec) => boolean } {
  const allowed = (s: StreamSpec): boolean => !allow || allow.includes(qualifiedName(s)) || allow.includes(s.name);
  const wanted = (s: StreamSpec): boolean => allowed(s) || childStreamsOf(s).some(wanted);
  const top = catalog.filter((s) => families.includes(s.family) && !s.parent && !isOrganizationList(s) && wanted(s));
  return { top, allowed };
}

function describe(error: unknown): string {
  if (error instanceof SvcsyncError) return error.describe();
  return error instanceof Error ? error.message : String(error);
}

/**
 * Syncs every selected stream of one organization. A stream that fails is reported and the
 * others carry on; a spent quota stops this organization only; an authorization failure
 * stops the family whose scope is missing.
 */
export async function syncOrganization(
  ctx: SyncContext,
  organizationId: string,
  families: Family[],
  options: { mode: SyncMode; since?: string | undefined; streams?: readonly string[] | undefined },
): Promise<OrganizationOutcome> {
  const outcome: OrganizationOutcome = { connection: ctx.connection.name, organizationId, families, status: 'ok', streams: [] };
  const { top, allowed } = selectStreams(ctx.catalog, families, options.streams);
  const log = ctx.logger.child({ organization_id: organizationId });
  let quota: QuotaExhaustedError | null = null;
  const deniedFamilies = new Set<Family>();
  // Streams of one organization share its limiter; two at a time keeps a page being
  // written while the next is fetched, without crowding the per-minute window.
  const limit = pLimit(2);

  const runOne = async (stream: StreamSpec, work: (tally: StreamTally) => Promise<unknown>): Promise<void> => {
    const name = qualifiedName(stream);
    const startedAt = ctx.stamp.next();
    const base: StreamOutcome = { organizationId, stream: name, status: 'ok', pages: 0, records: 0, written: 0, deleted: 0, requests: 0, warnings: [] };
    const halted = ctx.halt.authorization;
    if (quota || deniedFamilies.has(stream.family) || halted) {
      outcome.streams.push({ ...base, status: 'skipped', error: quota ? 'daily quota spent' : halted ? 'the connection\'s token was refused' : 'not authorized for this family' });
      return;
    }
    const tally = newTally();
    try {
      await work(tally);
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      base.status = error instanceof QuotaExhaustedError ? 'quota' : 'failed';
      base.error = describe(error);
      if (error instanceof QuotaExhaustedError) quota = error;
      if (error instanceof AuthorizationError) {
        // Every stream of the connection shares the token: one message stops them all.
        if (error.reach === 'connection') ctx.halt.authorization ??= error;
        else deniedFamilies.add(stream.family);
      }
      log.error({ stream: name, err: error }, `stream failed: ${describe(error)}`);
    }
    // Whatever way the stream ended, what it spent and committed is reported.
    Object.assign(base, { pages: tally.pages, records: tally.records, written: tally.written, deleted: tally.deleted, requests: tally.meter.requests, warnings: tally.warnings.entries() });
    tally.warnings.log(log, { stream: name });
    outcome.streams.push(base);
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
      requests: base.requests,
      error: base.error ?? null,
      warnings: base.warnings.length ? JSON.stringify(base.warnings) : null,
    });
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
    ctx.progress.streamFinished({ connection: ctx.connection.name, organizationId, stream: name, status: base.status === 'ok' ? 'ok' : 'failed', records: base.records, pages: base.pages });
  };

  const runTree = async (stream: StreamSpec): Promise<void> => {
    await runOne(stream, async (tally) => {
      await runStreamPass(ctx, organizationId, stream, options, tally);
      await completeDetails(ctx, organizationId, stream, tally);
    });
    const drain = async (parent: StreamSpec): Promise<void> => {
      for (const child of childStreamsOf(parent)) {
        if (!allowed(child) && !childStreamsOf(child).some(allowed)) continue;
        await runOne(child, (tally) => completeChildren(ctx, organizationId, child, parent, tally));
        await drain(child);
      }
    };
    await drain(stream);
  };

  await runAll(limit, top.map((s) => () => runTree(s)));

  const failed = outcome.streams.filter((s) => s.status === 'failed' || s.status === 'quota');
  if (ctx.halt.authorization) {
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
  return outcome;
}
