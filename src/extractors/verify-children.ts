import { qualifiedName, type StreamSpec } from '../catalog/types.js';
import { FatalError } from '../core/errors.js';
import { fillPath } from './pager.js';
import { endsTheRun } from './stop.js';
import { compareIds } from './verify-compare.js';
import {
  EXAMPLE_IDS,
  noteFailure,
  readListIds,
  recordResult,
  unverified,
  warehouseIds,
  type OrganizationBlock,
  type StreamVerification,
  type VerifyContext,
} from './verify-lists.js';

/**
 * `svcsync verify --children`: a child stream (a vendor credit's refunds, a project's tasks)
 * has no list of its own, only one per parent record. It is checked by reading the child list
 * of every live parent in the warehouse, or of `sample` of them spread evenly over their ids,
 * and comparing the ids with the live child rows of those parents, reported as a top-level
 * list is (missing, extra, incomplete within `--max-requests`).
 */

/** `n` parents spread evenly over the sorted ids (all of them when `n` is null or not smaller). */
export function sampleParents(ids: readonly string[], n: number | null): string[] {
  const sorted = [...ids].sort();
  if (n === null || n >= sorted.length) return sorted;
  return Array.from({ length: n }, (_, i) => sorted[Math.floor((i * sorted.length) / n)]!);
}

export async function verifyChildren(
  ctx: VerifyContext,
  organizationId: string,
  child: StreamSpec,
  parent: StreamSpec,
  block: OrganizationBlock,
  sample: number | null,
): Promise<StreamVerification> {
  const name = qualifiedName(child);
  const link = child.parent!;
  const log = ctx.logger.child({ organization_id: organizationId, stream: name });
  const result = unverified(ctx.connection.name, organizationId, name);
  const paths: string[] = [];
  try {
    if (block.quota) {
      result.error = `not checked: the organization's daily quota is spent; it can continue at ${block.quota.resumeAt.toISOString()}`;
    } else if (block.denied.has(child.family)) {
      result.status = 'failed';
      result.errorKind = 'authorization';
      result.error = `not checked: not authorized for the ${child.family} family (see the family's first stream)`;
    } else {
      const parents = sampleParents(await warehouseIds(ctx.warehouse, parent, organizationId), sample);
      log.info({ parents: parents.length }, `verifying: reading the ${child.name} list of ${parents.length} ${parent.name}`);
      const api = new Set<string>();
      const stored = new Set<string>();
      for (const parentId of parents) {
        const path = fillPath(child.path, { [link.key]: parentId });
        paths.push(path);
        try {
          await readListIds(ctx, organizationId, child, result, path, api);
        } catch (error) {
          // A parent the API no longer has lists no children: its live child rows are extra.
          if (endsTheRun(error, ctx.signal) || !isGone(ctx, error)) throw error;
        }
        for (const id of await warehouseIds(ctx.warehouse, child, organizationId, { column: link.key, id: parentId })) stored.add(id);
      }
      const comparison = compareIds(api, stored);
      Object.assign(result, {
        status: comparison.status,
        apiCount: comparison.apiCount,
        warehouseCount: comparison.warehouseCount,
        missingCount: comparison.missing.length,
        extraCount: comparison.extra.length,
        missing: comparison.missing.slice(0, EXAMPLE_IDS),
        extra: comparison.extra.slice(0, EXAMPLE_IDS),
      });
      if (sample !== null) result.sampledParents = parents.length;
      log.info({ status: comparison.status, missing: result.missingCount, extra: result.extraCount }, 'verified');
    }
  } catch (error) {
    if (endsTheRun(error, ctx.signal)) throw error;
    noteFailure(result, error, block, child.family, log);
  }
  result.requests = paths.reduce((a, p) => a + ctx.client.requestsTo(organizationId, child.family, p), 0);
  result.verifiedAt = ctx.stamp.next();
  await recordResult(ctx, result);
  return result;
}

/** The API says the parent no longer exists: an envelope code of `sync.gone_codes` (A4). */
function isGone(ctx: VerifyContext, error: unknown): boolean {
  return error instanceof FatalError && error.code !== undefined && ctx.config.sync.gone_codes.includes(error.code);
}
