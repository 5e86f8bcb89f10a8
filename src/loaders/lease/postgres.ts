import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Timer } from '../../core/clock.js';
import type { WindowState } from '../../core/window-state.js';
import type { SqlDialect } from '../sql-dialect.js';
import { displayWarehouseUrl } from '../warehouse-errors.js';
import { rowFence } from './fence.js';
import {
  BUMP_UPSERT,
  DEFAULT_LEASE_TIMINGS,
  everyHeartbeat,
  HeldLease,
  handoverOf,
  pollUntil,
  processOwner,
  windowJson,
  type AcquireOptions,
  type BumpRow,
  type Lease,
  type LeaseTimings,
  type OrgLeases,
} from './lease.js';

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
  private keepalive: Timer | null = null;
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
      this.keepalive?.cancel();
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
    this.keepalive = everyHeartbeat(this.timings, () => {
      if (this.client !== client) return;
      const sentAt = this.timings.now();
      this.serial(async (c) => {
        if (c !== client) return;
        await c.query('SELECT 1');
        // The session answered, so it (and every lock it holds) was alive when this was sent.
        for (const lease of this.held) lease.confirm(sentAt);
      }).catch(() => undefined);
    });
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
    this.keepalive?.cancel();
    this.keepalive = null;
    await client?.end().catch(() => undefined);
  }
}
