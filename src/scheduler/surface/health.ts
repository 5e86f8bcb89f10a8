import type { ConnectionFailure } from '../../extractors/sync-run.js';
import type { AuthorizationSeen } from '../../state/connection-auth.js';

/**
 * What state a stream, an organization and a connection are in, whether the fleet is healthy
 * and whether this process can work: the pure decisions behind the status document, the page,
 * `svcsync status`, `/healthz/fleet` and `/healthz`, so all of them say the same thing.
 */

export type Freshness = 'fresh' | 'late' | 'stale' | 'never' | 'unscheduled';

/** How a stream's last success compares with its schedule: fresh within 1.5 periods (plus a minute), late within 3, then stale. */
export function freshness(stream: { lastSuccessAt: string | null; expectedEverySeconds: number | null }, now: number): Freshness {
  if (!stream.lastSuccessAt) return 'never';
  if (stream.expectedEverySeconds === null) return 'unscheduled';
  const age = (now - Date.parse(stream.lastSuccessAt)) / 1000;
  if (age <= stream.expectedEverySeconds * 1.5 + 60) return 'fresh';
  if (age <= stream.expectedEverySeconds * 3 + 60) return 'late';
  return 'stale';
}

export interface StreamHealthInput {
  stream: string;
  lastStatus: string | null;
  lastError: string | null;
  lastSuccessAt: string | null;
  expectedEverySeconds: number | null;
}

/** The stream's last run ended with an error it recorded. */
export function streamFailed(s: Pick<StreamHealthInput, 'lastStatus' | 'lastError'>): boolean {
  return s.lastStatus !== null && s.lastStatus !== 'ok' && Boolean(s.lastError);
}

export type Health = 'failing' | 'stale' | 'waiting' | 'ok';
export const HEALTH_ORDER: Record<Health, number> = { failing: 0, stale: 1, waiting: 2, ok: 3 };

const named = (what: string, streams: readonly StreamHealthInput[]): string => {
  const names = streams.slice(0, 3).map((s) => s.stream);
  const more = streams.length > 3 ? `, and ${streams.length - 3} more` : '';
  return `${streams.length} stream${streams.length === 1 ? '' : 's'} ${what}: ${names.join(', ')}${more}`;
};

/**
 * An organization's worst state, and why: its connection cannot authorize (then nothing of it
 * can sync, whatever its streams last did), a stream whose last run failed, one stale, one
 * never synced. A late stream leaves it ok, with a reason.
 */
export function organizationHealth(
  streams: readonly StreamHealthInput[],
  failingConnection: string | null,
  now: number,
): { state: Health; reason: string | null } {
  if (failingConnection !== null) return { state: 'failing', reason: `connection ${failingConnection} cannot authorize` };
  const failed = streams.filter(streamFailed);
  if (failed.length) return { state: 'failing', reason: named('failing', failed) };
  const f = streams.map((s) => freshness(s, now));
  const stale = streams.filter((_, i) => f[i] === 'stale');
  if (stale.length) return { state: 'stale', reason: named('stale', stale) };
  if (streams.length === 0) return { state: 'waiting', reason: 'not synced yet' };
  const never = streams.filter((_, i) => f[i] === 'never');
  if (never.length) return { state: 'waiting', reason: named('never synced', never) };
  const late = streams.filter((_, i) => f[i] === 'late');
  return { state: 'ok', reason: late.length ? named('late', late) : null };
}

/** Failing organizations first, then stale, waiting and healthy ones; by connection and name within each. */
export function sortOrganizations<T extends { connection: string; organizationId: string; name: string | null; state: Health }>(
  orgs: readonly T[],
): T[] {
  return [...orgs].sort(
    (a, b) =>
      HEALTH_ORDER[a.state] - HEALTH_ORDER[b.state] ||
      a.connection.localeCompare(b.connection) ||
      (a.name ?? a.organizationId).localeCompare(b.name ?? b.organizationId),
  );
}

/** `failing`: the service refused its token last time; `unknown`: no run has used it yet. */
export type ConnectionState = 'failing' | 'ok' | 'unknown';

const HINT_MARK = '\n  → ';

/**
 * What one run says about a connection's authorization: refused when the run ended the
 * connection for a refused token (`connectionFailures`, kind `authorization`), accepted when
 * any of its requests was answered, and nothing when it cannot tell (every request failed for
 * another reason, or none was sent).
 */
export function authorizationOf(
  connection: string,
  failures: readonly ConnectionFailure[],
  answered: number,
  at: number,
): AuthorizationSeen | null {
  const refused = failures.find((f) => f.connection === connection && f.kind === 'authorization');
  if (refused) {
    const cut = refused.error.indexOf(HINT_MARK);
    const error = cut < 0 ? refused.error : refused.error.slice(0, cut);
    const hint = cut < 0 ? null : refused.error.slice(cut + HINT_MARK.length).replace(/\n\s+/g, ' ');
    return { connection, result: 'refused', at, error, hint };
  }
  if (answered > 0) return { connection, result: 'ok', at, error: null, hint: null };
  return null;
}

/**
 * What one run says about each connection it was asked to sync (see `authorizationOf`): a
 * connection whose organizations were discovered was accepted, since discovery is answered only
 * to an authorized token.
 */
export function authorizationsOfRun(
  summary: { organizations: ReadonlyArray<{ connection: string }>; connectionFailures: readonly ConnectionFailure[] },
  connections: readonly string[],
  at: number,
): AuthorizationSeen[] {
  return connections
    .map((c) => authorizationOf(c, summary.connectionFailures, summary.organizations.filter((o) => o.connection === c).length, at))
    .filter((seen): seen is AuthorizationSeen => seen !== null);
}

/** What `/healthz/fleet` answers: `failing` (503) names the connections and organizations behind it. */
export interface HealthReport {
  status: 'ok' | 'failing';
  /** Connections that cannot authorize, each with the error and the hint. */
  failingConnections: Array<{ connection: string; error: string | null; hint: string | null; since: string | null }>;
  organizations: {
    total: number;
    failing: number;
    /** failing / total (0 without organizations). */
    ratio: number;
    /** `daemon.health.max_failing_ratio`: more than this is unhealthy. */
    maxFailingRatio: number;
    /** The first few failing organizations, with why. */
    examples: Array<{ connection: string; organizationId: string; reason: string | null }>;
  };
}

const EXAMPLES = 10;

/** Unhealthy when a connection cannot authorize, or more than `maxFailingRatio` of the organizations are failing. */
export function healthVerdict(
  input: {
    connections: ReadonlyArray<{
      connection: string;
      state: ConnectionState;
      authorization: { error: string | null; hint: string | null; failingSince: string | null } | null;
    }>;
    organizations: ReadonlyArray<{ connection: string; organizationId: string; state: Health; stateReason: string | null }>;
  },
  maxFailingRatio: number,
): HealthReport {
  const failingConnections = input.connections
    .filter((c) => c.state === 'failing')
    .map((c) => ({
      connection: c.connection,
      error: c.authorization?.error ?? null,
      hint: c.authorization?.hint ?? null,
      since: c.authorization?.failingSince ?? null,
    }));
  const failing = input.organizations.filter((o) => o.state === 'failing');
  const total = input.organizations.length;
  const ratio = total === 0 ? 0 : failing.length / total;
  return {
    status: failingConnections.length > 0 || ratio > maxFailingRatio ? 'failing' : 'ok',
    failingConnections,
    organizations: {
      total,
      failing: failing.length,
      ratio: Math.round(ratio * 1000) / 1000,
      maxFailingRatio,
      examples: failing
        .slice(0, EXAMPLES)
        .map((o) => ({ connection: o.connection, organizationId: o.organizationId, reason: o.stateReason })),
    },
  };
}

/**
 * A process's job loop as `/healthz` sees it: the daemon's scheduler or a worker's subscription
 * to the queue, `starting` until it takes jobs, `stopping` once shutdown began.
 */
export interface JobLoopState {
  state: 'starting' | 'running' | 'stopping';
  /** Since when (epoch ms) the scheduler's tick, which starts every job, has been running; null when it is not. */
  tickSince: number | null;
}

/** What the probe of the warehouse found: a trivial query answered, or why not. */
export type WarehouseReach = { reachable: true; ms: number } | { reachable: false; error: string };

/** What `/healthz` answers for this process; only `ok` is 200. */
export interface ReadinessReport {
  status: 'ok' | 'starting' | 'failing';
  /** Why it is not ok, one line each; empty when it is. */
  reasons: string[];
  jobs: { state: JobLoopState['state']; tickRunningSeconds: number | null };
  warehouse: { reachable: boolean; ms: number | null; error: string | null };
}

/**
 * A tick that runs this long has hung (a query that never returns): no job of this process
 * starts until it ends. A tick admits every job due at once, a few milliseconds each, so even a
 * thousand organizations' fire takes a minute or two.
 */
export const STUCK_TICK_MS = 10 * 60_000;

/**
 * Whether this process can do its work: its job loop runs (started, not hung) and its warehouse
 * answers. Nothing of the fleet enters: a connection that cannot log in fails the same way on
 * every process, and restarting one mends nothing (that is `/healthz/fleet`'s and the page's).
 */
export function readinessVerdict(
  jobs: Exclude<JobLoopState, { state: 'stopping' }>,
  warehouse: WarehouseReach,
  now: number,
): ReadinessReport {
  const reasons: string[] = [];
  const tickMs = jobs.tickSince === null ? null : Math.max(0, now - jobs.tickSince);
  if (!warehouse.reachable) reasons.push(`the warehouse cannot be read: ${warehouse.error}`);
  if (tickMs !== null && tickMs >= STUCK_TICK_MS)
    reasons.push(`the scheduler's tick has run for ${Math.round(tickMs / 60_000)} min: no job starts until it ends; restart the process`);
  let status: ReadinessReport['status'] = reasons.length ? 'failing' : 'ok';
  if (status === 'ok' && jobs.state === 'starting') {
    status = 'starting';
    reasons.push('starting: loading the organizations and the schedules');
  }
  return {
    status,
    reasons,
    jobs: { state: jobs.state, tickRunningSeconds: tickMs === null ? null : Math.round(tickMs / 1000) },
    warehouse: warehouse.reachable
      ? { reachable: true, ms: warehouse.ms, error: null }
      : { reachable: false, ms: null, error: warehouse.error },
  };
}
