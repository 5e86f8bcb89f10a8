import { CompiledQuery } from 'kysely';
import type { AnyKysely } from '../db.js';
import type { SqlDialect } from '../sql-dialect.js';
import type { Timer } from '../../core/clock.js';
import type { WindowState } from '../../core/window-state.js';
import { rowFence } from './fence.js';
import {
  BUMP_UPSERT,
  DEFAULT_LEASE_TIMINGS,
  everyHeartbeat,
  HeldLease,
  handoverOf,
  localProcessGone,
  pollUntil,
  processOwner,
  windowJson,
  type AcquireOptions,
  type BumpRow,
  type Lease,
  type LeaseTimings,
  type OrgLeases,
} from './lease.js';

/** SQLite: the row is the lock; a heartbeat keeps it. */
export class SqliteOrgLeases implements OrgLeases {
  private readonly held = new Set<HeldLease>();
  private timer: Timer | null = null;
  private readonly owner = processOwner();

  constructor(
    private readonly db: AnyKysely,
    private readonly sql: SqlDialect,
    private readonly timings: LeaseTimings = DEFAULT_LEASE_TIMINGS,
  ) {}

  acquire(connection: string, organizationId: string, options: AcquireOptions): Promise<Lease | null> {
    return pollUntil(options, this.timings.pollMs, () => this.tryAcquire(connection, organizationId));
  }

  private async tryAcquire(connection: string, organizationId: string): Promise<Lease | null> {
    await this.expireIfOwnerDied(connection, organizationId);
    const now = this.timings.now();
    // One statement: SQLite serializes writers, so two processes cannot both see it free.
    const guard = ` WHERE _svcsync_leases.owner IS NULL OR _svcsync_leases.expires_at < ${this.sql.param(6)}`;
    const r = await this.db.executeQuery<BumpRow>(
      CompiledQuery.raw(BUMP_UPSERT(this.sql.param, guard), [
        connection,
        organizationId,
        this.owner,
        new Date(now).toISOString(),
        now + this.timings.ttlMs,
        now,
      ]),
    );
    const row = r.rows[0];
    if (!row) return null;
    const lease = new HeldLease(connection, organizationId, Number(row.generation), handoverOf(row), this.timings, (l, w) =>
      this.release(l, w),
    );
    lease.confirm(now);
    lease.fence = rowFence(
      this.sql,
      (p) =>
        `UPDATE _svcsync_leases SET generation = generation ` +
        `WHERE connection = ${p(1)} AND organization_id = ${p(2)} AND generation = ${p(3)}`,
      [connection, organizationId, lease.generation],
      lease.what,
      () => lease.lost(),
    );
    this.held.add(lease);
    this.timer ??= everyHeartbeat(this.timings, () => void this.heartbeat());
    return lease;
  }

  /**
   * A SQLite warehouse is a local file, so its owner usually ran on this host: when that process
   * is gone (killed, crashed), its lease is expired at once rather than after its heartbeat's
   * time-to-live. The takeover still counts as unclean (its owner never released), so the new
   * owner holds its first request for one window.
   */
  private async expireIfOwnerDied(connection: string, organizationId: string): Promise<void> {
    const p = this.sql.param;
    const r = await this.db.executeQuery<{ owner: string | null }>(
      CompiledQuery.raw(`SELECT owner FROM _svcsync_leases WHERE connection = ${p(1)} AND organization_id = ${p(2)}`, [
        connection,
        organizationId,
      ]),
    );
    const owner = r.rows[0]?.owner ?? null;
    if (owner === null || owner === this.owner || !localProcessGone(owner)) return;
    await this.db.executeQuery(
      CompiledQuery.raw(
        `UPDATE _svcsync_leases SET expires_at = 0 WHERE connection = ${p(1)} AND organization_id = ${p(2)} AND owner = ${p(3)}`,
        [connection, organizationId, owner],
      ),
    );
  }

  private async heartbeat(): Promise<void> {
    const sentAt = this.timings.now();
    const expires = sentAt + this.timings.ttlMs;
    for (const lease of this.held) {
      try {
        const r = await this.db.executeQuery(
          CompiledQuery.raw('UPDATE _svcsync_leases SET expires_at = ? WHERE connection = ? AND organization_id = ? AND generation = ?', [
            expires,
            lease.connection,
            lease.organizationId,
            lease.generation,
          ]),
        );
        if (Number(r.numAffectedRows ?? 0) !== 1) {
          lease.lose('taken_over', 'another process took it over after its heartbeat expired');
          this.held.delete(lease);
        } else lease.confirm(sentAt);
      } catch {
        // A busy warehouse: the next beat tries again; the fence guards the writes meanwhile.
      }
    }
  }

  private async release(lease: HeldLease, window: WindowState | null): Promise<void> {
    this.held.delete(lease);
    if (this.held.size === 0 && this.timer) {
      this.timer.cancel();
      this.timer = null;
    }
    await this.db.executeQuery(
      CompiledQuery.raw(
        'UPDATE _svcsync_leases SET owner = NULL, expires_at = NULL, window_json = ? ' +
          'WHERE connection = ? AND organization_id = ? AND generation = ?',
        [windowJson(window), lease.connection, lease.organizationId, lease.generation],
      ),
    );
  }

  async ownerOf(connection: string, organizationId: string): Promise<string | null> {
    const r = await this.db.executeQuery<{ owner: string | null; expires_at: number | null }>(
      CompiledQuery.raw('SELECT owner, expires_at FROM _svcsync_leases WHERE connection = ? AND organization_id = ?', [
        connection,
        organizationId,
      ]),
    );
    const row = r.rows[0];
    return row?.owner && Number(row.expires_at) >= this.timings.now() ? row.owner : null;
  }

  async close(): Promise<void> {
    await Promise.all([...this.held].map((l) => l.release()));
    this.timer?.cancel();
    this.timer = null;
  }
}
