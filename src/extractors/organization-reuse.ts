/**
 * A family whose organization list does not exist (the spec names the list's scope for books,
 * inventory and invoice only; assumption A13) still has organizations: the business is the
 * same one. Which ids such a family is read for is decided here, from what the other families
 * listed and what the connection names, so the rule has a table test of its own.
 */

import { FatalError } from '../core/errors.js';

/** A family's organization list answered 404: the family has none (A13). */
export function hasNoOrganizationList(error: unknown): error is FatalError {
  return error instanceof FatalError && error.status === 404;
}

export interface ReuseInput {
  /** The organization records the families that do have a list listed, by id (an active one wins). */
  listed: ReadonlyMap<string, Record<string, unknown>>;
  /** The ids the connection (or `sync --org`) names; undefined: all. */
  wanted: readonly string[] | undefined;
}

/**
 * The ids a family without an organization list is read for:
 * - ids the connection names that no listing family listed: they can only be meant for the
 *   unlisted family (the businesses whose ids differ per family, A31), so only those;
 * - otherwise the named ids the other families listed, or every active one when the
 *   connection names none (an inactive organization is read only when named; A22).
 */
export function organizationsForUnlistedFamily(input: ReuseInput): string[] {
  const { listed, wanted } = input;
  const active = (id: string): boolean => listed.has(id) && listed.get(id)!['is_org_active'] !== false;
  if (wanted) {
    const onlyHere = wanted.filter((id) => !listed.has(id));
    if (onlyHere.length > 0) return onlyHere;
    return wanted.filter((id) => listed.has(id));
  }
  return [...listed.keys()].filter(active);
}
