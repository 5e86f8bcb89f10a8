import type { StreamSpec } from '../catalog/types.js';
import type { Family } from '../catalog/families.js';
import { scopeFor } from './families.js';

/**
 * The READ scopes a grant needs for svcsync to read every stream of these families: each
 * list's, each single-record read's and each organization list's, derived from the catalog
 * so that a new stream cannot be forgotten in the README's list (a missing organization-list
 * scope skips the whole family with only a warning; A26). In catalog order, each once.
 */
export function requiredScopes(catalog: readonly StreamSpec[], families: readonly Family[]): string[] {
  const scopes = new Set<string>();
  for (const stream of catalog) {
    if (!families.includes(stream.family)) continue;
    for (const path of [stream.path, stream.detail?.path]) {
      if (path === undefined) continue;
      const scope = scopeFor(stream.family, 'GET', path);
      if (scope === undefined) throw new Error(`${stream.family}.${stream.name}: no scope is known for GET ${path} (SCOPE_RESOURCES)`);
      scopes.add(scope);
    }
  }
  return [...scopes];
}
