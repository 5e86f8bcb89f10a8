/**
 * Every failure svcsync reports is one of six kinds, and each says what to do next.
 * The API client's classify() is the one place that maps a response or a transport
 * failure onto the first five; `classifyWarehouseError` (src/loaders/warehouse-errors.ts)
 * is the one place that maps a database driver's failure onto `WarehouseError`. Everything
 * else only reads `kind`, `retriable` and `hint`.
 */
export type ErrorKind = 'retriable' | 'quota' | 'authorization' | 'config' | 'fatal' | 'warehouse';

export interface ErrorDetails {
  /** What to do about it, in one sentence a user can act on. */
  hint?: string;
  /** The request this came from: method and path, never a token. */
  request?: string;
  status?: number;
  code?: number;
  /** The envelope's message as the server sent it (secrets scrubbed), for decisions that read it. */
  serverMessage?: string;
  organizationId?: string;
  cause?: unknown;
}

export abstract class SvcsyncError extends Error {
  abstract readonly kind: ErrorKind;
  abstract readonly retriable: boolean;
  readonly hint: string | undefined;
  readonly request: string | undefined;
  readonly status: number | undefined;
  readonly code: number | undefined;
  readonly serverMessage: string | undefined;
  readonly organizationId: string | undefined;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.hint = details.hint;
    this.request = details.request;
    this.status = details.status;
    this.code = details.code;
    this.serverMessage = details.serverMessage;
    this.organizationId = details.organizationId;
  }

  /** The message with its hint, as shown to a user. */
  describe(): string {
    return this.hint ? `${this.message}\n  → ${this.hint}` : this.message;
  }
}

/** Any thrown value as shown to a user: a classified error with its hint, else its message. */
export function describeError(error: unknown): string {
  if (error instanceof SvcsyncError) return error.describe();
  return error instanceof Error ? error.message : String(error);
}

/**
 * Why a retriable error happened. Retry policy differs: a per-minute limit (rate_limit) is
 * waited out and never counted as a failure; concurrency lowers the organization's
 * parallelism; the rest spend the bounded retry budget.
 */
export type RetryReason = 'rate_limit' | 'concurrency' | 'server' | 'network' | 'timeout' | 'invalid_body';

/** Worth trying again: 5xx, timeouts, resets, cut-short bodies, 429 codes 44 and 1070. */
export class RetriableError extends SvcsyncError {
  readonly kind = 'retriable' as const;
  readonly retriable = true;
  /** How long the server asked us to wait, when it said. */
  readonly retryAfterMs: number | undefined;
  readonly reason: RetryReason | undefined;
  constructor(message: string, details: ErrorDetails & { retryAfterMs?: number; reason?: RetryReason } = {}) {
    super(message, details);
    this.retryAfterMs = details.retryAfterMs;
    this.reason = details.reason;
  }
}

/** The organization's daily quota is spent (429 code 45, or our own budget ran out). */
export class QuotaExhaustedError extends SvcsyncError {
  readonly kind = 'quota' as const;
  readonly retriable = false;
  /** When calls to this organization may resume. */
  readonly resumeAt: Date;
  constructor(message: string, details: ErrorDetails & { resumeAt: Date }) {
    super(message, details);
    this.resumeAt = details.resumeAt;
  }
}

/**
 * What an authorization failure stops. A token the service keeps refusing, or a refresh it
 * refuses, stops every stream of the connection (they all share the token); a scope the token
 * lacks stops only the streams that need it (or the family, when the scope is not known). On
 * a 401 straight from classify() it is what the answer's code says; decideRetry gives the verdict.
 */
export type AuthorizationReach = 'connection' | 'family';

/** Credentials, tokens or scopes are wrong; retrying will not help. */
export class AuthorizationError extends SvcsyncError {
  readonly kind = 'authorization' as const;
  readonly retriable = false;
  readonly reach: AuthorizationReach;
  /** The scope the refused request needs, when the refusal is for a scope and the scope is known. */
  readonly scope: string | undefined;
  /**
   * The authorization server refused a token request (an OAuth error such as invalid_client,
   * invalid_client_secret or invalid_code; A20): the connection cannot log in at all, whatever
   * its scopes. False when the API refused a token it had issued, or a scope.
   */
  readonly byAuthorizationServer: boolean;
  constructor(
    message: string,
    details: ErrorDetails & { reach?: AuthorizationReach; scope?: string | undefined; byAuthorizationServer?: boolean } = {},
  ) {
    super(message, details);
    this.reach = details.reach ?? 'connection';
    this.scope = details.scope;
    this.byAuthorizationServer = details.byAuthorizationServer ?? false;
  }
}

/** The configuration file or a command-line option is wrong. */
export class ConfigError extends SvcsyncError {
  readonly kind = 'config' as const;
  readonly retriable = false;
  /** One line per problem, each naming the key path. */
  readonly problems: string[];
  constructor(message: string, problems: string[] = [], details: ErrorDetails = {}) {
    super(problems.length ? `${message}\n${problems.map((p) => `  - ${p}`).join('\n')}` : message, details);
    this.problems = problems;
  }
}

/** A request the server refused for good (400, 404/1002, other 4xx) or a broken invariant. */
export class FatalError extends SvcsyncError {
  readonly kind = 'fatal' as const;
  readonly retriable = false;
}

/**
 * What went wrong with the warehouse, as far as a user can act on it. `transient` faults are
 * retried for `warehouse.retry_s`; `config`-like ones mean the warehouse setting or the file
 * system around it must change; the rest end the run with what was committed kept.
 */
export type WarehouseFault =
  | 'disk_full'
  | 'read_only'
  | 'permission'
  | 'missing_folder'
  | 'not_a_database'
  | 'unknown_database'
  | 'unreachable'
  | 'locked'
  | 'lock_timeout'
  | 'statement_timeout'
  | 'connection_lost'
  | 'shutting_down'
  | 'too_many_connections'
  | 'conflict'
  | 'other';

/** Faults worth waiting out: the same statement may succeed once the server or the other program lets go. */
export const TRANSIENT_WAREHOUSE_FAULTS: ReadonlySet<WarehouseFault> = new Set<WarehouseFault>([
  'locked',
  'lock_timeout',
  'statement_timeout',
  'connection_lost',
  'shutting_down',
  'too_many_connections',
  'conflict',
]);

/** Faults that only a change of the warehouse setting, the file system or the server's grants can cure (exit 2). */
export const CONFIG_WAREHOUSE_FAULTS: ReadonlySet<WarehouseFault> = new Set<WarehouseFault>([
  'read_only',
  'permission',
  'missing_folder',
  'not_a_database',
  'unknown_database',
  'unreachable',
]);

/**
 * The warehouse (SQLite file or Postgres server) failed. The message names the warehouse
 * (a path, or host and database: never a password) and the hint says what to do.
 */
export class WarehouseError extends SvcsyncError {
  readonly kind = 'warehouse' as const;
  readonly retriable: boolean;
  readonly fault: WarehouseFault;
  /** The warehouse as shown to users (`sqlite:/path` or a URL without its password). */
  readonly warehouse: string;
  constructor(message: string, details: ErrorDetails & { fault: WarehouseFault; warehouse: string }) {
    super(message, details);
    this.fault = details.fault;
    this.warehouse = details.warehouse;
    this.retriable = TRANSIENT_WAREHOUSE_FAULTS.has(details.fault);
  }
}

/** Exit codes documented in the README. */
export const ExitCode = {
  ok: 0,
  unexpected: 1,
  config: 2,
  authorization: 3,
  partial: 4,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Exit codes from least to most severe, for a command that ends with the worst of several outcomes. */
const EXIT_SEVERITY: readonly ExitCode[] = [ExitCode.ok, ExitCode.partial, ExitCode.authorization, ExitCode.config, ExitCode.unexpected];

/** The more severe of two exit codes (`EXIT_SEVERITY`). */
export function worseExitCode(a: ExitCode, b: ExitCode): ExitCode {
  return EXIT_SEVERITY.indexOf(b) > EXIT_SEVERITY.indexOf(a) ? b : a;
}

export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof ConfigError) return ExitCode.config;
  if (error instanceof AuthorizationError) return ExitCode.authorization;
  if (error instanceof QuotaExhaustedError) return ExitCode.partial;
  if (error instanceof WarehouseError) return exitCodeForWarehouse(error.fault);
  return ExitCode.unexpected;
}

/**
 * A warehouse fault's exit code: 2 when the setting or the file system must change, 4 when the
 * same command run again later can succeed (a full disk freed, a server back up; every
 * committed page is kept), 1 for what svcsync cannot explain.
 */
export function exitCodeForWarehouse(fault: WarehouseFault): ExitCode {
  if (CONFIG_WAREHOUSE_FAULTS.has(fault)) return ExitCode.config;
  if (fault === 'other') return ExitCode.unexpected;
  return ExitCode.partial;
}
