import type { TokenCache } from '../api/token-cache.js';
import { AuthorizationError, ExitCode, describeError, exitCodeFor } from '../core/errors.js';

/**
 * Trying a connection's login now, as `svcsync check` and `svcsync status --check` do: one token
 * request to the authorization server and no API data request. It tells the two failures a
 * user fixes in different places apart: the authorization server refusing the credentials
 * (client id, secret, refresh token, region: exit 3) and not answering at all.
 */
export type LoginOutcome =
  | { result: 'ok' }
  /** The authorization server refused the token request (invalid_client, invalid_client_secret, invalid_code, ...; A20). */
  | { result: 'refused'; error: AuthorizationError }
  /** No token and no refusal: the server could not be reached, or its answer was unusable. */
  | { result: 'failed'; error: unknown };

/** Obtains an access token for the connection (the cache's, if it holds a valid one). */
export async function tryLogin(tokens: Pick<TokenCache, 'get'>): Promise<LoginOutcome> {
  try {
    await tokens.get();
    return { result: 'ok' };
  } catch (error) {
    if (error instanceof AuthorizationError) return { result: 'refused', error };
    return { result: 'failed', error };
  }
}

/** 0 when logged in; 3 when the credentials were refused; else what the failure means (2 configuration, 1 no answer). */
export function loginExitCode(outcome: LoginOutcome): ExitCode {
  if (outcome.result === 'ok') return ExitCode.ok;
  if (outcome.result === 'refused') return ExitCode.authorization;
  return exitCodeFor(outcome.error);
}

/** The outcome as `check` and `status --check` print it, to go under the connection's line. */
export function loginLines(outcome: LoginOutcome): string[] {
  if (outcome.result === 'ok') return ['✓ login: the authorization server accepted the client id, secret and refresh token'];
  const [message, ...hint] = describeError(outcome.error).split('\n');
  const what = outcome.result === 'refused' ? 'login refused' : 'could not log in';
  return [`✗ ${what}: ${message}`, ...hint.map((h) => `  ${h.trim()}`)];
}
