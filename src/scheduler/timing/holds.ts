import type { Clock } from '../../core/clock.js';
import type { JobOutcome } from './job-run.js';
import type { JobSpec } from './jobs.js';

/** Why a scope's jobs may not start yet, and until when (epoch ms). */
export interface Hold {
  kind: 'backoff' | 'paused';
  until: number;
  reason: string;
}

/** Where failures are counted: an organization, or a whole connection. */
function scopeOf(connection: string, organizationId: string | null): string {
  return organizationId === null ? connection : `${connection}/${organizationId}`;
}

/** How long a scope is held after its `failures`-th failure in a row: doubling from `base`, at most `max`. */
export function backoffMs(failures: number, base = 60_000, max = 3_600_000): number {
  return Math.min(max, base * 2 ** Math.max(0, failures - 1));
}

export interface HoldsOptions {
  clock: Clock;
  /** The first backoff after a failure (`daemon.retry_backoff_ms`); it doubles with each failure in a row. */
  retryBackoffMs?: number;
  retryBackoffMaxMs?: number;
}

/**
 * The process's holds on organizations and connections: a failed one backs off, doubling, while
 * the others carry on; one whose daily quota is gone pauses until the reset. Outcomes go in
 * through `settle`, admission pauses on a quota it finds spent, and whatever starts jobs asks
 * `heldUntil` first.
 */
export class Holds {
  private readonly backoff = new Map<string, { failures: number; until: number; reason: string }>();
  private readonly pausedUntil = new Map<string, number>();

  constructor(private readonly opts: HoldsOptions) {}

  /** When an organization's (or connection's) jobs may run again, and why, if not now. */
  heldUntil(connection: string, organizationId: string | null): Hold | null {
    const now = this.opts.clock.now();
    const candidates: Hold[] = [];
    for (const scope of [scopeOf(connection, null), scopeOf(connection, organizationId)]) {
      const b = this.backoff.get(scope);
      if (b && b.until > now)
        candidates.push({ kind: 'backoff', until: b.until, reason: `backing off after ${b.failures} failure(s): ${b.reason}` });
      const p = this.pausedUntil.get(scope);
      if (p && p > now) candidates.push({ kind: 'paused', until: p, reason: 'daily quota spent' });
    }
    return candidates.sort((a, b) => b.until - a.until)[0] ?? null;
  }

  /** Pauses an organization's jobs until `until` (the quota is gone; status and metrics show it). */
  pause(connection: string, organizationId: string, until: number): void {
    const scope = scopeOf(connection, organizationId);
    this.pausedUntil.set(scope, Math.max(this.pausedUntil.get(scope) ?? 0, until));
  }

  /**
   * Applies a finished run: a spent quota pauses its organization; each failed organization (or
   * connection) backs off once more; the scopes that worked start over. A busy run (another
   * process held the organization) changes no backoff: nothing ran, and nothing failed.
   */
  settle(job: Pick<JobSpec, 'connection' | 'organizationId'>, outcome: JobOutcome): void {
    const now = this.opts.clock.now();
    if (outcome.quotaUntil !== undefined && job.organizationId !== null) this.pause(job.connection, job.organizationId, outcome.quotaUntil);
    if (outcome.status === 'busy') return;
    const failedScopes = new Set((outcome.failed ?? []).map((org) => scopeOf(job.connection, org)));
    if (outcome.status === 'ok' || outcome.status === 'partial') {
      this.backoff.delete(scopeOf(job.connection, job.organizationId));
      if (job.organizationId === null) {
        for (const k of [...this.backoff.keys()]) if (k.startsWith(`${job.connection}/`) && !failedScopes.has(k)) this.backoff.delete(k);
      }
    }
    for (const scope of failedScopes) {
      const failures = (this.backoff.get(scope)?.failures ?? 0) + 1;
      const wait = backoffMs(failures, this.opts.retryBackoffMs, this.opts.retryBackoffMaxMs);
      this.backoff.set(scope, { failures, until: now + wait, reason: outcome.error ?? outcome.status });
    }
  }
}
