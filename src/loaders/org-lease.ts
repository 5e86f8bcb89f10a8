import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { CompiledQuery, type QueryResult } from 'kysely';
import pg from 'pg';
import type { WindowState } from '../core/window-state.js';
import { FatalError } from '../core/errors.js';
import type { AnyDb, AnyKysely } from './db.js';
import type { SqlDialect } from './sql-dialect.js';
import { displayWarehouseUrl } from './warehouse-errors.js';

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
 * on the run's injected clock, which tests scale.
 */

/** Proves, inside a transaction, that the organization's lease is still held. */
export interface Fence {
  /**
   * The statement run first in each transaction that writes the organization's data, or null
   * where no lease applies (verify, tests). Postgres: a `SELECT ... FOR SHARE` of the lease
   * row, so an acquirer's bump waits for the page to commit; SQLite: an `UPDATE` that takes
   * the write lock at once.
   */
  readonly query: CompiledQuery | null;
  /** Whether the statement's result shows the lease held. */
  holds(result: QueryResult<unknown>): boolean;
  /** The error to throw when it does not (or when the lease is known lost already). */
  lost(): LeaseLost | null;
  refusal(): LeaseLost;
}

export const noFence: Fence = {
  query: null,
  holds: () => true,
  lost: () => null,
  refusal: () => new LeaseLost('no lease', 'taken_over'),
};

/** Runs the fence's check in a transaction; throws LeaseLost (and so rolls it back) when the lease is gone. */
export async function checkFence(trx: AnyDb, fence: Fence): Promise<void> {
  const lost = fence.lost();
  if (lost) throw lost;
  if (!fence.query) return;
  const result = await trx.executeQuery(fence.query);
  if (!fence.holds(result)) throw fence.refusal();
}

/**
 * Why a lease was lost: another process took it over (its generation moved), this process's
 * own lock connection ended (a restart, an administrator, a network fault), or the warehouse
 * stopped confirming it (this process was paused or cut off).
 */
export type LeaseLossReason = 'taken_over' | 'connection_ended' | 'unconfirmed';

const LOSS_HINTS: Record<LeaseLossReason, string> = {
  taken_over:
    'Another svcsync process (daemon, worker or sync) now owns this organization and carries on from the last committed page; ' +
    'nothing is lost.',
  connection_ended:
    "This process's own connection to the warehouse ended, so it stopped writing for this organization; nothing committed is " +
    'lost. Check the warehouse server, then run again: the run continues from the last committed page.',
  unconfirmed:
    'The warehouse did not confirm the lease in time (this process was paused, or cut off from the warehouse); nothing committed ' +
    'is lost. Run again: the run continues from the last committed page.',
};

/**
 * This process no longer owns the organization. The transaction that found out wrote nothing;
 * the organization's work in this process ends (the stream layer lets it through, like a stop).
 */
export class LeaseLost extends FatalError {
  constructor(
    message: string,
    readonly reason: LeaseLossReason = 'taken_over',
  ) {
    super(message, { hint: LOSS_HINTS[reason] });
  }
}

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

function handoverOf(row: { handover?: string | null; window_json?: string | null }): Handover {
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

const windowJson = (window: WindowState | null | undefined): string | null => (window ? JSON.stringify(window) : null);

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

async function pollUntil<T>(options: AcquireOptions, pollMs: number, attempt: () => Promise<T | null>): Promise<T | null> {
  for (;;) {
    options.check?.();
    options.signal?.throwIfAborted();
    const got = await attempt();
    if (got !== null || !options.wait) return got;
    await sleep(pollMs, options.signal);
  }
}

function rowFence(
  sql: SqlDialect,
  text: (p: (n: number) => string) => string,
  params: unknown[],
  what: string,
  lost: () => LeaseLost | null,
): Fence {
  const query = CompiledQuery.raw(text(sql.param), params);
  return {
    query,
    holds: (r) => r.rows.length === 1 || Number(r.numAffectedRows ?? 0) === 1,
    lost,
    refusal: () => new LeaseLost(`${what} was taken over by another process; this page was not written`, 'taken_over'),
  };
}

class HeldLease implements Lease {
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
const BUMP_UPSERT = (p: (n: number) => string, guard: string): string =>
  `INSERT INTO _svcsync_leases (connection, organization_id, generation, owner, acquired_at, expires_at, handover) ` +
  `VALUES (${p(1)}, ${p(2)}, 1, ${p(3)}, ${p(4)}, ${p(5)}, 'first') ON CONFLICT (connection, organization_id) DO UPDATE SET ` +
  `generation = _svcsync_leases.generation + 1, owner = excluded.owner, acquired_at = excluded.acquired_at, ` +
  `expires_at = excluded.expires_at, ` +
  `handover = CASE WHEN _svcsync_leases.owner IS NULL THEN 'clean' ELSE 'takeover' END${guard} ` +
  `RETURNING generation, handover, window_json`;

interface BumpRow {
  generation: number | string;
  handover: string | null;
  window_json: string | null;
}

/** SQLite: the row is the lock; a heartbeat keeps it. */
export class SqliteOrgLeases implements OrgLeases {
  private readonly held = new Set<HeldLease>();
  private timer: NodeJS.Timeout | null = null;
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
    this.timer ??= setInterval(() => void this.heartbeat(), this.timings.heartbeatMs).unref();
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
      clearInterval(this.timer);
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
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** A 64-bit advisory lock key (signed, as Postgres takes it) from the schema, connection and organization. */
export function advisoryKey(schema: string, connection: string, organizationId: string): string {
  const digest = createHash('sha256').update(`svcsync\0${schema}\0${connection}\0${organizationId}`).digest();
  return digest.readBigInt64BE(0).toString();
}

/** Postgres: session advisory locks on one dedicated connection per process. */
export class PostgresOrgLeases implements OrgLeases {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private schema = 'public';
  private keepalive: NodeJS.Timeout | null = null;
  private readonly held = new Set<HeldLease>();
  private readonly owner = processOwner();
  /** The lock session's work, one sequence at a time (a pg client must not be handed a query while one runs). */
  private queue: Promise<unknown> = Promise.resolve();
  /** The warehouse as messages name it (no password). */
  private readonly displayUrl: string;

  constructor(
    private readonly url: string,
    private readonly sql: SqlDialect,
    private readonly timings: LeaseTimings = DEFAULT_LEASE_TIMINGS,
  ) {
    this.displayUrl = displayWarehouseUrl(url);
  }

  /** The lock session's backend pid (tests end it to act out a lost connection). */
  async sessionPid(): Promise<number> {
    const c = await this.session();
    return (c as unknown as { processID: number }).processID;
  }

  /**
   * Runs `work` on the lock session after the sequences queued before it. A lock, its bump and
   * its unlock stay together, and concurrent acquires for different organizations take turns
   * instead of stacking queries on one client (deprecated in pg 8, removed in pg 9).
   */
  private serial<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const next = this.queue.then(async () => work(await this.session()));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private session(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.url,
      keepAlive: true,
      keepAliveInitialDelayMillis: this.timings.heartbeatMs,
      application_name: `svcsync-lease ${this.owner}`,
    });
    const gone = (why: string): void => {
      if (this.client !== client) return;
      this.client = null;
      if (this.keepalive) clearInterval(this.keepalive);
      this.keepalive = null;
      // The session's locks went with it: every lease it held is lost.
      for (const lease of this.held) lease.lose('connection_ended', `its lock connection to ${this.displayUrl} ended (${why})`);
      this.held.clear();
    };
    client.on('error', (e) => gone(e.message));
    client.on('end', () => gone('closed'));
    await client.connect();
    await client.query(`SET idle_session_timeout = ${Math.max(1, Math.round(this.timings.ttlMs))}`);
    const r = await client.query<{ s: string }>('SELECT current_schema() AS s');
    this.schema = r.rows[0]?.s ?? 'public';
    this.client = client;
    this.keepalive = setInterval(() => {
      if (this.client !== client) return;
      const sentAt = this.timings.now();
      this.serial(async (c) => {
        if (c !== client) return;
        await c.query('SELECT 1');
        // The session answered, so it (and every lock it holds) was alive when this was sent.
        for (const lease of this.held) lease.confirm(sentAt);
      }).catch(() => undefined);
    }, this.timings.heartbeatMs).unref();
    return client;
  }

  acquire(connection: string, organizationId: string, options: AcquireOptions): Promise<Lease | null> {
    return pollUntil(options, this.timings.pollMs, () => this.tryAcquire(connection, organizationId));
  }

  private tryAcquire(connection: string, organizationId: string): Promise<Lease | null> {
    return this.serial((client) => this.lockAndBump(client, connection, organizationId));
  }

  private async lockAndBump(client: pg.Client, connection: string, organizationId: string): Promise<Lease | null> {
    const key = advisoryKey(this.schema, connection, organizationId);
    const got = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [key]);
    if (!got.rows[0]?.ok) return null;
    try {
      // The lock is ours, so whoever held the organization before has lost it: bump unconditionally.
      const r = await client.query<BumpRow>(BUMP_UPSERT(this.sql.param, ''), [
        connection,
        organizationId,
        this.owner,
        new Date(this.timings.now()).toISOString(),
        null,
      ]);
      const row = r.rows[0]!;
      const lease = new HeldLease(connection, organizationId, Number(row.generation), handoverOf(row), this.timings, (l, w) =>
        this.release(l, key, w),
      );
      lease.fence = rowFence(
        this.sql,
        (p) =>
          `SELECT generation FROM _svcsync_leases WHERE connection = ${p(1)} AND organization_id = ${p(2)} ` +
          `AND generation = ${p(3)} FOR SHARE`,
        [connection, organizationId, lease.generation],
        lease.what,
        () => lease.lost(),
      );
      this.held.add(lease);
      return lease;
    } catch (error) {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [key]).catch(() => undefined);
      throw error;
    }
  }

  private async release(lease: HeldLease, key: string, window: WindowState | null): Promise<void> {
    if (!this.held.delete(lease)) return;
    const client = this.client;
    if (!client) return;
    await this.serial(async (c) => {
      // A new session (the old one ended) holds neither the lock nor the lease: nothing to give back.
      if (c !== client) return;
      await c.query(
        'UPDATE _svcsync_leases SET owner = NULL, window_json = $1 WHERE connection = $2 AND organization_id = $3 AND generation = $4',
        [windowJson(window), lease.connection, lease.organizationId, lease.generation],
      );
      await c.query('SELECT pg_advisory_unlock($1::bigint)', [key]);
    });
  }

  async ownerOf(connection: string, organizationId: string): Promise<string | null> {
    const r = await this.serial((c) =>
      c.query<{ owner: string | null }>('SELECT owner FROM _svcsync_leases WHERE connection = $1 AND organization_id = $2', [
        connection,
        organizationId,
      ]),
    );
    return r.rows[0]?.owner ?? null;
  }

  async close(): Promise<void> {
    await Promise.all([...this.held].map((l) => l.release()));
    const client = this.client;
    this.client = null;
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = null;
    await client?.end().catch(() => undefined);
  }
}

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
