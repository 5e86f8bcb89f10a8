import type { AcquireOptions, Lease, OrgLeases } from './lease.js';

/**
 * One lease per organization per process, shared by every run in it. A process may run several
 * jobs of one organization at once (the daemon's incremental and settings jobs touch different
 * streams); they share its lease rather than take it from each other: a Postgres advisory lock
 * is re-entrant within its session, so a second acquire would succeed and bump the generation,
 * and the first run's next commit would fail its fence. The lease goes when the last run lets go.
 */
export class ProcessLeases implements OrgLeases {
  private readonly shared = new Map<string, { lease: Promise<Lease | null>; users: number }>();

  /** The process-wide leases it shares (tests reach the Postgres session through it). */
  constructor(readonly inner: OrgLeases) {}

  async acquire(connection: string, organizationId: string, options: AcquireOptions): Promise<Lease | null> {
    const key = `${connection}\u0000${organizationId}`;
    let entry = this.shared.get(key);
    // Only the run that took the lease gets the handover: the process's limiter takes it once.
    let first = false;
    if (!entry) {
      entry = { lease: this.inner.acquire(connection, organizationId, options), users: 0 };
      this.shared.set(key, entry);
      first = true;
    }
    entry.users++;
    const lease = await entry.lease.catch((error: unknown) => {
      this.leave(key, entry);
      throw error;
    });
    if (lease === null) {
      this.leave(key, entry);
      return null;
    }
    let released = false;
    return {
      connection,
      organizationId,
      generation: lease.generation,
      fence: lease.fence,
      handover: first ? lease.handover : { kind: 'shared', window: null },
      assertHeld: () => lease.assertHeld(),
      release: async (window) => {
        if (released) return;
        released = true;
        // The last run out hands the window over (the process's limiter has every run's requests).
        if (this.leave(key, entry)) await lease.release(window);
      },
    };
  }

  /** One user fewer; true when it was the last (the entry is gone). */
  private leave(key: string, entry: { users: number }): boolean {
    entry.users--;
    if (entry.users > 0 || this.shared.get(key) !== entry) return false;
    this.shared.delete(key);
    return true;
  }

  ownerOf(connection: string, organizationId: string): Promise<string | null> {
    return this.inner.ownerOf(connection, organizationId);
  }

  close(): Promise<void> {
    this.shared.clear();
    return this.inner.close();
  }
}
