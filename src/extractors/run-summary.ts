import type { Family } from '../catalog/families.js';
import { CONFIG_WAREHOUSE_FAULTS, ExitCode, exitCodeForWarehouse, type SvcsyncError, type WarehouseError } from '../core/errors.js';
import type { RunStatus } from '../state/runs.js';
import { StopRequested } from './stop.js';
import type { OrganizationOutcome } from './stream-outcome.js';

export interface ConnectionFailure {
  connection: string;
  kind: SvcsyncError['kind'] | 'unexpected';
  error: string;
}

/**
 * A family discovery could not list because the token lacks its organization-list scope: none
 * of that family's streams was read (A26). Reported, and it makes the run partial, so that a
 * grant missing one scope is not a quiet success every night.
 */
export interface FamilySkip {
  connection: string;
  family: Family;
  error: string;
}

export interface UsageLine {
  organizationId: string;
  usedToday: number;
  budget: number;
  perDay: number;
  nextReset: string;
  blockedUntil: string | null;
}

export interface SyncSummary {
  runId: string;
  command: string;
  startedAt: string;
  finishedAt: string;
  organizations: OrganizationOutcome[];
  connectionFailures: ConnectionFailure[];
  /** Families skipped for want of a scope, per connection (the rest of the connection was synced). */
  skippedFamilies: FamilySkip[];
  requests: number;
  usage: UsageLine[];
  exitCode: ExitCode;
  /**
   * A warehouse fault that ended the run (its organizations not yet started were not started);
   * the run's summary is still printed, and the next run continues from the last committed page.
   */
  warehouseFault?: string;
  /** Why the run's end could not be recorded in `_svcsync_runs` (the next run closes the row as abandoned). */
  unrecorded?: string;
  /** Why the run stopped before its end (a signal, the daemon's shutdown): the summary counts what it committed. */
  stopped?: string;
}

/**
 * A run that was asked to stop (cooperatively or by abandoning the page in flight): it still
 * carries the summary of what was committed, and it is a StopRequested so that every caller
 * that lets a stop through lets this one through too.
 */
export class RunStopped extends StopRequested {
  constructor(
    reason: string,
    readonly summary: SyncSummary,
    options?: { cause?: unknown },
  ) {
    super(reason);
    this.name = 'RunStopped';
    if (options && 'cause' in options) this.cause = options.cause;
  }
}

/** The status `_svcsync_runs` records for a run that ended with this exit code. */
export function runStatusOf(exitCode: ExitCode): RunStatus {
  if (exitCode === ExitCode.ok) return 'ok';
  if (exitCode === ExitCode.partial) return 'partial';
  return 'failed';
}

/**
 * What a run ends with: 0 only when every organization it was asked for finished. An
 * organization another process owns (busy), one whose lease this process's own connection
 * lost, and a warehouse fault the next run can get past all leave work unfinished: partial (4).
 * A warehouse fault that needs the setting or the file system changed is a configuration
 * error (2), as an unreadable configuration is.
 */
export function exitCodeOf(
  organizations: readonly OrganizationOutcome[],
  failures: readonly ConnectionFailure[],
  fault: WarehouseError | null = null,
): ExitCode {
  const ok = organizations.filter((o) => o.status === 'ok').length;
  const quota = organizations.some((o) => o.status === 'quota');
  const bad = organizations.filter((o) => o.status !== 'ok').length + failures.length;
  if (bad === 0 && fault === null) return ExitCode.ok;
  if (fault && CONFIG_WAREHOUSE_FAULTS.has(fault.fault)) return ExitCode.config;
  if (quota) return ExitCode.partial;
  if (fault) return exitCodeForWarehouse(fault.fault);
  if (organizations.some((o) => o.status === 'busy' || o.failure === 'lease')) return ExitCode.partial;
  if (
    ok === 0 &&
    organizations.every((o) => o.status === 'failed') &&
    failures.length > 0 &&
    failures.every((f) => f.kind === 'authorization')
  )
    return ExitCode.authorization;
  if (ok > 0 || organizations.some((o) => o.status === 'partial')) return ExitCode.partial;
  if (failures.some((f) => f.kind === 'authorization')) return ExitCode.authorization;
  // Nothing ran because the configuration or the command line named what is not there (`--org 123`).
  if (organizations.length === 0 && failures.length > 0 && failures.every((f) => f.kind === 'config')) return ExitCode.config;
  return ExitCode.unexpected;
}
