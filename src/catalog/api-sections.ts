/**
 * The numbered sections of docs/api.md (the API as svcsync reads it) and their anchors. Catalog
 * descriptions cite them as `docs/api.md §2.5`; docs/warehouse.md turns each citation into a link,
 * and test/docs/links.test.ts holds every link to the headings.
 */
export const API_SECTIONS: Readonly<Record<string, string>> = {
  '1': '1-families-hosts-and-organizations',
  '2': '2-records-and-the-fields-svcsync-keeps',
  '2.1': '21-tasks-invoice',
  '2.2': '22-currencies-inventory',
  '2.3': '23-contact-persons-inventory',
  '2.4': '24-users-books',
  '2.5': '25-sales-orders-inventory',
  '2.6': '26-recurring-expenses-billing',
  '2.7': '27-plans-billing',
  '2.8': '28-vendor-credits-books-and-inventory',
  '2.9': '29-contacts-inventory',
  '2.10': '210-webhooks-books',
  '2.11': '211-events-billing',
  '3': '3-states',
  '4': '4-endpoints-svcsync-calls',
  '4.1': '41-tasks-invoice',
  '4.2': '42-currencies-inventory',
  '4.3': '43-contact-persons-inventory',
  '4.4': '44-users-books',
  '4.5': '45-sales-orders-inventory',
  '4.6': '46-recurring-expenses-billing',
  '4.7': '47-plans-billing',
  '4.8': '48-vendor-credits-inventory',
  '4.9': '49-vendor-credits-books',
  '4.10': '410-contacts-inventory',
  '4.11': '411-webhooks-books',
  '4.12': '412-events-billing',
  '5': '5-authorization',
  '5.1': '51-grant-codes',
  '5.2': '52-tokens',
  '5.3': '53-calling-the-api',
  '5.4': '54-scopes',
  '6': '6-events-and-webhooks',
  '7': '7-errors',
  '8': '8-limits',
  '9': '9-versions',
};

/**
 * Where a catalog entry's `spec` (`"2.7, 4.7, A9, A12"`: API sections, then assumptions) points,
 * as a description's tail: `docs/api.md §2.7, §4.7; docs/assumptions.md A9, A12`.
 */
export function citeSources(spec: string): string {
  const parts = spec.split(/,\s*/).filter((p) => p !== '');
  const sections = parts.filter((p) => !p.startsWith('A'));
  const assumptions = parts.filter((p) => p.startsWith('A'));
  return [
    sections.length > 0 ? `docs/api.md ${sections.map((s) => `§${s}`).join(', ')}` : '',
    assumptions.length > 0 ? `docs/assumptions.md ${assumptions.join(', ')}` : '',
  ]
    .filter((p) => p !== '')
    .join('; ');
}

/** A description for markdown beside docs/api.md: each `docs/api.md §N` a link to its section, and assumptions to theirs. */
export function linkApiSections(text: string): string {
  return text
    .replace(/docs\/assumptions\.md (?=A\d)/g, '[assumptions](assumptions.md) ')
    .replace(/(?:docs\/api\.md )?((?:§\d+(?:\.\d+)?(?:, | and )?)+)/g, (_all, run: string) =>
      run.replace(/§(\d+(?:\.\d+)?)/g, (cite, section: string) => {
        const anchor = API_SECTIONS[section];
        return anchor === undefined ? cite : `[§${section}](api.md#${anchor})`;
      }),
    );
}
