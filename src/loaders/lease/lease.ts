import { hostname } from 'node:os';
import type { Clock, Timer } from '../../core/clock.js';
import type { WindowState } from '../../core/window-state.js';
import { LeaseLost, type Fence, type LeaseLossReason } from './fence.js';

/**
 * One organization, one owner (issue 12). Whatever starts a sync (the daemon, a worker, a
 * hand-run `svcsync sync`) first takes the organization's lease from the warehouse's
 * `OrgLeases`, chosen once per warehouse like its `SqlDialect`:
 *
 * - Postgres: a session advisory lock on a connection of its own per process (not the pool),
 *   with `idle_session_timeout` and TCP keepalives, so a hung process's session, and its
 *   locks, end; a keepalive query keeps a healthy process's session alive.
 * - SQLite: the `_svcsync_leases` row is the lock, taken with one conditional upsert; the
 *   owner's heartbeat pushes `expires_at` forward, and a lease past it may be taken over.
 *
 * Either way every acquire bumps the row's `generation`, and each page's transaction runs the
 * lease's `Fence` first: it fails when the generation moved (another process took over), so
 * a process paused past its lease cannot commit.
 *
 * Leases are between OS processes, so they run on wall time (`Date.now` and real timers), not
 * on the run's injected clock, which tests scale. Tests give `LeaseTimings` a clock of their own.
 */

/**
 * How the organization came to this owner, for its per-minute window (issue 12):
 * - `first`: nobody held it before (or only a version without window handover);
 * - `clean`: the previous owner released it and handed over its window (null if it wrote none);
 * - `takeover`: the previous owner did not release (lost lock, expired heartbeat); its requests
 *   of the last window are unknown, so the new owner waits one `window_ms` before its first;
 * - `shared`: this process held it already (ProcessLeases); its limiter has the window.
 */
export type Handover = { kind: 'first' | 'takeover' | 'shared'; window: null } | { kind: 'clean'; window: WindowState | null };

export interface Lease {
  readonly connection: string;
  readonly organizationId: string;
  /** The lease row's generation at acquire; the fence compares with it. */
  readonly generation: number;
  readonly fence: Fence;
  /** What the previous owner left (applyHandover puts it on the limiter). */
  readonly handover: Handover;
  /** Throws LeaseLost when the lease is known to be gone (without asking the warehouse). */
  assertHeld(): void;
  /**
   * Gives the organization up (idempotent). Never throws. `window`, the limiter's window
   * (OrgLimiter.windowState), goes to the row in the statement that releases.
   */
  release(window?: WindowState | null): Promise<void>;
}

/** A window read back from the row; anything malformed reads as none. */
export function parseWindow(text: string | null | undefined): WindowState | null {
  if (typeof text !== 'string') return null;
  try {
    const v = JSON.parse(text) as { freeAt?: unknown; notBefore?: unknown };
    if (!Array.isArray(v.freeAt) || !v.freeAt.every((t) => typeof t === 'number')) return null;
    const notBefore = typeof v.notBefore === 'number' ? v.notBefore : null;
    return { freeAt: v.freeAt, notBefore };
  } catch {
    return null;
  }
}

export function handoverOf(row: { handover?: string | null; window_json?: string | null }): Handover {
  if (row.handover === 'clean') return { kind: 'clean', window: parseWindow(row.window_json) };
  if (row.handover === 'takeover') return { kind: 'takeover', window: null };
  return { kind: 'first', window: null };
}

/**
 * Puts the previous owner's window on this owner's limiter (its core stays clock-driven): a
 * clean handover seeds the slots still held; a takeover holds every request until one
 * `window_ms` from now.
 */
export function applyHandover(
  handover: Handover,
  limiter: { seedWindow(s: WindowState): void; holdUntil(t: number): void; limits: { window_ms: number } },
  now: number,
): void {
  if (handover.kind === 'clean' && handover.window) limiter.seedWindow(handover.window);
  if (handover.kind === 'takeover') limiter.holdUntil(now + limiter.limits.window_ms);
}

export const windowJson = (window: WindowState | null | undefined): string | null => (window ? JSON.stringify(window) : null);

export interface AcquireOptions {
  /** Wait until the current owner lets go (polling), else return null at once when it is owned. */
  wait: boolean;
  /** Ends a wait: called before each poll, may throw (a stop request). */
  check?: () => void;
  signal?: AbortSignal;
}

export interface OrgLeases {
  /** The organization's lease, or null when another process owns it and `wait` is false. */
  acquire(connection: string, organizationId: string, options: AcquireOptions): Promise<Lease | null>;
  /** Who owns it now, for the skip message. */
  ownerOf(connection: string, organizationId: string): Promise<string | null>;
  close(): Promise<void>;
}

export interface LeaseTimings {
  /** Postgres: the lock session's `idle_session_timeout`. SQLite: how long a lease lasts without a heartbeat. */
  ttlMs: number;
  /** Postgres: the keepalive query's period. SQLite: the heartbeat's. */
  heartbeatMs: number;
  /** How often a waiting acquirer asks again. */
  pollMs: number;
  /** Wall time (tests move it). */
  now: () => number;
  /** What fires heartbeats and keepalives: real, unref'd intervals unless a test drives them with a FakeClock. */
  clock?: Clock;
}

export const DEFAULT_LEASE_TIMINGS: LeaseTimings = { ttlMs: 30_000, heartbeatMs: 5_000, pollMs: 1_000, now: () => Date.now() };

/** `host/pid`: who holds a lease, in the row and in messages. */
export function processOwner(): string {
  return `${hostname()}/${process.pid}`;
}

/** Whether `host/pid` names a process of this host that no longer exists. */
export function localProcessGone(owner: string): boolean {
  const at = owner.lastIndexOf('/');
  const pid = Number(owner.slice(at + 1));
  if (owner.slice(0, at) !== hostname() || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Calls `fn` every `heartbeatMs` (a heartbeat or keepalive). A real interval is unref'd: a lease
 * must not keep a process alive that has nothing else to do.
 */
export function everyHeartbeat(timings: LeaseTimings, fn: () => void): Timer {
  const clock = timings.clock;
  if (!clock) {
    const handle = setInterval(fn, timings.heartbeatMs).unref();
    return { cancel: () => clearInterval(handle) };
  }
  let timer: Timer;
  const arm = (): void => {
    timer = clock.setTimeout(() => {
      arm();
      fn();
    }, timings.heartbeatMs);
  };
  arm();
  return { cancel: () => timer.cancel() };
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export async function pollUntil<T>(options: AcquireOptions, pollMs: number, attempt: () => Promise<T | null>): Promise<T | null> {
  for (;;) {
    options.check?.();
    options.signal?.throwIfAborted();
    const got = await attempt();
    if (got !== null || !options.wait) return got;
    await sleep(pollMs, options.signal);
  }
}

/** A lease this process holds, shared by the backends: what it knows of being lost, and how it lets go. */
export class HeldLease implements Lease {
  private released = false;
  lostReason: string | null = null;
  lostKind: LeaseLossReason = 'taken_over';
  /** Marks the lease lost (the first reason stays). */
  lose(kind: LeaseLossReason, reason: string): void {
    if (this.lostReason !== null) return;
    this.lostKind = kind;
    this.lostReason = reason;
  }
  fence!: Fence;
  /** When the warehouse last confirmed the lease (acquire, keepalive, heartbeat): sent-at time, wall clock. */
  confirmedAt: number;
  constructor(
    readonly connection: string,
    readonly organizationId: string,
    readonly generation: number,
    readonly handover: Handover,
    private readonly timings: LeaseTimings,
    private readonly onRelease: (lease: HeldLease, window: WindowState | null) => Promise<void>,
  ) {
    this.confirmedAt = timings.now();
  }
  get what(): string {
    return `the lease on organization ${this.organizationId} of connection ${this.connection} (generation ${this.generation})`;
  }
  /** Confirmed by a keepalive or heartbeat sent at `at`. */
  confirm(at: number): void {
    this.confirmedAt = Math.max(this.confirmedAt, at);
  }
  lost(): LeaseLost | null {
    // Unconfirmed for nearly its time-to-live (this process was paused, or cut off from the
    // warehouse), the lease may already be another's: give it up before sending or writing
    // anything, rather than find out from the other owner's requests. One heartbeat of margin.
    const silent = this.timings.now() - this.confirmedAt;
    if (silent > this.timings.ttlMs - Math.min(this.timings.heartbeatMs, this.timings.ttlMs / 3))
      this.lose('unconfirmed', `not confirmed by the warehouse for ${Math.round(silent / 1000)} s (this process was paused or cut off)`);
    return this.lostReason === null ? null : new LeaseLost(`${this.what} was lost: ${this.lostReason}`, this.lostKind);
  }
  assertHeld(): void {
    const lost = this.lost();
    if (lost) throw lost;
  }
  async release(window?: WindowState | null): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.onRelease(this, window ?? null).catch(() => undefined);
  }
}

// `handover` records how the row was found: owner cleared (a clean release) or not (a takeover).
export const BUMP_UPSERT = (p: (n: number) => string, guard: string): string =>
  `INSERT INTO _svcsync_leases (connection, organization_id, generation, owner, acquired_at, expires_at, handover) ` +
  `VALUES (${p(1)}, ${p(2)}, 1, ${p(3)}, ${p(4)}, ${p(5)}, 'first') ON CONFLICT (connection, organization_id) DO UPDATE SET ` +
  `generation = _svcsync_leases.generation + 1, owner = excluded.owner, acquired_at = excluded.acquired_at, ` +
  `expires_at = excluded.expires_at, ` +
  `handover = CASE WHEN _svcsync_leases.owner IS NULL THEN 'clean' ELSE 'takeover' END${guard} ` +
  `RETURNING generation, handover, window_json`;

export interface BumpRow {
  generation: number | string;
  handover: string | null;
  window_json: string | null;
}
