/**
 * The authorization server of spec 5: refresh-token and authorization-code grants, revoke,
 * and the check of `Authorization: Svc-oauthtoken <token>` on API calls.
 */
import { randomBytes } from 'node:crypto';

export interface Credentials {
  client_id: string;
  client_secret: string;
  refresh_token: string;
  redirect_uri: string;
}

export const DEFAULT_CREDENTIALS: Credentials = {
  client_id: '1000.SANDBOXCLIENT0000000000000000',
  client_secret: 'sandbox0secret0do0not0use0in0production0000',
  refresh_token: '1000.sandboxrefresh00000000000000.0000000000000000000000000000000',
  redirect_uri: 'http://127.0.0.1/oauth/callback',
};

const CODE_VALIDITY_MS = 120_000;

interface RefreshToken {
  scopes: string[] | undefined;
  revoked: boolean;
}
interface AccessToken {
  refresh: string;
  expires: number;
  scopes: string[] | undefined;
  revoked: boolean;
}
interface GrantCode {
  expires: number;
  used: boolean;
  scopes: string[] | undefined;
}

export type AuthResult = { ok: true; scopes: string[] | undefined } | { ok: false };

export interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
  grant?: 'refresh' | 'authorization_code' | 'revoke';
}

function token(prefix: string): string {
  return `${prefix}.${randomBytes(16).toString('hex')}.${randomBytes(16).toString('hex')}`;
}

export class OAuthServer {
  private readonly refreshTokens = new Map<string, RefreshToken>();
  private readonly accessTokens = new Map<string, AccessToken>();
  private readonly codes = new Map<string, GrantCode>();

  constructor(
    readonly credentials: Credentials,
    scopes: string[] | undefined,
    private readonly expiresInS: number,
    private readonly apiDomain: () => string,
    /** Variant tokenLifetimeMillis: `expires_in` in milliseconds, the seconds in `expires_in_sec`. */
    private readonly lifetimeInMillis = false,
  ) {
    this.refreshTokens.set(credentials.refresh_token, { scopes, revoked: false });
  }

  issueGrantCode(now: number, scopes: string[] | undefined): string {
    const code = token('1000');
    this.codes.set(code, { expires: now + CODE_VALIDITY_MS, used: false, scopes });
    return code;
  }

  token(params: URLSearchParams, now: number): TokenAnswer {
    const grant = params.get('grant_type');
    if (grant !== 'refresh_token' && grant !== 'authorization_code') {
      return { status: 400, body: { error: 'unsupported_grant_type' } };
    }
    if (params.get('client_id') !== this.credentials.client_id) return { status: 400, body: { error: 'invalid_client' } };
    if (params.get('client_secret') !== this.credentials.client_secret) return { status: 400, body: { error: 'invalid_client_secret' } };
    const redirect = params.get('redirect_uri');
    // The refresh grant may omit redirect_uri (the service does not need it to refresh); a wrong one is refused.
    if ((grant === 'authorization_code' || redirect !== null) && redirect !== this.credentials.redirect_uri) {
      return { status: 400, body: { error: 'invalid_redirect_uri' } };
    }
    if (grant === 'refresh_token') {
      const refresh = params.get('refresh_token') ?? '';
      const entry = this.refreshTokens.get(refresh);
      if (!entry || entry.revoked) return { status: 400, body: { error: 'invalid_code' } };
      const access = this.mint(refresh, entry.scopes, now);
      return {
        status: 200,
        grant: 'refresh',
        body: { access_token: access, api_domain: this.apiDomain(), token_type: 'Bearer', ...this.lifetime() },
      };
    }
    const code = this.codes.get(params.get('code') ?? '');
    if (!code || code.used || now >= code.expires) return { status: 400, body: { error: 'invalid_code' } };
    code.used = true;
    const refresh = token('1000');
    this.refreshTokens.set(refresh, { scopes: code.scopes, revoked: false });
    const access = this.mint(refresh, code.scopes, now);
    return {
      status: 200,
      grant: 'authorization_code',
      body: {
        access_token: access,
        refresh_token: refresh,
        api_domain: this.apiDomain(),
        token_type: 'Bearer',
        ...this.lifetime(),
      },
    };
  }

  private lifetime(): Record<string, number> {
    return this.lifetimeInMillis
      ? { expires_in: this.expiresInS * 1000, expires_in_sec: this.expiresInS }
      : { expires_in: this.expiresInS };
  }

  revoke(params: URLSearchParams): TokenAnswer {
    const t = params.get('token') ?? '';
    const refresh = this.refreshTokens.get(t);
    if (refresh) refresh.revoked = true;
    const access = this.accessTokens.get(t);
    if (access) access.revoked = true;
    return { status: 200, grant: 'revoke', body: { status: 'success' } };
  }

  /**
   * Revokes the access token an Authorization header carries (fault revokeEverySeconds), as
   * its user or the service may at any time; the refresh token keeps working. False when the
   * header carries no valid token.
   */
  revokeAccessToken(header: string | undefined, now: number): boolean {
    if (!this.authenticate(header, now).ok) return false;
    this.accessTokens.get(header!.slice(15).trim())!.revoked = true;
    return true;
  }

  authenticate(header: string | undefined, now: number): AuthResult {
    if (!header || !header.startsWith('Svc-oauthtoken ')) return { ok: false };
    const entry = this.accessTokens.get(header.slice(15).trim());
    if (!entry || entry.revoked || now >= entry.expires) return { ok: false };
    const parent = this.refreshTokens.get(entry.refresh);
    if (!parent || parent.revoked) return { ok: false };
    return { ok: true, scopes: entry.scopes };
  }

  private mint(refresh: string, scopes: string[] | undefined, now: number): string {
    const access = token('1000');
    this.accessTokens.set(access, { refresh, expires: now + this.expiresInS * 1000, scopes, revoked: false });
    return access;
  }
}

/** READ scope `needed` (e.g. SvcInventory.salesorders.READ) is granted by itself, `.ALL`, or `<Service>.fullaccess.all`. */
export function hasScope(granted: string[] | undefined, needed: string): boolean {
  if (!granted) return true;
  const [service, scope] = needed.split('.');
  const wanted = needed.toLowerCase();
  return granted.some((g) => {
    const s = g.trim().toLowerCase();
    return s === wanted || s === `${service}.${scope}.all`.toLowerCase() || s === `${service}.fullaccess.all`.toLowerCase();
  });
}
