import type { ApiClient } from '../api/client.js';
import type { OrgLimiter } from '../api/limiter.js';
import type { Family } from '../catalog/families.js';
import type { ConnectionConfig } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Fence, LeaseLost } from '../loaders/lease/fence.js';
import { applyHandover, processOwner } from '../loaders/lease/lease.js';
import type { Warehouse } from '../loaders/warehouse.js';
import type { ProgressReporter } from './context.js';
import type { OrganizationOutcome } from './stream-outcome.js';
import { raiseIfStopped, type StopRequest } from './stop.js';

/**
 * One organization, one owner (docs/design.md): whatever syncs an organization first takes its
 * lease, applies what the previous owner left of the per-minute window to the organization's
 * limiter, guards every request with the lease, and on the way out hands its own window on.
 */

/** What taking an organization's lease needs. */
export interface LeaseContext {
  warehouse: Warehouse;
  connection: ConnectionConfig;
  client: ApiClient;
  logger: Logger;
  clock: Clock;
  signal: AbortSignal;
  stop: StopRequest;
  progress?: ProgressReporter;
}

/** The work's result under the lease, or who held the organization instead (null when unknown). */
export type Leased<T> = { held: true; value: T } | { held: false; owner: string | null };

/**
 * Runs `work` while this process owns the organization, or returns who else does. With `wait`
 * it waits for the owner to let go (`svcsync sync --wait`); a stop request ends the wait.
 */
export async function withOrganizationLease<T>(
  ctx: LeaseContext,
  organizationId: string,
  wait: boolean,
  work: (fence: Fence) => Promise<T>,
): Promise<Leased<T>> {
  const connection = ctx.connection.name;
  const options = { signal: ctx.signal, check: () => raiseIfStopped(ctx) };
  let lease = await ctx.warehouse.leases.acquire(connection, organizationId, { ...options, wait: false });
  if (!lease && wait) {
    // A wait with no end in sight must say for whom it waits (at the default level).
    const owner = await ctx.warehouse.leases.ownerOf(connection, organizationId).catch(() => null);
    ctx.logger.warn(
      { organization_id: organizationId, owner },
      `organization ${organizationId} is being synced by another svcsync process (${owner ?? 'owner unknown'}); ` +
        'waiting for it to finish (--wait). A process that died lets go once its lease expires.',
    );
    lease = await ctx.warehouse.leases.acquire(connection, organizationId, { ...options, wait: true });
  }
  if (!lease) return { held: false, owner: await ctx.warehouse.leases.ownerOf(connection, organizationId).catch(() => null) };
  let limiter: OrgLimiter | null = null;
  let unguard: (() => void) | null = null;
  try {
    // The per-minute window across owners: the previous owner's, or a wait of one window.
    limiter = await ctx.client.limitsFor(organizationId);
    applyHandover(lease.handover, limiter, ctx.clock.now());
    // Every request for the organization first asks whether the lease still holds.
    unguard = limiter.addGuard(() => lease.assertHeld());
    if (lease.handover.kind === 'takeover') {
      // A wait of up to a minute with nothing to show for it must say why (at the default level), once.
      const until = ctx.clock.now() + limiter.limits.window_ms;
      const left = Math.ceil(limiter.limits.window_ms / 1000);
      ctx.logger.warn(
        { organization_id: organizationId, window_ms: limiter.limits.window_ms, wait_s: left },
        `organization ${organizationId}: the previous svcsync process ended without releasing it (killed, or cut off), so ` +
          `its requests of the last per-minute window are unknown; waiting ${left} s before the first request, ` +
          'to keep to the per-minute limit',
      );
      ctx.progress?.waiting?.({
        connection,
        organizationId,
        reason: 'the previous process was killed: holding one per-minute window',
        until,
      });
    }
    return { held: true, value: await work(lease.fence) };
  } finally {
    unguard?.();
    await lease.release(limiter?.windowState() ?? null);
  }
}

/**
 * Another live process owns the organization: it is left alone, with one log line naming the
 * owner. This run did not sync it, so it ends partial (exit 4) unless `--wait` was asked for.
 */
export function busyOutcome(
  ctx: Pick<LeaseContext, 'connection' | 'logger'>,
  organizationId: string,
  families: Family[],
  owner: string | null,
): OrganizationOutcome {
  const error =
    `organization ${organizationId} is being synced by another svcsync process (${owner ?? 'owner unknown'}); skipped. ` +
    'Run `svcsync sync --wait` to wait for it instead.';
  ctx.logger.warn({ organization_id: organizationId, owner }, error);
  return { connection: ctx.connection.name, organizationId, families, status: 'busy', streams: [], error };
}

/**
 * The organization's lease went while this run worked on it. Only when another process holds
 * it now is it "busy" (named); when this process's own connection ended, or the warehouse
 * stopped confirming the lease, the organization is a failure of this run, with that cause.
 */
export async function lostLease(
  ctx: Pick<LeaseContext, 'connection' | 'logger' | 'warehouse'>,
  base: OrganizationOutcome,
  error: LeaseLost,
): Promise<OrganizationOutcome> {
  const organizationId = base.organizationId;
  const owner = await ctx.warehouse.leases.ownerOf(ctx.connection.name, organizationId).catch(() => null);
  if (owner !== null && owner !== processOwner()) {
    const message =
      `organization ${organizationId}: another svcsync process (${owner}) took it over and carries on from the last committed page. ` +
      'Run `svcsync sync --wait` to wait for it instead.';
    ctx.logger.warn({ organization_id: organizationId, owner, err: error }, message);
    return { ...base, status: 'busy', error: message };
  }
  const message = `organization ${organizationId}: ${describeError(error)}`;
  ctx.logger.error({ organization_id: organizationId, err: error }, message);
  return { ...base, status: 'failed', failure: 'lease', error: message };
}
