import type { Family } from '../catalog/families.js';
import {
  AuthorizationError,
  ConfigError,
  FatalError,
  QuotaExhaustedError,
  RetriableError,
  type ErrorDetails,
  type RetryReason,
  type SvcsyncError,
} from '../core/errors.js';
import { serverRetryAfterMs, type HeaderSource } from './backoff.js';
import { SCOPE_PREFIXES, scopeFor } from './families.js';
import { HTTP_GET_FAULTS } from './http-get.js';
import { describeReset, nextQuotaReset, serverQuotaReset, type QuotaDay } from './quota-day.js';

/**
 * 401 codes that may name a missing scope rather than a refused token (A26: the sandbox's 57;
 * another server answers expired and revoked tokens with it).
 */
export const SCOPE_CODES: readonly number[] = [57];

/** Spec 7: envelope codes the client acts on. */
export const CODES = {
  ok: 0,
  rateLimited: 44,
  quotaExhausted: 45,
  internal: 1000,
  notFound: 1002,
  tooManyConcurrent: 1070,
} as const;

export interface ClassifyInput {
  method: string;
  /** Family root + path + query; must carry nothing secret (the token travels in a header). */
  path: string;
  status?: number | undefined;
  /** The parsed body, when it parsed. */
  body?: unknown;
  headers?: HeaderSource;
  /** A transport failure (reset, refused, DNS, aborted by our timeout). */
  networkError?: unknown;
  /** True when our own request timeout fired. */
  timedOut?: boolean | undefined;
  /** The body did not parse as JSON. */
  parseError?: unknown;
  organizationId?: string | undefined;
  family?: Family | undefined;
  /** Zone whose midnight resets the daily quota (A15); default UTC. */
  quotaResetTimeZone?: string | undefined;
  /** The organization's quota day as its limiter counts it (its end may be the server's), when known. */
  quotaDay?: QuotaDay | undefined;
  /** The per-minute window, used as the wait when a 429 code 44 names none. */
  windowMs?: number | undefined;
  /** Removes secrets from server-supplied text before it reaches a message. */
  scrub?: ((text: string) => string) | undefined;
}

function envelope(body: unknown): { code: number | undefined; message: string | undefined } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return { code: undefined, message: undefined };
  const b = body as Record<string, unknown>;
  const msg = b['message'];
  return { code: envelopeCode(b['code']), message: typeof msg === 'string' ? msg : undefined };
}

/** The envelope's `code`, given as a number or as a string of digits. */
function envelopeCode(raw: unknown): number | undefined {
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'string' && /^-?\d+$/.test(raw)) return Number(raw);
  return undefined;
}

/** The first of `values` that is a string. */
function firstString(...values: unknown[]): string | undefined {
  return values.find((v): v is string => typeof v === 'string');
}

/**
 * The failures of a request that sending it again cannot mend: an address that is not an http
 * or https URL, redirects without end, an answer past `sync.max_answer_mb`. They fail at once.
 */
function settledTransportFault(
  err: unknown,
  prefix: string,
  scrub: (text: string) => string,
  details: { request: string; organizationId: string | undefined; cause: unknown },
): SvcsyncError | null {
  const code = (err as { code?: unknown } | null)?.code;
  // httpGet's own message says it all; its code is for this function, not for the reader.
  const what = `${prefix}: ${scrub(err instanceof Error ? err.message : String(err))}`;
  if (code === HTTP_GET_FAULTS.badUrl)
    return new ConfigError(what, [], {
      ...details,
      hint:
        "the API address is the connection's api_url, or else the api_domain its token response names: set api_url to " +
        'the https:// address of the API. svcsync does not retry this.',
    });
  if (code === HTTP_GET_FAULTS.tooManyRedirects)
    return new ConfigError(what, [], {
      ...details,
      hint:
        "the server redirects without end: the API address is probably wrong (the connection's api_url, region or " +
        'accounts_url), or a proxy in between is misconfigured. svcsync does not retry this.',
    });
  if (code === HTTP_GET_FAULTS.tooLarge)
    return new FatalError(what, {
      ...details,
      hint:
        'lower sync.per_page so that each page is smaller, or raise sync.max_answer_mb if the machine has the memory ' +
        '(an answer that inflates far past its size may be a compression bomb). svcsync does not retry it.',
    });
  return null;
}

function describeNetworkError(err: unknown): string {
  if (!err || typeof err !== 'object') return String(err);
  const e = err as { code?: unknown; message?: unknown; cause?: unknown };
  const cause = e.cause as { code?: unknown; message?: unknown } | undefined;
  const code = firstString(e.code, cause?.code);
  const message = firstString(cause?.message, e.message) ?? 'network error';
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/** The request and its organization, as every error names them. */
interface RequestNames {
  request: string;
  organizationId: string | undefined;
}

/** A transport failure: our own timeout, a fault that sending again cannot mend, or one worth retrying. */
function transportError(input: ClassifyInput, where: string, base: RequestNames, scrub: (text: string) => string): SvcsyncError {
  if (input.timedOut) {
    return new RetriableError(`${where}: no complete response before the request timeout`, {
      ...base,
      reason: 'timeout',
      cause: input.networkError,
      hint: 'the server was slow or the connection stalled; svcsync retries. Raise sync.request_timeout_ms if this persists.',
    });
  }
  const settled = settledTransportFault(input.networkError, where, scrub, { ...base, cause: input.networkError });
  if (settled) return settled;
  return new RetriableError(`${where}: ${scrub(describeNetworkError(input.networkError))}`, {
    ...base,
    reason: 'network',
    cause: input.networkError,
    hint: 'the connection failed (reset, refused or name lookup); svcsync retries. Check network access to the API host if it persists.',
  });
}

/** A response that arrived, and what the rules below read of it. */
interface Answer {
  input: ClassifyInput;
  status: number;
  code: number | undefined;
  /** The envelope's message as sent (unscrubbed, untrimmed), for the rules that read it. */
  serverMessage: string | undefined;
  /** The request and its organization, as messages name them. */
  where: string;
  /** The message's first line: the request, its status and code, and the server's (scrubbed) words. */
  what: string;
  details: ErrorDetails;
  /** The wait the server asked for, when it asked. */
  serverWait: number | undefined;
  now: number;
}

function readAnswer(input: ClassifyInput, where: string, base: RequestNames, scrub: (text: string) => string, now: number): Answer {
  const status = input.status ?? 200;
  const { code, message: serverMessage } = envelope(input.body);
  const shown = serverMessage === undefined ? undefined : scrub(serverMessage).slice(0, 300);
  const codeText = code === undefined ? '' : ` code ${code}`;
  const what = `${where} → HTTP ${status}${codeText}${shown === undefined ? '' : `: ${shown}`}`;
  const details = { ...base, status, code, ...(shown === undefined ? {} : { serverMessage: shown }) };
  return { input, status, code, serverMessage, where, what, details, serverWait: serverRetryAfterMs(input.headers, now, status), now };
}

function retry(a: Answer, reason: RetryReason, retryAfterMs: number | undefined, hint: string): RetriableError {
  return new RetriableError(a.what, { ...a.details, reason, retryAfterMs, hint });
}

function refuse(a: Answer, hint: string): FatalError {
  return new FatalError(a.what, { ...a.details, hint });
}

function quotaExhausted(a: Answer): QuotaExhaustedError {
  const zone = a.input.quotaResetTimeZone ?? 'UTC';
  // On a code 45 the reset header counts to the end of the day, however short the wait (A17).
  const told = serverQuotaReset(a.input.headers, a.now, { perMinute: 0, windowMs: 0 });
  const day: Pick<QuotaDay, 'fromServer' | 'resetsAt'> =
    told !== null
      ? { fromServer: true, resetsAt: told }
      : (a.input.quotaDay ?? { fromServer: false, resetsAt: nextQuotaReset(a.now, zone) });
  const resumeAt = new Date(day.resetsAt);
  return new QuotaExhaustedError(
    `${a.what}. The organization's daily request quota is used up; svcsync can continue at ${resumeAt.toISOString()}.`,
    {
      ...a.details,
      resumeAt,
      hint:
        `the quota resets ${describeReset(day, zone)}; other integrations of this organization share it. Run again after the reset` +
        (day.fromServer ? '.' : ' (or set quota_reset_time_zone if the reset is at another hour).'),
    },
  );
}

function unauthorized(a: Answer): AuthorizationError {
  const { family, method, path } = a.input;
  // Taken at its word, a scope code stops only the streams needing the scope and any other
  // refusal the whole connection, which shares the token. Neither is final here: decideRetry
  // first treats every 401 as a refused token, and reads a scope code as a missing scope only
  // when fresh tokens keep being refused and the scope never worked (A26).
  const reach = a.code !== undefined && SCOPE_CODES.includes(a.code) ? 'family' : 'connection';
  const needed = family ? scopeFor(family, method, path.replace(/^\/[^/]+\/v\d+/, '')) : undefined;
  const scope = family ? (needed ?? `${SCOPE_PREFIXES[family]}.*`) : undefined;
  return new AuthorizationError(a.what, {
    ...a.details,
    reach,
    scope: reach === 'family' ? needed : undefined,
    hint: scope
      ? `the access token was refused even after a refresh: check that the refresh token was granted scope ${scope}, ` +
        'that the user belongs to the organization, and that the token was issued in this data center.'
      : 'the access token was refused even after a refresh: ' +
        'check the refresh token, its scopes and the data center (region / accounts_url).',
  });
}

function badRequest(a: Answer): FatalError {
  const org = a.input.organizationId;
  return refuse(
    a,
    org === undefined
      ? 'the server refused a parameter of this request; check the values named in the message.'
      : 'the server refused a parameter of this request; check the values named in the message, ' +
          `and that organization ${org} exists and is reachable with this connection.`,
  );
}

function unparsedBody(a: Answer): RetriableError {
  return new RetriableError(`${a.where} → HTTP ${a.status}: the body is not valid JSON (cut short?)`, {
    ...a.details,
    reason: 'invalid_body',
    cause: a.input.parseError,
    hint: 'the response was cut short or is not JSON; svcsync retries.',
  });
}

function notAnEnvelope(a: Answer): RetriableError {
  return new RetriableError(`${a.where} → HTTP ${a.status}: the body is not a JSON object envelope`, {
    ...a.details,
    reason: 'invalid_body',
    hint: 'the response does not have the {code, message, ...} envelope; svcsync retries.',
  });
}

/** One row of the table: when it applies, and the error it makes (null: a success). */
type AnswerRule = readonly [applies: (a: Answer) => boolean, error: (a: Answer) => SvcsyncError | null];

/** What a response means, first matching row wins: the order is the precedence. */
const ANSWER_RULES: readonly AnswerRule[] = [
  // Codes 44, 45 and 1070 mean the same whatever status carries them.
  [
    (a) => a.code === CODES.rateLimited,
    (a) =>
      retry(
        a,
        'rate_limit',
        a.serverWait ?? a.input.windowMs ?? 60_000,
        'the per-minute request limit of this organization was reached; svcsync waits for the window and continues.',
      ),
  ],
  [
    (a) => a.code === CODES.tooManyConcurrent,
    (a) =>
      retry(
        a,
        'concurrency',
        a.serverWait,
        'too many requests were in flight for this organization; svcsync lowers its concurrency and retries.',
      ),
  ],
  [(a) => a.code === CODES.quotaExhausted, quotaExhausted],
  [(a) => a.status === 429, (a) => retry(a, 'server', a.serverWait, 'the server throttled the request; svcsync retries with backoff.')],
  [(a) => a.status >= 500, (a) => retry(a, 'server', a.serverWait, 'the server failed; svcsync retries with backoff.')],
  [(a) => a.status === 401, unauthorized],
  [
    (a) => a.status === 404 || a.code === CODES.notFound,
    (a) => refuse(a, 'the record or path does not exist (it may have been deleted); svcsync does not retry it.'),
  ],
  [
    (a) => a.status === 400 && /per_page/i.test(a.serverMessage ?? ''),
    (a) =>
      refuse(
        a,
        'the server refused the page size: set sync.per_page to the largest value it accepts ' +
          '(the API does not document its maximum; docs/assumptions.md A19).',
      ),
  ],
  [(a) => a.status === 400, badRequest],
  [(a) => a.status === 405, (a) => refuse(a, 'the API does not allow this method on this path; the catalog entry is likely wrong.')],
  [(a) => a.status >= 400, (a) => refuse(a, 'the server refused the request; svcsync does not retry it.')],
  [(a) => a.input.parseError !== undefined, unparsedBody],
  [(a) => a.input.body === null || typeof a.input.body !== 'object' || Array.isArray(a.input.body), notAnEnvelope],
  [(a) => a.code === undefined || a.code === CODES.ok, () => null],
  [
    (a) => a.code === CODES.internal,
    (a) => retry(a, 'server', a.serverWait, 'the server reported an internal error (code 1000); svcsync retries with backoff.'),
  ],
  [() => true, (a) => refuse(a, 'the server answered with a non-zero code; svcsync does not retry it.')],
];

/**
 * The one place that decides what a response or a transport failure means. Returns null
 * for a success (2xx with envelope code 0 or no code); otherwise the typed error, whose
 * kind/reason the client's retry policy reads.
 */
export function classify(input: ClassifyInput, now: number): SvcsyncError | null {
  const scrub = input.scrub ?? ((s: string) => s);
  const request = `${input.method.toUpperCase()} ${input.path}`;
  const org = input.organizationId;
  const where = `${request}${org === undefined ? '' : ` (organization ${org})`}`;
  const base = { request, organizationId: org };
  if (input.networkError !== undefined || input.timedOut) return transportError(input, where, base, scrub);
  const answer = readAnswer(input, where, base, scrub, now);
  const rule = ANSWER_RULES.find(([applies]) => applies(answer));
  return rule ? rule[1](answer) : null;
}
