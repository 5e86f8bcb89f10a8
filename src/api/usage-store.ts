/** One organization's request count for one quota day, and a server-imposed block. */
export interface UsageRecord {
  organizationId: string;
  /** yyyy-mm-dd in the quota reset zone. */
  day: string;
  /**
   * Requests of the day's budget taken so far by every svcsync process: sent, or reserved by a
   * process that has not sent or returned them yet (raised to the server's count when higher).
   */
  count: number;
  /** Epoch ms until which the server said the quota is spent (429 code 45), or null. */
  blockedUntil: number | null;
  /** When the day ends, where the server told it (`X-Rate-Limit-Reset`); null: midnight in the reset zone. */
  resetsAt: number | null;
}

/** What a reservation got: `granted` requests (0..n) and the day's count after it. */
export interface Reservation {
  granted: number;
  used: number;
}

/**
 * Where the daily count lives. The warehouse's state tables implement it so that every process
 * writing to one warehouse shares one count (src/state/usage-store.ts); reserve is atomic there.
 */
export interface UsageStore {
  /** The organization's latest day: its count and any block. */
  load(organizationId: string): Promise<UsageRecord | null>;
  /**
   * Takes up to n requests of the day's budget in one atomic step: min(n, budget - count),
   * never below 0, so processes reserving side by side never together pass the budget.
   */
  reserve(organizationId: string, day: string, n: number, budget: number): Promise<Reservation>;
  /** Gives back n reserved requests that were not sent (the count never goes below 0). */
  release(organizationId: string, day: string, n: number): Promise<void>;
  /** Raises the day's count to at least `count` (the server counts more than svcsync took). */
  raise(organizationId: string, day: string, count: number): Promise<void>;
  /** The server said the quota is spent until `until` (epoch ms). */
  block(organizationId: string, day: string, until: number): Promise<void>;
  /** The server said the day ends at `resetsAt` (epoch ms). */
  markReset(organizationId: string, day: string, resetsAt: number): Promise<void>;
}

/** The store for tests and single-process tools; the same arithmetic as the warehouse's. */
export class MemoryUsageStore implements UsageStore {
  private readonly records = new Map<string, UsageRecord>();
  /** Calls received, for tests that check reservations come in chunks. */
  reserves = 0;
  releases = 0;

  load(organizationId: string): Promise<UsageRecord | null> {
    let latest: UsageRecord | null = null;
    for (const r of this.records.values()) {
      if (r.organizationId === organizationId && (latest === null || r.day > latest.day)) latest = r;
    }
    return Promise.resolve(latest ? { ...latest } : null);
  }

  reserve(organizationId: string, day: string, n: number, budget: number): Promise<Reservation> {
    this.reserves++;
    const r = this.row(organizationId, day);
    const granted = Math.max(0, Math.min(n, budget - r.count));
    r.count += granted;
    return Promise.resolve({ granted, used: r.count });
  }

  release(organizationId: string, day: string, n: number): Promise<void> {
    this.releases++;
    const r = this.row(organizationId, day);
    r.count = Math.max(0, r.count - n);
    return Promise.resolve();
  }

  raise(organizationId: string, day: string, count: number): Promise<void> {
    const r = this.row(organizationId, day);
    r.count = Math.max(r.count, count);
    return Promise.resolve();
  }

  block(organizationId: string, day: string, until: number): Promise<void> {
    this.row(organizationId, day).blockedUntil = until;
    return Promise.resolve();
  }

  markReset(organizationId: string, day: string, resetsAt: number): Promise<void> {
    this.row(organizationId, day).resetsAt = resetsAt;
    return Promise.resolve();
  }

  private row(organizationId: string, day: string): UsageRecord {
    const key = `${organizationId}\u0000${day}`;
    let r = this.records.get(key);
    if (!r) {
      r = { organizationId, day, count: 0, blockedUntil: null, resetsAt: null };
      this.records.set(key, r);
    }
    return r;
  }
}
