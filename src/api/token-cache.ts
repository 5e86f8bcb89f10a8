import type { Clock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import { refreshAccessToken, type TokenResponse } from './oauth.js';

export interface TokenCacheOptions {
  accountsUrl: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  redirectUri?: string | undefined;
  /** Overrides the token response's api_domain (connection.api_url). */
  apiUrl?: string | undefined;
  /** For the message when neither api_domain nor api_url gives a host. */
  connectionIndex?: number | undefined;
  clock: Clock;
  secrets: SecretRegistry;
  logger: Logger;
  fetch?: typeof fetch | undefined;
  timeoutMs?: number | undefined;
  /** Refresh this long before expiry (default 5 min), but never more than half the lifetime. */
  marginMs?: number | undefined;
}

export interface AccessToken {
  token: string;
  /** Scheme and host for API calls (api_domain, or api_url when configured). */
  apiBase: string;
  /** When the cache stops handing this token out. */
  refreshAt: number;
}

/** api_domain is a scheme and host ("https://www.svcapis.com"); a bare host gets https. */
function normalizeBase(base: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(base) ? base : `https://${base}`;
  return withScheme.replace(/\/+$/, '');
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * One connection's access token. Cached until shortly before it expires; at most one
 * refresh in flight however many requests wait for it (the authorization server limits
 * token requests, and 20 parallel refreshes would each mint a token).
 */
export class TokenCache {
  private current: AccessToken | null = null;
  private inflight: Promise<AccessToken> | null = null;
  private refreshes = 0;
  /**
   * Scopes a request has succeeded with. They belong to the refresh token's grant, which is
   * why they live here: one cache per connection and refresh token for the whole process, so
   * a daemon's runs share them and a new refresh token (perhaps granted other scopes) starts
   * with none.
   */
  private readonly worked = new Set<string>();

  constructor(private readonly opts: TokenCacheOptions) {
    opts.secrets.add(opts.clientSecret);
    opts.secrets.add(opts.refreshToken);
    opts.secrets.add(opts.clientId);
  }

  /** Token requests made so far (tests and `check` report it). */
  get refreshCount(): number {
    return this.refreshes;
  }

  /** The API base from the last token, or api_url; undefined before the first token without api_url. */
  get apiBase(): string | undefined {
    return this.current?.apiBase ?? (this.opts.apiUrl ? normalizeBase(this.opts.apiUrl) : undefined);
  }

  /**
   * A valid token. The caller's signal only stops this caller's wait: the shared refresh
   * keeps going for the others.
   */
  async get(signal?: AbortSignal): Promise<AccessToken> {
    const cur = this.current;
    if (cur && this.opts.clock.now() < cur.refreshAt) return cur;
    return raceAbort(this.refresh(), signal);
  }

  /** Records that a request needing `scope` succeeded. */
  scopeWorked(scope: string): void {
    this.worked.add(scope);
  }

  /** Whether a request needing `scope` has succeeded with this refresh token in this process. */
  hasScopeWorked(scope: string): boolean {
    return this.worked.has(scope);
  }

  /**
   * Drops the cached token after the API refused it (401). Only when it is the token that
   * failed: ten requests refused with the same old token cause one refresh, not ten.
   */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = null;
  }

  private refresh(): Promise<AccessToken> {
    if (!this.inflight) {
      this.inflight = this.fetchToken().finally(() => {
        this.inflight = null;
      });
    }
    return this.inflight;
  }

  private async fetchToken(): Promise<AccessToken> {
    const requestedAt = this.opts.clock.now();
    this.refreshes++;
    const answer: TokenResponse = await refreshAccessToken({
      accountsUrl: this.opts.accountsUrl,
      clientId: this.opts.clientId,
      clientSecret: this.opts.clientSecret,
      refreshToken: this.opts.refreshToken,
      redirectUri: this.opts.redirectUri,
      fetch: this.opts.fetch,
      clock: this.opts.clock,
      timeoutMs: this.opts.timeoutMs,
      secrets: this.opts.secrets,
    });
    const base = this.opts.apiUrl ?? answer.api_domain;
    if (!base) {
      throw new ConfigError(
        `connections[${this.opts.connectionIndex ?? 0}].api_url: the token response carried no api_domain; ` +
          'set api_url to the API host of this data center',
      );
    }
    const lifetimeMs = answer.expires_in * 1000;
    const margin = Math.min(this.opts.marginMs ?? 5 * 60_000, lifetimeMs / 2);
    // Expiry counts from when we asked, not when the answer came: the server's clock started first.
    const token: AccessToken = { token: answer.access_token, apiBase: normalizeBase(base), refreshAt: requestedAt + lifetimeMs - margin };
    this.current = token;
    this.opts.logger.debug({ expires_in: answer.expires_in, api_base: token.apiBase }, 'access token refreshed');
    return token;
  }
}
