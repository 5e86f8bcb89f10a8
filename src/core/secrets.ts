/**
 * Secrets (client secret, refresh and access tokens, grant codes) are registered here as
 * soon as they are known, and every log line and user-facing error is scrubbed of them.
 * Key-based redaction alone is not enough: a token can end up inside a message or a URL.
 */
export const REDACTED = '[REDACTED]';

export class SecretRegistry {
  private readonly values = new Set<string>();
  private pattern: RegExp | null = null;

  /** Shorter values are not registered: replacing them would mangle ordinary text. */
  static readonly minLength = 6;

  add(value: string | undefined | null): void {
    if (typeof value !== 'string') return;
    const v = value.trim();
    if (v.length < SecretRegistry.minLength || this.values.has(v)) return;
    this.values.add(v);
    this.pattern = null;
  }

  get size(): number {
    return this.values.size;
  }

  scrub(text: string): string {
    if (this.values.size === 0 || text.length === 0) return text;
    if (!this.pattern) {
      const alternatives = [...this.values].sort((a, b) => b.length - a.length).map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
      this.pattern = new RegExp(alternatives.join('|'), 'g');
    }
    return text.replace(this.pattern, REDACTED);
  }
}

/** Keys whose values are secret wherever they appear (logs, errors, config echoes). */
export const SECRET_KEYS = [
  'authorization',
  'Authorization',
  'access_token',
  'refresh_token',
  'client_secret',
  'code',
  'token',
  'password',
  'secret',
] as const;
