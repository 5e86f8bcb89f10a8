import { planLimits, type Limits, type Region } from '../config/plans.js';
import { type Family } from '../catalog/families.js';
import type { ConnectionConfig, SyncSettings } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { RetriableError, SvcsyncError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { serverQuota, type HeaderSource, type ServerQuota } from './backoff.js';
import { serverQuotaReset } from './quota-day.js';
import { classify } from './classify.js';
import { decideRetry, NO_RETRIES, type RetryCounters, type RetryDecision, type RetryPolicy as DecisionPolicy } from './retry-decision.js';
import { buildFamilyRequest, scopeFor, type Query } from './families.js';
import { parseAnswer } from './json-bytes.js';
import type { LimitFunction } from 'p-limit';
import type { LimiterRegistry, OrgLimiter } from './limiter.js';
import { resolveAccountsUrl } from './oauth.js';
import { TokenCache } from './token-cache.js';
import { userAgent } from './user-agent.js';
import { httpGetWith, type HttpGet } from './http-get.js';

export type RequestOutcome = 'ok' | 'retried' | 'rate_limited' | 'failed';

/** One HTTP attempt, for metrics and progress displays. */
export interface RequestEvent {
  family: Family;
  organizationId: string | undefined;
  /** Family root + path (no query), e.g. /inventory/v1/salesorders. */
  endpoint: string;
  status: number | undefined;
  code: number | undefined;
  outcome: RequestOutcome;
  durationMs: number;
  /** 1 for the first attempt of a call. */
  attempt: number;
}

export interface ApiClientOptions {
  connection: ConnectionConfig;
  settings: Pick<SyncSettings, 'request_timeout_ms' | 'max_retries'> &
    Partial<Pick<SyncSettings, 'idle_socket_timeout_ms' | 'max_answer_mb'>>;
  clock: Clock;
  logger: Logger;
  secrets: SecretRegistry;
  limiters: LimiterRegistry;
  /** How a GET is made: node:http by default (src/api/http-get.ts); `fetch` itself fits. */
  fetch?: HttpGet;
  random?: () => number;
  onRequest?: (e: RequestEvent) => void;
  /** Bounds for waits that do not spend max_retries; defaults suit production. */
  policy?: Partial<RetryPolicy>;
  /**
   * The connection's token cache, always from a TokenCacheRegistry (one place builds them),
   * so every client of a connection in a process shares one access token.
   */
  tokens: TokenCache;
}

export type RetryPolicy = Omit<DecisionPolicy, 'maxRetries' | 'windowMs'>;

const DEFAULT_POLICY: RetryPolicy = {
  maxRateLimitWaits: 30,
  maxServerWaitMs: 5 * 60_000,
  maxConcurrencyRetries: 20,
  max401Retries: 3,
};

export interface GetRequest {
  family: Family;
  organizationId?: string | undefined;
  /** Path under the family root, starting with "/". */
  path: string;
  query?: Query | undefined;
  signal?: AbortSignal | undefined;
  /** Counts every request this call sends, retries included (a stream's report). */
  meter?: RequestMeter | undefined;
  /**
   * Where the paths of text repaired in the answer go (A38, `contacts[3].contact_name`): the
   * caller counts them per stream and field. Without it the client logs one line per answer.
   */
  repaired?: string[] | undefined;
  /**
   * Sees the bytes of a successful answer (2xx) before they are decoded and parsed. A body it
   * returns stands for the answer (a page known unchanged: src/extractors/page-memo.ts), which is
   * then neither decoded nor parsed; undefined decodes and parses as usual.
   */
  beforeParse?: ((bytes: Uint8Array) => Record<string, unknown> | undefined) | undefined;
}

/** A count of requests sent on behalf of one stream (or other unit of work). */
export interface RequestMeter {
  requests: number;
}

export interface ClientStats {
  /** HTTP requests sent to the API (token requests excluded). */
  requests: number;
  /** Attempts repeated after a retriable error, a 401 or a concurrency refusal. */
  retries: number;
  /** 429 code 44 answers, by organization id ("" for calls without one). */
  rateLimited: Record<string, number>;
  /** Calls that ended in an error (a caller's abort is not one). */
  failures: number;
}

/** The plan's limits with the connection's overrides on top. */
export function connectionLimits(connection: Pick<ConnectionConfig, 'plan' | 'limits'>): Limits {
  const limits = planLimits(connection.plan);
  for (const [k, v] of Object.entries(connection.limits ?? {})) {
    if (typeof v === 'number') (limits as unknown as Record<string, number>)[k] = v;
  }
  return limits;
}

interface Attempt {
  /** The organization's requests in flight when this one was let out, itself included. */
  inFlight?: number | undefined;
  token?: string;
  sent: boolean;
  quota?: ServerQuota | null;
  /** The daily reset the answer tells (`X-Rate-Limit-Reset`), or null. */
  reset?: number | null;
  status?: number;
  code?: number;
  durationMs: number;
}

/** One call of ApiClient.get, across its attempts. */
interface Call {
  req: GetRequest;
  limiter: OrgLimiter | undefined;
  log: Logger;
  /** What a 401 is judged by at the bound (A26): has this scope ever worked for the connection? */
  scope: string | undefined;
  /** 1 for the first attempt. */
  attemptNo: number;
  /** What the call has met so far, as decideRetry counts it. */
  counters: RetryCounters;
}

/**
 * The one client every extractor uses (spec 1, 5, 7, 8): authorization, organization
 * identification per family, the envelope, error classification, retries and the
 * per-organization limits.
 */
export class ApiClient {
  private readonly connection: ConnectionConfig;
  private readonly clock: Clock;
  private readonly logger: Logger;
  /** A child logger per family and organization: pino serializes a child's bindings when it is made, ~10 µs a request. */
  private readonly requestLoggers = new Map<string, Logger>();
  private readonly secrets: SecretRegistry;
  private readonly limiters: LimiterRegistry;
  private readonly fetchImpl: HttpGet;
  private readonly random: () => number;
  private readonly onRequest: ((e: RequestEvent) => void) | undefined;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryPolicy: DecisionPolicy;
  private readonly limits: Limits;
  private readonly tokens: TokenCache;
  /** The user's requests in flight across organizations, when the server counts concurrency per user (A46). */
  private readonly userGate: LimitFunction | undefined;
  /** Whether the hint on a concurrency refusal below the organization's limit was logged. */
  private scopeHinted = false;
  private readonly counters: ClientStats = { requests: 0, retries: 0, rateLimited: {}, failures: 0 };

  constructor(opts: ApiClientOptions) {
    this.connection = opts.connection;
    this.clock = opts.clock;
    this.secrets = opts.secrets;
    this.limiters = opts.limiters;
    this.fetchImpl =
      opts.fetch ??
      httpGetWith({
        ...(opts.settings.idle_socket_timeout_ms === undefined ? {} : { idleSocketMs: opts.settings.idle_socket_timeout_ms }),
        ...(opts.settings.max_answer_mb === undefined ? {} : { maxAnswerBytes: opts.settings.max_answer_mb * 1024 * 1024 }),
      });
    this.random = opts.random ?? Math.random;
    this.onRequest = opts.onRequest;
    this.timeoutMs = opts.settings.request_timeout_ms;
    this.maxRetries = opts.settings.max_retries;
    this.limits = connectionLimits(opts.connection);
    this.retryPolicy = { ...DEFAULT_POLICY, ...opts.policy, maxRetries: this.maxRetries, windowMs: this.limits.window_ms };
    this.logger = opts.logger.child({ connection: opts.connection.name });
    this.tokens = opts.tokens;
    this.userGate =
      opts.connection.limits?.concurrency_scope === 'user'
        ? opts.limiters.userGate(opts.connection.name, this.limits.concurrency)
        : undefined;
  }

  /** Obtains a token (refreshing when needed) and returns the API base it points at. */
  async connect(signal?: AbortSignal): Promise<{ apiBase: string }> {
    const t = await this.tokens.get(signal);
    return { apiBase: t.apiBase };
  }

  /** The organization's limiter (status, progress, the daemon's budget). */
  limitsFor(organizationId: string): Promise<OrgLimiter> {
    return this.limiters.get(organizationId, { limits: this.limits, timeZone: this.connection.quota_reset_time_zone });
  }

  stats(): ClientStats {
    return { ...this.counters, rateLimited: { ...this.counters.rateLimited } };
  }

  private requestLogger(family: Family, organizationId: string | undefined): Logger {
    const key = `${family}/${organizationId ?? ''}`;
    let log = this.requestLoggers.get(key);
    if (!log) this.requestLoggers.set(key, (log = this.logger.child({ family, organization_id: organizationId })));
    return log;
  }

  /** GET under a family root, the organization identified as the family requires; the envelope, code 0 checked. */
  async get(req: GetRequest): Promise<Record<string, unknown>> {
    const call: Call = {
      req,
      limiter: req.organizationId === undefined ? undefined : await this.limitsFor(req.organizationId),
      log: this.requestLogger(req.family, req.organizationId),
      scope: scopeFor(req.family, 'GET', req.path),
      attemptNo: 0,
      counters: NO_RETRIES,
    };
    for (;;) {
      req.signal?.throwIfAborted();
      call.attemptNo++;
      const attempt: Attempt = { sent: false, durationMs: 0 };
      try {
        const body = await this.send(call, attempt);
        this.succeeded(call, attempt);
        return body;
      } catch (err) {
        await this.afterFailure(call, attempt, err);
      }
    }
  }

  /** One attempt through the organization's limiter and the user's gate, when there are. */
  private send(call: Call, attempt: Attempt): Promise<Record<string, unknown>> {
    const { req, limiter, log, attemptNo } = call;
    const run = (): Promise<Record<string, unknown>> => {
      attempt.inFlight = limiter?.inFlight();
      const gate = this.userGate;
      return gate ? gate(() => this.once(req, attempt, attemptNo, log)) : this.once(req, attempt, attemptNo, log);
    };
    return limiter ? limiter.schedule(run, req.signal) : run();
  }

  /** Tells onRequest of a sent attempt's outcome. */
  private report(call: Call, attempt: Attempt, outcome: RequestOutcome): void {
    if (!attempt.sent) return;
    const { req } = call;
    this.onRequest?.({
      family: req.family,
      organizationId: req.organizationId,
      endpoint: `${buildFamilyRequest('', { family: req.family, path: req.path }).display}`,
      status: attempt.status,
      code: attempt.code,
      outcome,
      durationMs: attempt.durationMs,
      attempt: call.attemptNo,
    });
  }

  private succeeded(call: Call, attempt: Attempt): void {
    const { limiter, scope } = call;
    limiter?.recordSuccess();
    // The reset first: the quota figures count in the day it names.
    if (attempt.reset) limiter?.observeServerReset(attempt.reset);
    if (attempt.quota) limiter?.observeServerQuota(attempt.quota);
    if (scope !== undefined) this.tokens.scopeWorked(scope);
    this.report(call, attempt, 'ok');
  }

  /** Applies decideRetry's verdict on a failed attempt: throws when the call fails, else waits for the next attempt. */
  private async afterFailure(call: Call, attempt: Attempt, err: unknown): Promise<void> {
    const { req, limiter, scope } = call;
    if (req.signal?.aborted) throw req.signal.reason;
    // Quota headers of a per-minute or concurrency refusal may describe that window instead.
    if (attempt.reset && attempt.status !== 429) limiter?.observeServerReset(attempt.reset);
    if (attempt.quota && attempt.status !== 429) limiter?.observeServerQuota(attempt.quota);
    const { decision, counters } = decideRetry(err, call.counters, this.retryPolicy, this.random, {
      tokenSent: attempt.token !== undefined && attempt.sent,
      scopeWorked: scope !== undefined && this.tokens.hasScopeWorked(scope),
    });
    call.counters = counters;
    if (decision.action === 'fail') {
      if (decision.blockUntil && attempt.sent) limiter?.block(decision.blockUntil);
      this.counters.failures++;
      this.report(call, attempt, 'failed');
      throw decision.error;
    }
    this.prepareRetry(call, attempt, decision, err as SvcsyncError);
    if (decision.waitMs > 0) await this.clock.sleep(decision.waitMs, req.signal);
  }

  /** Before a retry: drops a refused token, pauses or narrows the organization, counts and logs. */
  private prepareRetry(call: Call, attempt: Attempt, decision: Exclude<RetryDecision, { action: 'fail' }>, e: SvcsyncError): void {
    const { req, limiter, log, attemptNo, counters } = call;
    if (decision.action === 'refresh') {
      this.tokens.invalidate(attempt.token!);
      this.counters.retries++;
      this.report(call, attempt, 'retried');
      log.warn(
        { attempt: attemptNo, status: 401, code: e.code, in_a_row: counters.consecutive401, wait_ms: decision.waitMs },
        'access token refused; refreshing it and retrying',
      );
    } else if (decision.why === 'rate_limit') {
      const key = req.organizationId ?? '';
      this.counters.rateLimited[key] = (this.counters.rateLimited[key] ?? 0) + 1;
      // Everyone queued for this organization waits too, not just this call.
      limiter?.pause(decision.waitMs);
      this.report(call, attempt, 'rate_limited');
      log.warn({ attempt: attemptNo, wait_ms: decision.waitMs }, 'per-minute limit reached (429 code 44); waiting for the window');
    } else if (decision.why === 'concurrency') {
      limiter?.lowerConcurrency();
      this.counters.retries++;
      this.report(call, attempt, 'retried');
      log.warn({ attempt: attemptNo, wait_ms: decision.waitMs }, 'too many concurrent requests (429 code 1070); backing off');
      this.hintConcurrencyScope(attempt, log);
    } else {
      this.counters.retries++;
      this.report(call, attempt, 'retried');
      log.warn(
        {
          attempt: attemptNo,
          retry: counters.retries,
          max_retries: this.maxRetries,
          wait_ms: decision.waitMs,
          reason: (e as RetriableError).reason,
          error: e.message,
        },
        'request failed; retrying',
      );
    }
  }

  /**
   * A concurrency refusal while svcsync had fewer of the organization's requests in flight than
   * its limit: somebody else holds the rest. Said once per client, with the setting that answers
   * the likelier cause svcsync can act on (A46).
   */
  private hintConcurrencyScope(attempt: Attempt, log: Logger): void {
    if (this.scopeHinted || this.userGate || attempt.inFlight === undefined || attempt.inFlight >= this.limits.concurrency) return;
    this.scopeHinted = true;
    log.warn(
      { in_flight: attempt.inFlight, concurrency: this.limits.concurrency },
      `the server refused a request for concurrency (429 code 1070) while svcsync had ${attempt.inFlight} of the ` +
        `organization's ${this.limits.concurrency} in flight: other integrations of the organization hold the rest, or ` +
        'the server counts the limit per user across organizations. If these warnings repeat, set ' +
        `limits.concurrency_scope: user on connection "${this.connection.name}" (docs/assumptions.md A46)`,
    );
  }

  /** One HTTP attempt: token, fetch under the timeout, parse, classify. */
  private async once(req: GetRequest, attempt: Attempt, attemptNo: number, log: Logger): Promise<Record<string, unknown>> {
    req.signal?.throwIfAborted();
    const token = await this.tokens.get(req.signal);
    attempt.token = token.token;
    const built = buildFamilyRequest(token.apiBase, req);
    const classifyBase = {
      method: 'GET',
      path: built.display,
      organizationId: req.organizationId,
      family: req.family,
      quotaResetTimeZone: this.connection.quota_reset_time_zone,
      quotaDay: req.organizationId === undefined ? undefined : this.limiters.peek(req.organizationId)?.quotaDay(),
      windowMs: this.limits.window_ms,
      scrub: (s: string) => this.secrets.scrub(s),
    };

    const controller = new AbortController();
    let timedOut = false;
    const timer = this.clock.setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`request timed out after ${this.timeoutMs} ms`));
    }, this.timeoutMs);
    const onAbort = (): void => controller.abort(req.signal?.reason);
    req.signal?.addEventListener('abort', onAbort, { once: true });

    const started = this.clock.now();
    attempt.sent = true;
    this.counters.requests++;
    if (req.meter) req.meter.requests++;
    let status: number;
    let headers: HeaderSource;
    let bytes: Uint8Array;
    try {
      const response = await this.fetchImpl(built.url, {
        method: 'GET',
        headers: { ...built.headers, Authorization: `Svc-oauthtoken ${token.token}`, 'User-Agent': userAgent() },
        signal: controller.signal,
      });
      status = response.status;
      headers = response.headers;
      // The timeout covers the body too: a stalled body is as bad as a stalled answer.
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (err) {
      attempt.durationMs = this.clock.now() - started;
      if (req.signal?.aborted) throw req.signal.reason;
      const e = classify({ ...classifyBase, networkError: err, timedOut }, this.clock.now());
      log.debug({ method: 'GET', path: built.display, ms: attempt.durationMs, attempt: attemptNo, error: e?.message }, 'request failed');
      // classify answers null only for a success; a transport failure always has its error.
      throw e ?? err;
    } finally {
      timer.cancel();
      req.signal?.removeEventListener('abort', onAbort);
    }
    attempt.durationMs = this.clock.now() - started;
    attempt.status = status;
    attempt.quota = serverQuota(headers);
    attempt.reset = serverQuotaReset(headers, this.clock.now(), { perMinute: this.limits.per_minute, windowMs: this.limits.window_ms });

    let body: unknown;
    let parseError: unknown;
    const repaired: string[] = [];
    // A hook may spare decoding the bytes at all.
    const standIn = status >= 200 && status < 300 ? req.beforeParse?.(bytes) : undefined;
    if (standIn) body = standIn;
    else {
      try {
        body = parseAnswer(bytes, repaired);
      } catch (err) {
        parseError = err;
      }
    }
    if (repaired.length && req.repaired) req.repaired.push(...repaired);
    else if (repaired.length)
      log.warn(
        { path: built.display, count: repaired.length, fields: repaired.slice(0, 10) },
        'The response held text with a NUL character or an unpaired surrogate; each such character was replaced with U+FFFD. ' +
          'Nothing to do unless the source data should be fixed.',
      );
    const code = body && typeof body === 'object' ? (body as Record<string, unknown>)['code'] : undefined;
    if (typeof code === 'number') attempt.code = code;
    log.debug({ method: 'GET', path: built.display, status, code: attempt.code, ms: attempt.durationMs, attempt: attemptNo }, 'request');

    const error = classify({ ...classifyBase, status, headers, body, parseError }, this.clock.now());
    if (error) throw error;
    return body as Record<string, unknown>;
  }
}

/**
 * One token cache per connection for a whole process. A long-running daemon builds a client
 * per job; without this each job would refresh the access token again, spending the refresh
 * grant (which the service limits) although the last token has most of its hour left.
 */
export class TokenCacheRegistry {
  private readonly caches = new Map<string, TokenCache>();

  constructor(
    private readonly deps: {
      clock: Clock;
      secrets: SecretRegistry;
      logger: Logger;
      regions?: Partial<Record<Region, string>> | undefined;
      timeoutMs: number;
      fetch?: typeof fetch | undefined;
    },
  ) {}

  for(connection: ConnectionConfig, connectionIndex: number): TokenCache {
    // The refresh token is part of the key: a new one in the config means a new session.
    const key = `${connection.name}\u0000${connection.refresh_token}`;
    let cache = this.caches.get(key);
    if (!cache) {
      cache = new TokenCache({
        accountsUrl: resolveAccountsUrl(connection, this.deps.regions, connectionIndex),
        clientId: connection.client_id,
        clientSecret: connection.client_secret,
        refreshToken: connection.refresh_token,
        redirectUri: connection.redirect_uri,
        apiUrl: connection.api_url,
        connectionIndex,
        clock: this.deps.clock,
        secrets: this.deps.secrets,
        logger: this.deps.logger.child({ connection: connection.name }),
        fetch: this.deps.fetch,
        timeoutMs: this.deps.timeoutMs,
      });
      this.caches.set(key, cache);
    }
    return cache;
  }
}
