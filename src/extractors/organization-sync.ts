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

  const runOne = async (stream: StreamSpec, work: () => Promise<Omit<StreamOutcome, 'organizationId' | 'stream' | 'status'>>): Promise<void> => {
    const name = qualifiedName(stream);
    const startedAt = ctx.stamp.next();
    const base: StreamOutcome = { organizationId, stream: name, status: 'ok', pages: 0, records: 0, written: 0, deleted: 0, requests: 0 };
    if (quota || deniedFamilies.has(stream.family)) {
      outcome.streams.push({ ...base, status: 'skipped', error: quota ? 'daily quota spent' : 'not authorized for this family' });
      return;
    }
    try {
      Object.assign(base, await work());
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      base.status = error instanceof QuotaExhaustedError ? 'quota' : 'failed';
      base.error = describe(error);
      if (error instanceof QuotaExhaustedError) quota = error;
      if (error instanceof AuthorizationError) deniedFamilies.add(stream.family);
      log.error({ stream: name, err: error }, `stream failed: ${describe(error)}`);
    }
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
    await runOne(stream, async () => {
      const passes = await runStreamPass(ctx, organizationId, stream, options);
      const details = await completeDetails(ctx, organizationId, stream);
      return {
        pages: passes.reduce((a, p) => a + p.pages, 0),
        records: passes.reduce((a, p) => a + p.records, 0) + details.records,
        written: passes.reduce((a, p) => a + p.written, 0) + details.records,
        deleted: passes.reduce((a, p) => a + p.deleted, 0) + details.gone,
        requests: passes.reduce((a, p) => a + p.requests, 0) + details.requests,
      };
    });
    const drain = async (parent: StreamSpec): Promise<void> => {
      for (const child of childStreamsOf(parent)) {
        if (!allowed(child) && !childStreamsOf(child).some(allowed)) continue;
        await runOne(child, async () => {
          const r = await completeChildren(ctx, organizationId, child, parent);
          return { pages: r.requests, records: r.records, written: r.records, deleted: r.gone, requests: r.requests };
        });
        await drain(child);
      }
    };
    await drain(stream);
  };

  await runAll(limit, top.map((s) => () => runTree(s)));

  const failed = outcome.streams.filter((s) => s.status === 'failed' || s.status === 'quota');
  if (quota) {
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
