/**
 * A cap on the records a process holds between their response and their commit, across every
 * organization, stream, detail fan-out and connection it runs (`sync.max_records_in_flight`).
 * Memory then stays bounded by design: more organizations at once, or more fetches per
 * organization, wait for room instead of holding more pages.
 *
 * Rules that keep it from deadlocking:
 * - a unit of work takes its share before it fetches and gives it back after its commit, and
 *   never waits for more while it holds some (a pager gives its page back before it waits
 *   for the next one; a prefetch only takes room that is free at once);
 * - a share larger than the whole cap is granted when nothing else is held, so no page is
 *   refused for being large;
 * - a share holds what the answer brought (`Permit.resizeTo`): less than a full page gives the
 *   rest back; more (a parent's child list, which must be held whole until its commit, or a
 *   server that sends more than asked) goes past the cap without waiting, and the other units
 *   wait meanwhile.
 * Waiters are served in arrival order, so a large share is not passed over for ever.
 */
export class RecordBudget {
  private held = 0;
  private most = 0;
  private readonly waiters: Array<{ n: number; grant: () => void }> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`RecordBudget: limit must be a positive integer, got ${limit}`);
  }

  /** Records held now (for tests and the benchmark). */
  get inFlight(): number {
    return this.held;
  }

  /** The most records held at once so far. */
  get peak(): number {
    return this.most;
  }

  /** Waits until `n` records fit (or nothing else is held), then holds them. */
  acquire(n: number, signal?: AbortSignal): Promise<Permit> {
    signal?.throwIfAborted();
    if (this.waiters.length === 0 && this.fits(n)) return Promise.resolve(this.take(n));
    return new Promise<Permit>((resolve, reject) => {
      const waiter = {
        n,
        grant: (): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.take(n));
        },
      };
      const onAbort = (): void => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(signal!.reason as Error);
        // A large waiter leaving may let smaller ones behind it in.
        this.wake();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Holds `n` records if they fit now, without waiting and without jumping the queue; else null. */
  tryAcquire(n: number): Permit | null {
    return this.waiters.length === 0 && this.held + n <= this.limit ? this.take(n) : null;
  }

  private fits(n: number): boolean {
    return this.held === 0 || this.held + n <= this.limit;
  }

  private take(n: number): Permit {
    this.add(n);
    return new Permit(this, n);
  }

  /** @internal Permit's side. */
  give(n: number): void {
    this.held -= n;
    this.wake();
  }

  /** @internal Permit's side. */
  add(n: number): void {
    this.held += n;
    if (this.held > this.most) this.most = this.held;
  }

  private wake(): void {
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.n)) this.waiters.shift()!.grant();
  }
}

/** Records held from a RecordBudget; released once, whatever happens in between. */
export class Permit {
  private released = false;

  constructor(
    private readonly budget: RecordBudget,
    private n: number,
  ) {}

  get records(): number {
    return this.n;
  }

  /** Holds `extra` more records without waiting: for what must be committed together. */
  grow(extra: number): void {
    if (this.released || extra <= 0) return;
    this.n += extra;
    this.budget.add(extra);
  }

  /**
   * Gives back what it holds beyond `records`, once the answer shows how many came: a small
   * organization's page holds its 8 records, not the 200 it could have had.
   */
  shrinkTo(records: number): void {
    if (this.released || records >= this.n) return;
    const extra = this.n - Math.max(0, records);
    this.n -= extra;
    this.budget.give(extra);
  }

  /**
   * Holds exactly what arrived: less than reserved gives the rest back, more (a server that sends
   * more than it was asked for, a child list past its first page) is held without waiting.
   */
  resizeTo(records: number): void {
    if (records > this.n) this.grow(records - this.n);
    else this.shrinkTo(records);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.give(this.n);
  }
}

/** Runs `work` holding `n` records of `budget` (none when there is no budget), and gives them back however it ends. */
export async function holding<T>(
  budget: RecordBudget | undefined,
  n: number,
  signal: AbortSignal,
  work: (permit: Permit | null) => Promise<T>,
): Promise<T> {
  const permit = budget ? await budget.acquire(n, signal) : null;
  try {
    return await work(permit);
  } finally {
    permit?.release();
  }
}
