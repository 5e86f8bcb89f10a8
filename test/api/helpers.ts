import nock from 'nock';
import { FakeClock } from '../../src/core/clock.js';
import { createLogger, CapturedLog } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import type { ConnectionConfig } from '../../src/config/schema.js';
import { ApiClient, TokenCacheRegistry, type ApiClientOptions, type RequestEvent } from '../../src/api/client.js';
import { LimiterRegistry } from '../../src/api/limiter.js';
import { MemoryUsageStore } from '../../src/api/usage-store.js';
import type { TokenCache } from '../../src/api/token-cache.js';
import { httpGet, type HttpGet } from '../../src/api/http-get.js';

export const ACCOUNTS = 'https://accounts.example.test';
export const API = 'https://api.example.test';

/** Every secret the tests hand out; none may appear in a log line or an error message. */
export const SECRETS = {
  clientId: 'client-id-1000.ABCDEF',
  clientSecret: 'client-secret-9f8e7d6c5b4a',
  refreshToken: '1000.refresh-token-5a5a5a5a',
  accessToken: '1000.access-token-one-111111',
  accessToken2: '1000.access-token-two-222222',
  grantCode: '1000.grant-code-777777777',
};

export function connection(overrides: Partial<ConnectionConfig> = {}): ConnectionConfig {
  return {
    name: 'acme',
    region: 'us',
    accounts_url: ACCOUNTS,
    client_id: SECRETS.clientId,
    client_secret: SECRETS.clientSecret,
    refresh_token: SECRETS.refreshToken,
    plan: 'free',
    families: ['books', 'inventory', 'invoice', 'billing'],
    quota_reset_time_zone: 'UTC',
    ...overrides,
  };
}

export function tokenReply(token = SECRETS.accessToken, expiresIn = 3600, apiDomain = API) {
  return { access_token: token, api_domain: apiDomain, token_type: 'Bearer', expires_in: expiresIn };
}

export interface Harness {
  client: ApiClient;
  clock: FakeClock;
  log: CapturedLog;
  secrets: SecretRegistry;
  store: MemoryUsageStore;
  limiters: LimiterRegistry;
  events: RequestEvent[];
  /** Runs a call to completion on fake time (see drive). */
  run<T>(promise: Promise<T>, stepMs?: number): Promise<T>;
  /** Waits until no HTTP exchange is in progress and queued callbacks have run. */
  idle(): Promise<void>;
}

/**
 * Counts HTTP exchanges in progress (body included), so tests move the fake clock only
 * while the client is waiting on it, never while nock is still answering.
 */
export function trackedFetch(): { fetch: typeof fetch; pending: () => number } {
  let pending = 0;
  const tracked: typeof fetch = async (input, init) => {
    pending++;
    try {
      const r = await globalThis.fetch(input, init);
      const text = await r.text();
      return new Response(text, { status: r.status, headers: r.headers });
    } finally {
      pending--;
    }
  };
  return { fetch: tracked, pending: () => pending };
}

/** The same for the client's own GET (node:http, src/api/http-get.ts), which the API requests go through. */
export function trackedGet(): { get: HttpGet; pending: () => number } {
  let pending = 0;
  const tracked: HttpGet = async (url, init) => {
    pending++;
    try {
      return await httpGet(url, init);
    } finally {
      pending--;
    }
  };
  return { get: tracked, pending: () => pending };
}

export function harness(
  opts: {
    connection?: Partial<ConnectionConfig>;
    clock?: FakeClock;
    store?: MemoryUsageStore;
    maxRetries?: number;
    timeoutMs?: number;
    random?: () => number;
    fetch?: typeof fetch;
    policy?: ApiClientOptions['policy'];
    /** Log through a registry that knows no secret, to prove none is ever written (not merely scrubbed). */
    unscrubbedLog?: boolean;
    /** The connection's token cache from a registry the test holds (as a daemon shares one across runs). */
    tokens?: TokenCache;
  } = {},
): Harness {
  const clock = opts.clock ?? new FakeClock(Date.UTC(2026, 0, 15, 10, 0, 0));
  const log = new CapturedLog();
  const secrets = new SecretRegistry();
  const logger = createLogger({
    level: 'debug',
    destination: log,
    secrets: opts.unscrubbedLog ? new SecretRegistry() : secrets,
    pretty: false,
  });
  const store = opts.store ?? new MemoryUsageStore();
  const limiters = new LimiterRegistry({ clock, store, logger });
  const events: RequestEvent[] = [];
  const tracker = trackedFetch();
  const getTracker = trackedGet();
  const conn = connection(opts.connection);
  const fetchImpl = opts.fetch ?? tracker.fetch;
  const tokens =
    opts.tokens ?? new TokenCacheRegistry({ clock, secrets, logger, timeoutMs: opts.timeoutMs ?? 60_000, fetch: fetchImpl }).for(conn, 0);
  const client = new ApiClient({
    connection: conn,
    tokens,
    settings: { request_timeout_ms: opts.timeoutMs ?? 60_000, max_retries: opts.maxRetries ?? 3 },
    clock,
    logger,
    secrets,
    limiters,
    random: opts.random ?? (() => 0.5),
    onRequest: (e) => events.push(e),
    fetch: opts.fetch ?? getTracker.get,
    ...(opts.policy ? { policy: opts.policy } : {}),
  });
  const idle = () => settle(() => tracker.pending() + getTracker.pending());
  return { client, clock, log, secrets, store, limiters, events, idle, run: (p, stepMs) => drive(clock, p, stepMs, idle) };
}

/**
 * Lets real I/O (nock answering) and queued callbacks finish without moving the fake
 * clock: yields to the event loop until nothing is in flight, then a few more turns.
 */
export async function settle(pending: () => number = () => 0): Promise<void> {
  // Quiet means nothing in flight at three checks in a row: a callback chain that starts
  // a new request (token first, then the API call) gets the turns it needs to start it.
  for (let i = 0, quiet = 0; i < 100_000 && quiet < 3; i++) {
    for (let j = 0; j < 5; j++) await new Promise<void>((r) => setImmediate(r));
    quiet = pending() === 0 ? quiet + 1 : 0;
  }
}

/**
 * Runs a promise to completion, moving the fake clock in steps only while the code is
 * idle (waiting on a timer). Returns the settled value or rethrows.
 */
export async function drive<T>(
  clock: FakeClock,
  promise: Promise<T>,
  stepMs = 100,
  idle: () => Promise<void> = () => settle(),
  maxMs = 6 * 3_600_000,
): Promise<T> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await idle();
  for (let moved = 0; !done && moved <= maxMs; moved += stepMs) {
    await clock.advance(stepMs);
    await idle();
  }
  return promise;
}

export function setupNock(): void {
  nock.disableNetConnect();
}

export function teardownNock(): void {
  const pending = nock.pendingMocks();
  nock.cleanAll();
  nock.enableNetConnect();
  if (pending.length > 0) throw new Error(`unused HTTP mocks: ${pending.join(', ')}`);
}
