import type { RedactByName } from '../catalog/types.js';

/**
 * Names under which a value is a credential: a webhook's `Authorization` header, a
 * `?secret=` or `token=` in its URL (docs/daemon.md has users put svcsync's own hook secret
 * there), an API key. Over-matching only hides a value that was harmless.
 */
const SENSITIVE_NAME = /secret|token|auth|passw|pwd|api[-_]?key|access[-_]?key|signature|credential|session|cookie/i;

export const REDACTED = '[redacted]';

export function isSensitiveName(name: string): boolean {
  return SENSITIVE_NAME.test(name);
}

/** A URL with the value of each query parameter whose name is sensitive replaced. */
export function redactUrlQuery(url: string): string {
  return url.replace(/([?&;])([^=&#;]*)=([^&#;]*)/g, (whole, sep: string, name: string, value: string) =>
    value !== '' && isSensitiveName(decodeName(name)) ? `${sep}${name}=${REDACTED}` : whole,
  );
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/**
 * The record with every credential found by name replaced (pure: a copy where anything
 * changed, the record itself where nothing did), so that the columns, the child rows, `_raw`
 * and the hash all get the redacted value.
 */
export function redactByName(rule: RedactByName, raw: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | null = null;
  for (const field of rule.urls) {
    const value = raw[field];
    if (typeof value !== 'string') continue;
    const redacted = redactUrlQuery(value);
    if (redacted !== value) (copy ??= { ...raw })[field] = redacted;
  }
  for (const field of rule.pairs) {
    const list = raw[field];
    if (!Array.isArray(list)) continue;
    let changed = false;
    const next = list.map((item: unknown) => {
      if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
      const pair = item as Record<string, unknown>;
      const name = pair[rule.name];
      const value = pair[rule.value];
      if (typeof name !== 'string' || value === undefined || value === null || value === '' || !isSensitiveName(name)) return item;
      changed = true;
      return { ...pair, [rule.value]: REDACTED };
    });
    if (changed) (copy ??= { ...raw })[field] = next;
  }
  return copy ?? raw;
}

/** What a stream redacts (`StreamSpec.redact` and `redactByName`), worked out once per stream plan. */
export interface Redaction {
  /** Top-level fields whose value never reaches the warehouse (a webhook's signing secret). */
  fields: readonly string[];
  byName: RedactByName | null;
}

/**
 * The one redaction step: the record as the warehouse may hold it, before anything is read
 * from it, so the columns, the child rows, `_raw` and the hash agree. Pure; a copy only where
 * something changed.
 */
export function redactRecord(redaction: Redaction, raw: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | null = null;
  for (const field of redaction.fields) {
    const value = raw[field];
    if (value !== undefined && value !== null && value !== '') (copy ??= { ...raw })[field] = REDACTED;
  }
  const named = copy ?? raw;
  return redaction.byName === null ? named : redactByName(redaction.byName, named);
}
