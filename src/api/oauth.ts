import type { ConnectionConfig } from '../config/schema.js';
import { DEFAULT_ACCOUNTS_URLS, type Region } from '../config/plans.js';
import type { Clock } from '../core/clock.js';
import { AuthorizationError, ConfigError, RetriableError, type SvcsyncError } from '../core/errors.js';
import type { SecretRegistry } from '../core/secrets.js';
import { parseJson } from './json.js';
import { userAgent } from './user-agent.js';

/** Spec 5.2 token response; refresh_token only with the first offline grant. */
export interface TokenResponse {
  access_token: string;
  expires_in: number;
  api_domain?: string | undefined;
  token_type?: string | undefined;
  refresh_token?: string | undefined;
  scope?: string | undefined;
}

export interface GrantExchangeResult {
  refresh_token: string;
  access_token: string;
  api_domain: string;
  expires_in: number;
  scope?: string | undefined;
}

/** What every token-endpoint call needs besides its own fields. */
export interface TokenEndpointDeps {
  fetch?: typeof fetch | undefined;
  /** With timeoutMs, bounds the call on this clock. */
  clock?: Clock | undefined;
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Every token received is registered here so logs and errors scrub it. */
  secrets?: SecretRegistry | undefined;
}

/**
 * The authorization server for a connection: its own accounts_url, else the config file's
 * regions table, else the built-in table (A1). China and Saudi Arabia have none in the spec.
 */
export function resolveAccountsUrl(
  connection: Pick<ConnectionConfig, 'region' | 'accounts_url'>,
  regions?: Partial<Record<Region, string>>,
  connectionIndex = 0,
): string {
  const url = connection.accounts_url ?? regions?.[connection.region] ?? DEFAULT_ACCOUNTS_URLS[connection.region];
  if (!url) {
    throw new ConfigError(
      `connections[${connectionIndex}].accounts_url: region ${connection.region} has no known authorization server ` +
        '(docs/api.md §1, docs/assumptions.md A1); set accounts_url',
    );
  }
  return url.replace(/\/+$/, '');
}

/** Spec 5.4 / A20: what each OAuth error identifier asks the user to check. */
export const OAUTH_ERROR_HINTS: Record<string, string> = {
  invalid_client: 'the client id is wrong or was registered in another data center: check client_id, and region / accounts_url.',
  invalid_client_secret:
    'the client secret is wrong, has whitespace around it, or belongs to another data center: ' +
    'copy it again from the developer console and check region / accounts_url.',
  invalid_code: 'the grant code or refresh token was already used, expired (grant codes live 60–120 s) or was revoked: generate a new one.',
  invalid_redirect_uri: 'redirect_uri differs from the one registered for the client: make them identical.',
};

function oauthError(action: string, identifier: string, status: number): AuthorizationError {
  const hint =
    OAUTH_ERROR_HINTS[identifier] ?? 'the authorization server refused the request: check the client id, secret, refresh token and region.';
  return new AuthorizationError(`${action} was refused by the authorization server: ${identifier}`, {
    status,
    hint,
    byAuthorizationServer: true,
    request: `POST ${action === 'token revocation' ? '/oauth/v2/token/revoke' : '/oauth/v2/token'}`,
  });
}

interface RawAnswer {
  status: number;
  body: unknown;
  /** The body was not JSON (decided by the caller: revoke ignores bodies, A21). */
  invalidBody: boolean;
}

async function postForm(url: string, fields: Record<string, string>, deps: TokenEndpointDeps, action: string): Promise<RawAnswer> {
  const doFetch = deps.fetch ?? globalThis.fetch;
  const controller = new AbortController();
  let timedOut = false;
  const timer =
    deps.clock && deps.timeoutMs
      ? deps.clock.setTimeout(() => {
          timedOut = true;
          controller.abort(new Error('token request timed out'));
        }, deps.timeoutMs)
      : undefined;
  const onAbort = (): void => controller.abort(deps.signal?.reason);
  if (deps.signal?.aborted) throw deps.signal.reason;
  deps.signal?.addEventListener('abort', onAbort, { once: true });
  const request = `POST ${new URL(url).pathname}`;
  try {
    // Form body, never the query string: the secret and tokens must not end up in URLs or proxy logs.
    const response = await doFetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json', 'User-Agent': userAgent() },
      body: new URLSearchParams(fields).toString(),
      signal: controller.signal,
    });
    const text = await response.text();
    let body: unknown;
    let invalidBody = false;
    try {
      body = text.trim() === '' ? undefined : parseJson(text);
    } catch {
      invalidBody = true;
    }
    return { status: response.status, body, invalidBody };
  } catch (err) {
    if (deps.signal?.aborted) throw deps.signal.reason;
    throw new RetriableError(`${action}: ${request} ${timedOut ? 'timed out' : 'failed: ' + describe(err)}`, {
      request,
      reason: timedOut ? 'timeout' : 'network',
      cause: err,
      hint: 'the authorization server could not be reached; svcsync retries. Check network access and accounts_url if it persists.',
    });
  } finally {
    timer?.cancel();
    deps.signal?.removeEventListener('abort', onAbort);
  }
}

function describe(err: unknown): string {
  const e = err as { message?: unknown; cause?: { code?: unknown; message?: unknown } } | undefined;
  const code = typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return code ? `${code}: ${message}` : message;
}

/** Turns a token-endpoint answer into a token, or the error it means. */
function readTokenAnswer(answer: RawAnswer, action: string): TokenResponse | SvcsyncError {
  const body = answer.body && typeof answer.body === 'object' ? (answer.body as Record<string, unknown>) : {};
  const error = body['error'];
  if (typeof error === 'string' && error.length > 0) return oauthError(action, error, answer.status);
  if (answer.status >= 500 || answer.status === 429) {
    return new RetriableError(`${action}: POST /oauth/v2/token → HTTP ${answer.status}`, {
      request: 'POST /oauth/v2/token',
      status: answer.status,
      reason: 'server',
      hint: 'the authorization server failed; svcsync retries.',
    });
  }
  if (answer.status < 400 && answer.invalidBody) {
    return new RetriableError(`${action}: POST /oauth/v2/token → HTTP ${answer.status}: the body is not valid JSON`, {
      request: 'POST /oauth/v2/token',
      status: answer.status,
      reason: 'invalid_body',
      hint: 'the authorization server answered with something other than JSON; svcsync retries. Check accounts_url if it persists.',
    });
  }
  if (answer.status >= 400) {
    return new AuthorizationError(`${action} was refused by the authorization server: HTTP ${answer.status}`, {
      request: 'POST /oauth/v2/token',
      status: answer.status,
      byAuthorizationServer: true,
      hint: 'check the client id, secret, refresh token and region / accounts_url.',
    });
  }
  const accessToken = body['access_token'];
  if (typeof accessToken !== 'string' || accessToken.length === 0) {
    return new AuthorizationError(`${action}: the token response carried no access_token`, {
      request: 'POST /oauth/v2/token',
      status: answer.status,
      byAuthorizationServer: true,
      hint: 'the authorization server answered without a token; check accounts_url points at the authorization server.',
    });
  }
  const str = (k: string): string | undefined => (typeof body[k] === 'string' ? body[k] : undefined);
  return {
    access_token: accessToken,
    expires_in: lifetimeSeconds(body),
    api_domain: str('api_domain'),
    token_type: str('token_type'),
    refresh_token: str('refresh_token'),
    scope: str('scope'),
  };
}

/** Spec 5 and 8: an access token lives one hour. */
const MAX_TOKEN_LIFETIME_S = 3600;

/**
 * How long the token may be used, in seconds (A40). `expires_in_sec` wins where it is sent (some
 * servers of this kind send it beside an `expires_in` in milliseconds); a lifetime past the
 * spec's hour (milliseconds, or a server that promises more) is read as one hour, and so is none.
 */
function lifetimeSeconds(body: Record<string, unknown>): number {
  for (const key of ['expires_in_sec', 'expires_in']) {
    const raw = body[key];
    const seconds = typeof raw === 'number' || typeof raw === 'string' ? Number(raw) : Number.NaN;
    if (Number.isFinite(seconds) && seconds > 0) return Math.min(seconds, MAX_TOKEN_LIFETIME_S);
  }
  return MAX_TOKEN_LIFETIME_S;
}

function registerTokens(secrets: SecretRegistry | undefined, t: TokenResponse): void {
  secrets?.add(t.access_token);
  secrets?.add(t.refresh_token);
}

export interface RefreshRequest extends TokenEndpointDeps {
  accountsUrl: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  redirectUri?: string | undefined;
}

/** Spec 5.2, grant_type=refresh_token. */
export async function refreshAccessToken(req: RefreshRequest): Promise<TokenResponse> {
  req.secrets?.add(req.clientSecret);
  req.secrets?.add(req.refreshToken);
  const fields: Record<string, string> = {
    grant_type: 'refresh_token',
    refresh_token: req.refreshToken,
    client_id: req.clientId,
    client_secret: req.clientSecret,
  };
  if (req.redirectUri) fields['redirect_uri'] = req.redirectUri;
  const answer = await postForm(`${req.accountsUrl}/oauth/v2/token`, fields, req, 'token refresh');
  const result = readTokenAnswer(answer, 'token refresh');
  if (result instanceof Error) throw result;
  registerTokens(req.secrets, result);
  return result;
}

export interface ExchangeRequest extends TokenEndpointDeps {
  accountsUrl: string;
  clientId: string;
  clientSecret: string;
  code: string;
  redirectUri?: string | undefined;
}

/** Spec 5.2, grant_type=authorization_code: turns a (self-client) grant code into a refresh token. */
export async function exchangeGrantCode(req: ExchangeRequest): Promise<GrantExchangeResult> {
  req.secrets?.add(req.clientSecret);
  req.secrets?.add(req.code);
  const fields: Record<string, string> = {
    grant_type: 'authorization_code',
    code: req.code,
    client_id: req.clientId,
    client_secret: req.clientSecret,
  };
  if (req.redirectUri) fields['redirect_uri'] = req.redirectUri;
  const answer = await postForm(`${req.accountsUrl}/oauth/v2/token`, fields, req, 'grant code exchange');
  const result = readTokenAnswer(answer, 'grant code exchange');
  if (result instanceof Error) throw result;
  registerTokens(req.secrets, result);
  if (!result.refresh_token) {
    throw new AuthorizationError('grant code exchange: the token response carried no refresh_token', {
      request: 'POST /oauth/v2/token',
      byAuthorizationServer: true,
      hint: 'the grant was created for online access only: generate a new grant code with offline access (self client grants include it).',
    });
  }
  if (!result.api_domain) {
    throw new AuthorizationError('grant code exchange: the token response carried no api_domain', {
      request: 'POST /oauth/v2/token',
      byAuthorizationServer: true,
      hint: 'check that accounts_url points at the authorization server of your data center.',
    });
  }
  return {
    refresh_token: result.refresh_token,
    access_token: result.access_token,
    api_domain: result.api_domain,
    expires_in: result.expires_in,
    scope: result.scope,
  };
}

export interface RevokeRequest extends TokenEndpointDeps {
  accountsUrl: string;
  token: string;
}

/** Spec 5.2 revoke; any 2xx means revoked (A21) unless the body names an OAuth error. */
export async function revokeToken(req: RevokeRequest): Promise<void> {
  req.secrets?.add(req.token);
  const answer = await postForm(`${req.accountsUrl}/oauth/v2/token/revoke`, { token: req.token }, req, 'token revocation');
  const body = answer.body && typeof answer.body === 'object' ? (answer.body as Record<string, unknown>) : {};
  if (typeof body['error'] === 'string' && body['error'].length > 0) throw oauthError('token revocation', body['error'], answer.status);
  if (answer.status >= 500) {
    throw new RetriableError(`token revocation: POST /oauth/v2/token/revoke → HTTP ${answer.status}`, {
      request: 'POST /oauth/v2/token/revoke',
      status: answer.status,
      reason: 'server',
      hint: 'the authorization server failed; try again.',
    });
  }
  if (answer.status >= 300) {
    throw new AuthorizationError(`token revocation was refused: HTTP ${answer.status}`, {
      request: 'POST /oauth/v2/token/revoke',
      status: answer.status,
      byAuthorizationServer: true,
      hint: 'check the token and region / accounts_url.',
    });
  }
}
