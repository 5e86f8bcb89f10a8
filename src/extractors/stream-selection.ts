import type { Family } from '../catalog/families.js';
import type { StreamSpec } from '../catalog/types.js';
import { isOrganizationList, qualifiedName } from '../catalog/types.js';
import { childStreamsOf } from '../catalog/index.js';
import { requiredScopes } from '../api/scopes.js';
import { WarehouseError } from '../core/errors.js';
import type { LeaseLost } from '../loaders/lease/fence.js';
import { countPending } from '../state/pending.js';
import type { SyncContext } from './context.js';
import { detailIsEnabled } from './page-records.js';

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
export function whySkipped(why: {
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
export function deniedBy(stream: StreamSpec, denied: { scopes: ReadonlySet<string>; families: ReadonlySet<Family> }): string | null {
  if (denied.families.has(stream.family)) return 'not authorized for this family';
  if (denied.scopes.size === 0) return null;
  const missing = requiredScopes([stream], [stream.family]).find((s) => denied.scopes.has(s));
  return missing === undefined ? null : `not authorized: the token lacks scope ${missing}`;
}

/** Whether single-record reads of the stream are queued for the organization (work a held-back stream leaves undone). */
export async function detailsQueued(ctx: SyncContext, organizationId: string, stream: StreamSpec): Promise<boolean> {
  if (!detailIsEnabled(ctx, stream)) return false;
  const key = { connection: ctx.connection.name, organizationId, stream: qualifiedName(stream), kind: 'detail' as const };
  return (await countPending(ctx.warehouse.db, key)) > 0;
}
