/**
 * A family whose organization list does not exist (the spec names the list's scope for books,
 * inventory and invoice only; assumption A13) still has organizations: the business is the
 * same one. Which ids such a family is read for is decided here, from what the other families
 * listed and what the connection names, so the rule has a table test of its own.
 */

export interface ReuseInput {
  /** Every id the families that do have a list listed, active or not. */
  listed: ReadonlySet<string>;
  /** Of those, the active ones (inactive organizations are never read; A22). */
  active: ReadonlySet<string>;
  /** The ids the connection (or `sync --org`) names; undefined: all. */
  wanted: readonly string[] | undefined;
}

/**
 * The ids a family without an organization list is read for:
 * - ids the connection names that no listing family listed: they can only be meant for the
 *   unlisted family (the businesses whose ids differ per family, A31), so only those;
 * - otherwise the named ids the other families listed as active, or every active one when
 *   the connection names none.
 */
export function organizationsForUnlistedFamily(input: ReuseInput): string[] {
  const { listed, active, wanted } = input;
  if (wanted) {
    const onlyHere = wanted.filter((id) => !listed.has(id));
    if (onlyHere.length > 0) return onlyHere;
    return wanted.filter((id) => active.has(id));
  }
  return [...active];
}
