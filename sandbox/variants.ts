/**
 * Variants: for each place where the spec leaves a choice open, and for some real-world
 * quirks, a switch that makes the sandbox take the OTHER choice. All off by default (the
 * sandbox then behaves exactly as documented without them); the `hostile` preset turns every
 * one on. See docs/sandbox.md, "Variants".
 *
 * Variants that change records are applied once, when a record is generated (the per-record
 * JSON cache then holds the changed text), not per request.
 */
import type { OrgGen } from './organizations.js';
import { Rng } from './random.js';
import { STREAMS } from './stream-catalog.js';
import type { Rec, StreamDef } from './stream-types.js';

export interface Variants {
  /**
   * Lists that do page leave `page_context` out entirely (top-level and child lists, and organization
   * lists). A client must then keep asking for the next page while a page is full (holds per_page
   * records; per_page defaults to 200 when not sent).
   */
  omitPageContext: boolean;
  /**
   * `X-Rate-Limit-Limit` (per-day quota), `X-Rate-Limit-Remaining` (left today) and `X-Rate-Limit-Reset`
   * (seconds of sandbox time until the daily quota resets: UTC midnight, or the organization's with
   * localQuotaDay) on EVERY API response, errors and 5xx included (today only 429s carry them).
   */
  rateLimitHeaders: boolean;
  /**
   * Each organization's daily quota resets at its local midnight (its `time_zone`, at the fixed
   * offset its timestamps carry) instead of UTC midnight (A15), and every API answer naming the
   * organization carries `X-Rate-Limit-Reset`: the seconds of sandbox time until then.
   */
  localQuotaDay: boolean;
  /**
   * Probability (0..1) that an API request carrying a perfectly valid token is refused anyway,
   * answered as a refused token (401, code `refusedTokenCode`), for `spurious401Run` arrivals.
   * Seeded per request: the n-th time a request (method, URL, organization header) arrives with
   * a valid token is refused or not whatever else arrives in between. Not counted against limits.
   */
  spurious401Rate: number;
  /**
   * How many arrivals in a row of the same request a spurious refusal lasts (1 to 10): with 2,
   * the request is refused again when it comes back with a freshly refreshed token, as a
   * service that keeps refusing a user's tokens for a moment does. The arrival after a run is
   * always let through, so no request meets more than this many spurious refusals in a row.
   */
  spurious401Run: number;
  /**
   * The envelope code of the 401 answering a refused token (absent, unknown, expired or
   * revoked, or refused by spurious401Rate): 14 {"Invalid OAuth token"} by default; any other
   * code comes with "invalid or expired OAuth token", as a server that answers them with 57,
   * the code this sandbox gives a missing scope, words it (A26).
   */
  refusedTokenCode: number;
  /** No `Retry-After` header on any answer (429s included). */
  noRetryAfter: boolean;
  /**
   * API answers come gzip-compressed (`Content-Encoding: gzip`) whenever the request's
   * `Accept-Encoding` names gzip, as a service behind a compressing front end answers. The spec
   * says nothing of compression either way.
   */
  compressAnswers: boolean;
  /**
   * Lists (`family.stream` names) that ignore `sort_column`/`sort_order` and answer in their default
   * order; page_context (when sent) reports the order actually used.
   */
  ignoreSort: string[];
  /**
   * EVERY id field (`*_id` whose value is digits, in lists and nested objects/arrays) of EVERY
   * organization sent as a bare JSON number with 19 digits, past 2^53. `organization_id` stays a string.
   * Truth holds the same digits as strings.
   */
  numericIds: boolean;
  /**
   * Timestamps in every offset form, mixed per record (`+0530`, `+05:30`, `Z`, `-1100`, `-08:00`, ...),
   * so that text order differs from instant order. Instants are unchanged.
   */
  mixedOffsets: boolean;
  /**
   * Probability (0..1) per optional non-key field that it is absent, null or "" (seeded, deterministic
   * per record version). Never the primary key, parent key or change-time field. Truth reflects what is
   * served.
   */
  sparseFields: number;
  /**
   * Unknown extra fields `x_new_field_<n>` on records (top level and inside line items): a string, a
   * number, a nested object. Truth includes them.
   */
  extraFields: boolean;
  /**
   * A single object where an array of one object is usual (`line_items`, embedded refunds and credited
   * bills), and string arrays where objects are usual (`documents`). Truth holds the rows a client
   * should keep: a single object as a one-element array, a string array as [].
   */
  arrayQuirks: boolean;
  /**
   * The same business has a different organization_id in each family (books/inventory/invoice/billing),
   * instead of one id shared by all four.
   */
  orgIdPerFamily: boolean;
  /**
   * Lists that take `filter_by`, called WITHOUT it, hide inactive/void/stopped/etc. records. With an
   * explicit All value everything is listed.
   */
  defaultFiltersHide: boolean;
  /**
   * After every Nth list page served for an organization (0 = off), one record of that stream is
   * modified and one created, as `mutate` does. Top-level streams with a change field only.
   */
  changeWhilePagingEvery: number;
  /**
   * `exchange_rate` quoted the other way (A37): units of the record's currency per one unit of
   * the base currency, 1 / the default reading, on every top-level record that carries one.
   * `bcy_*` amounts are unchanged. Truth holds what is served.
   */
  inverseExchangeRate: boolean;
  /**
   * Line items (sales orders', vendor credits') carry no `bcy_rate`, the line's rate in the base
   * currency: a client must derive it from `rate` and the record's `exchange_rate` (A37). Truth
   * holds what is served.
   */
  omitLineBcyRate: boolean;
  /**
   * Text that no Postgres column holds (A38): on about one record in four, the first name,
   * description or notes field ends in a NUL character and an unpaired surrogate, sent as the
   * escapes `\u0000\ud800`. Keys and change times are never touched. Truth holds what is served.
   */
  oddText: boolean;
  /**
   * Project and task hours (`total_hours`, `billed_hours`, `un_billed_hours`, `log_time`) as JSON
   * numbers of decimal hours (12.5), the spec's declared type (double), instead of the sample's
   * hh:mm text ("12:30"). Truth holds what is served.
   */
  hoursAsNumbers: boolean;
  /**
   * The token endpoint's `expires_in` in milliseconds, with the seconds in `expires_in_sec`
   * (A40), as some authorization servers of this kind answer, instead of `expires_in` in seconds.
   */
  tokenLifetimeMillis: boolean;
  /**
   * The invoice family's endpoints other than the task ones (projects) identify the organization
   * by the `organization_id` query parameter alone, as spec 4 says of every endpoint whose
   * header form is not stated; the header is ignored there (A41).
   */
  invoiceOrgInQuery: boolean;
  /**
   * The most records a list page holds (A19; 0: per_page as asked, up to 200). A larger
   * per_page is not refused: the page is cut to the cap, and `page` counts pages of the cap's
   * size; `page_context` (when sent) reports the `per_page` used.
   */
  perPageCap: number;
  /**
   * Every list page holds this many records (the last one fewer), whatever per_page asked,
   * more or fewer (A19; 0: off; overrides perPageCap). `page` counts pages of this size and
   * `page_context` (when sent) reports it: a server that ignores per_page.
   */
  fixedPageSize: number;
  /**
   * Families (`books`, `inventory`, `invoice`, `billing`) that have no organization list: their
   * `GET /organizations` answers 404 {code: 5} as an unknown path does (A13). Their other
   * endpoints accept the organization ids as usual.
   */
  noOrganizationList: string[];
  /**
   * The envelope code of the 404 answering a single record, or a child list, of a record that
   * does not exist (A4; the spec's sample is 1002, and its code list is not shown).
   */
  missingRecordCode: number;
  /**
   * Fields the spec writes differently from section to section, written the other way: the
   * custom-field id as `customfield_id` where the section says `custom_field_id` and the other
   * way round; VAT summary entries flat where the section wraps them in `tax` (vendor credits,
   * 2.8) and wrapped where it writes them flat (recurring expenses, 2.6). Truth holds what is served.
   */
  otherSpellings: boolean;
  /**
   * A list whose response key the spec does not show answers under another plausible key: the
   * books family's per-credit refunds (spec 4.9: "refunds of the credit") under `refunds`.
   */
  otherListKeys: boolean;
  /**
   * The per-parent lists whose paging the spec does not declare (refunds and credited bills of
   * a vendor credit, a contact's comments; A11), asked without `per_page`, hold this many
   * records a page (0: off, they hold 200). With `per_page` they page as asked.
   */
  undeclaredPageSize: number;
  /** Those lists refuse `page` and `per_page`: 400 {code: 2} naming the parameter (A11). */
  strictUndeclaredLists: boolean;
  /**
   * A single record (a detail GET, or one child record) answered as an array of one object under
   * its key, as spec 4.2 and 4.3 show currencies and contact persons (A4).
   */
  singleRecordArray: boolean;
  /** A list page that holds no record carries its key as `null` instead of `[]` (A4). */
  nullEmptyLists: boolean;
  /**
   * The concurrency limit counts one user's requests in flight across all the organizations its
   * token reaches, instead of each organization's (A46): 429 {code: 1070} beyond it.
   */
  concurrencyPerUser: boolean;
  /**
   * The organization lists hold this many organizations a page whatever per_page asked (0: off,
   * they page at per_page, 200 by default); `page_context` (when sent) reports it.
   */
  organizationPageSize: number;
  /**
   * The last N organizations are listed with `is_org_active: false`, and their endpoints answer
   * as usual (A22: a suspended or expired organization whose history is still readable).
   */
  inactiveOrganizations: number;
  /**
   * Every generated record was last changed when it was created (no edits since), so a list in
   * creation order is in change order too until something changes (A8: a server that ignores
   * the sort then sends a first page that looks sorted).
   */
  uneditedRecords: boolean;
  /**
   * A vendor credit's single record sends its embedded `vendor_credit_refunds[]` and
   * `bills_credited[]` short: this share of each array's entries (rounded up) left off the end,
   * 1 = always empty. Its `total_refunded_amount` and `total_credits_used` still sum every entry
   * (spec 2.8 lists the arrays but not that they are complete). Truth holds every entry.
   */
  embeddedChildrenDropped: number;
  /**
   * A vendor credit's single record sends `vendor_credit_refunds: []`, `bills_credited: []`,
   * `total_refunded_amount: 0` and `total_credits_used: 0`, whatever its refunds and credited
   * bills; only the per-credit lists (`/vendorcredits/{id}/refunds`, `/bills`) hold them. The
   * record's totals then agree with its arrays and say nothing (A48's other reading). Truth holds
   * every entry.
   */
  embeddedChildrenEmpty: boolean;
  /**
   * Share (0-1) of the refunds the inventory family's list of all refunds (`/vendorcredits/refunds`)
   * leaves out (every n-th entry, deterministically); each credit's own list still holds them all
   * (A49's other reading). Truth holds every refund.
   */
  allRefundsOmitted: number;
  /**
   * The inventory family's list of all refunds (`GET /vendorcredits/refunds`, spec 4.8: "all
   * refunds with pagination", entries not shown) sends entries without `vendor_credit_id` and
   * `vendor_credit_number`: a client cannot tell which credit each refunds.
   */
  allRefundsWithoutCredit: boolean;
  /**
   * A change to a parent's child list (a contact's persons or comments, a credit's refunds or
   * credited bills) leaves the parent's change field as it was (A25 reads it the other way): only
   * a read of the child list itself shows the change.
   */
  childChangesKeepParent: boolean;
  /**
   * Events can be deleted (a retention period, say): `mutate` deletes them like other records.
   * A51 reads the events as a log the API never deletes from.
   */
  eventsDeleted: boolean;
}

export type Preset = 'default' | 'hostile';
export const PRESETS: readonly Preset[] = ['default', 'hostile'];

export const DEFAULT_VARIANTS: Readonly<Variants> = Object.freeze({
  omitPageContext: false,
  rateLimitHeaders: false,
  localQuotaDay: false,
  spurious401Rate: 0,
  spurious401Run: 1,
  refusedTokenCode: 14,
  noRetryAfter: false,
  compressAnswers: false,
  ignoreSort: Object.freeze([]) as unknown as string[],
  numericIds: false,
  mixedOffsets: false,
  sparseFields: 0,
  extraFields: false,
  arrayQuirks: false,
  orgIdPerFamily: false,
  defaultFiltersHide: false,
  changeWhilePagingEvery: 0,
  inverseExchangeRate: false,
  omitLineBcyRate: false,
  oddText: false,
  hoursAsNumbers: false,
  tokenLifetimeMillis: false,
  invoiceOrgInQuery: false,
  perPageCap: 0,
  fixedPageSize: 0,
  noOrganizationList: Object.freeze([]) as unknown as string[],
  missingRecordCode: 1002,
  otherSpellings: false,
  otherListKeys: false,
  undeclaredPageSize: 0,
  strictUndeclaredLists: false,
  singleRecordArray: false,
  nullEmptyLists: false,
  concurrencyPerUser: false,
  organizationPageSize: 0,
  inactiveOrganizations: 0,
  uneditedRecords: false,
  embeddedChildrenDropped: 0,
  embeddedChildrenEmpty: false,
  allRefundsOmitted: 0,
  allRefundsWithoutCredit: false,
  childChangesKeepParent: false,
  eventsDeleted: false,
});

export const HOSTILE_VARIANTS: Readonly<Variants> = Object.freeze({
  omitPageContext: true,
  rateLimitHeaders: true,
  localQuotaDay: true,
  spurious401Rate: 0.02,
  spurious401Run: 2,
  refusedTokenCode: 57,
  noRetryAfter: true,
  compressAnswers: true,
  ignoreSort: Object.freeze(['inventory.contacts', 'books.vendor_credits']) as unknown as string[],
  numericIds: true,
  mixedOffsets: true,
  sparseFields: 0.1,
  extraFields: true,
  arrayQuirks: true,
  orgIdPerFamily: true,
  defaultFiltersHide: true,
  changeWhilePagingEvery: 5,
  inverseExchangeRate: true,
  omitLineBcyRate: true,
  oddText: true,
  hoursAsNumbers: true,
  tokenLifetimeMillis: true,
  invoiceOrgInQuery: true,
  perPageCap: 0,
  fixedPageSize: 0,
  // Off: with orgIdPerFamily no other family lists the id a family without a list would need.
  noOrganizationList: Object.freeze([]) as unknown as string[],
  // 1002 as by default: svcsync reads another code only once told (sync.gone_codes), and until
  // then fails those items loudly; the hostile runs delete records.
  missingRecordCode: 1002,
  otherSpellings: true,
  otherListKeys: true,
  undeclaredPageSize: 1,
  strictUndeclaredLists: false,
  singleRecordArray: true,
  nullEmptyLists: true,
  // Off: svcsync keeps to it only once told (limits.concurrency_scope: user); until then the
  // refusals are retried, loudly, and the hostile runs count refused answers.
  concurrencyPerUser: false,
  // Off: with omitPageContext a page cut below per_page looks like the last one (A19).
  organizationPageSize: 0,
  // Off: svcsync reads an inactive organization only when the connection names it (A22).
  inactiveOrganizations: 0,
  // Off: with omitPageContext and ignoreSort nothing shows a walk that the server ignored the
  // sort on a first page that looks sorted (A8); its own test runs with page_context.
  uneditedRecords: false,
  // Half of every credit's embedded refunds and credited bills left off: svcsync must see from the totals that they are short.
  embeddedChildrenDropped: 0.5,
  // Off: with embeddedChildrenDropped the totals already say the arrays are short; the empty arrays
  // with zero totals, which no total can expose, have their own tests (test/e2e/embedded-children.test.ts).
  embeddedChildrenEmpty: false,
  // Off: with allRefundsWithoutCredit the list cannot be used at all; test/e2e/all-refunds.test.ts covers it.
  allRefundsOmitted: 0,
  allRefundsWithoutCredit: true,
  // Off: child changes would then wait for the reconcile's children cycle (A25), so no run of the
  // hostile tests could equal the truth before it; test/e2e/reconcile-cycle.test.ts covers it.
  childChangesKeepParent: false,
  // Off: deleted events are found only by a reconcile of the events (A51); test/e2e/slow-cycles.test.ts covers it.
  eventsDeleted: false,
});

/** What `noOrganizationList` may name. */
const FAMILIES: readonly string[] = ['books', 'inventory', 'invoice', 'billing'];

export const VARIANT_NAMES = Object.keys(DEFAULT_VARIANTS) as Array<keyof Variants>;

/** `family.stream` names of the lists that take sort_column (what `ignoreSort` may name). */
export const SORTABLE_LISTS: readonly string[] = STREAMS.filter((d) => d.kind === 'top' && d.sortColumns).map(
  (d) => `${d.family}.${d.stream}`,
);

/** Top-level lists `ignoreSort` may name: every top-level stream (a list without sort columns ignores sorting anyway). */
const TOP_LISTS: readonly string[] = STREAMS.filter((d) => d.kind === 'top').map((d) => `${d.family}.${d.stream}`);

function fail(message: string): never {
  throw new RangeError(message);
}

/** The preset's values overridden by the explicit ones, checked; errors name the variant. */
export function resolveVariants(preset: Preset | undefined, given: Partial<Variants> | undefined): Variants {
  if (preset !== undefined && !PRESETS.includes(preset)) fail(`preset must be one of ${PRESETS.join(', ')}`);
  const base = preset === 'hostile' ? HOSTILE_VARIANTS : DEFAULT_VARIANTS;
  const out: Variants = { ...base, ignoreSort: [...base.ignoreSort], noOrganizationList: [...base.noOrganizationList] };
  for (const [key, value] of Object.entries(given ?? {})) {
    if (!(VARIANT_NAMES as string[]).includes(key)) fail(`variants.${key} is not a variant (known: ${VARIANT_NAMES.join(', ')})`);
    if (value === undefined) continue;
    const k = key as keyof Variants;
    const kind = typeof DEFAULT_VARIANTS[k];
    if (k === 'ignoreSort') {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
        fail('variants.ignoreSort must be an array of family.stream names');
      for (const name of value)
        if (!TOP_LISTS.includes(name)) fail(`variants.ignoreSort: ${name} is not a list (known: ${TOP_LISTS.join(', ')})`);
      out.ignoreSort = [...value];
    } else if (k === 'noOrganizationList') {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && FAMILIES.includes(v)))
        fail(`variants.noOrganizationList must be an array of families (${FAMILIES.join(', ')})`);
      out.noOrganizationList = [...value];
    } else if (k === 'changeWhilePagingEvery') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
        fail('variants.changeWhilePagingEvery must be a non-negative integer');
      out.changeWhilePagingEvery = value;
    } else if (k === 'inactiveOrganizations') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
        fail('variants.inactiveOrganizations must be a non-negative integer');
      out.inactiveOrganizations = value;
    } else if (k === 'spurious401Run') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 10)
        fail('variants.spurious401Run must be an integer from 1 to 10');
      out.spurious401Run = value;
    } else if (k === 'refusedTokenCode') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) fail('variants.refusedTokenCode must be a positive integer');
      out.refusedTokenCode = value;
    } else if (k === 'missingRecordCode') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
        fail('variants.missingRecordCode must be a non-negative integer');
      out.missingRecordCode = value;
    } else if (k === 'perPageCap' || k === 'fixedPageSize' || k === 'undeclaredPageSize' || k === 'organizationPageSize') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 200)
        fail(`variants.${k} must be an integer from 0 (off) to 200`);
      out[k] = value;
    } else if (kind === 'number') {
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1)
        fail(`variants.${k} must be a probability between 0 and 1`);
      (out as unknown as Record<string, unknown>)[k] = value;
    } else {
      if (typeof value !== 'boolean') fail(`variants.${k} must be true or false`);
      (out as unknown as Record<string, unknown>)[k] = value;
    }
  }
  return out;
}

// ------------------------------------------------------------ records

const EXTRA_PREFIX = 'x_new_field_';

/**
 * The fields a record must always keep under sparseFields: keys and the change time, and a vendor
 * credit's totals and its refunds' and credited bills' amounts (the totals are the sums of the
 * amounts, A48: a server that leaves one out does not send a total that still adds up).
 */
function protectedFields(def: StreamDef): Set<string> {
  const keep = new Set<string>([def.idField]);
  if (def.parentIdField) keep.add(def.parentIdField);
  if (def.changeField) keep.add(def.changeField);
  for (const e of def.embeds ?? []) keep.add(e.field);
  if (def.stream === 'vendor_credits') ['total_refunded_amount', 'total_credits_used'].forEach((f) => keep.add(f));
  if (def.stream === 'vendor_credit_refunds' || def.stream === 'vendor_credit_bills') keep.add('amount');
  return keep;
}
const PROTECTED = new Map<StreamDef, Set<string>>();
function protectedOf(def: StreamDef): Set<string> {
  let keep = PROTECTED.get(def);
  if (!keep) PROTECTED.set(def, (keep = protectedFields(def)));
  return keep;
}

/**
 * Applies the record-changing variants to a freshly generated record, in place: sparse fields,
 * array quirks, extra fields. Deterministic in (seed, organization, stream, slot).
 */
export function shapeRecord(v: Variants, g: OrgGen, def: StreamDef, slot: number, rec: Rec): Rec {
  if (v.sparseFields > 0) {
    const keep = protectedOf(def);
    const r = new Rng(g.hash(def.space, slot, 0x5fa5));
    for (const key of Object.keys(rec)) {
      if (rec[key] === undefined) {
        // A generator copying a field its (sparse) parent lacks.
        delete rec[key];
        continue;
      }
      if (keep.has(key) || r.next() >= v.sparseFields) continue;
      const form = r.int(3);
      if (form === 0) delete rec[key];
      else rec[key] = form === 1 ? null : '';
    }
  }
  if (v.arrayQuirks) {
    const items = rec['line_items'];
    if (Array.isArray(items) && items.length === 1 && isObject(items[0])) rec['line_items'] = items[0];
    const docs = rec['documents'];
    if (Array.isArray(docs) && g.hash(def.space, slot, 0xd0c) % 2 === 0) rec['documents'] = ['document_id', 'file_name'];
  }
  if (v.inverseExchangeRate) {
    const rate = rec['exchange_rate'];
    if (typeof rate === 'number' && rate > 0) rec['exchange_rate'] = 1 / rate;
  }
  if (v.omitLineBcyRate) {
    // After arrayQuirks: line_items may be a lone object.
    const items: unknown = rec['line_items'];
    for (const line of Array.isArray(items) ? (items as unknown[]) : [items]) if (isObject(line)) delete line['bcy_rate'];
  }
  if (v.oddText && g.hash(def.space, slot, 0x0dd) % 4 === 0) {
    const keep = protectedOf(def);
    // A name or description: free text, never parsed as a number, date, code or status.
    const field = Object.keys(rec).find((k) => typeof rec[k] === 'string' && !keep.has(k) && /(name|description|notes)$/.test(k));
    if (field !== undefined) rec[field] = `${rec[field] as string}\u0000\ud800`;
  }
  applyValueForms(v, rec);
  if (v.otherSpellings) respell(rec);
  if (v.extraFields) {
    const r = new Rng(g.hash(def.space, slot, 0xe7a));
    addExtras(rec, r, 1);
    const items = rec['line_items'];
    if (Array.isArray(items)) for (const item of items) if (isObject(item)) addExtras(item, r, 5);
    if (isObject(items)) addExtras(items, r, 5);
  }
  return rec;
}

/** Variant otherSpellings, in place. */
function respell(rec: Rec): void {
  const fields = rec['custom_fields'];
  if (Array.isArray(fields))
    rec['custom_fields'] = fields.map((f: unknown) => {
      if (!isObject(f)) return f;
      const { custom_field_id: a, customfield_id: b, ...rest } = f;
      if (a !== undefined) return { customfield_id: a, ...rest };
      return b !== undefined ? { custom_field_id: b, ...rest } : f;
    });
  for (const key of ['acquisition_vat_summary', 'reverse_charge_vat_summary']) {
    const list = rec[key];
    if (!Array.isArray(list)) continue;
    rec[key] = list.map((e: unknown) => {
      if (!isObject(e)) return e;
      const tax = e['tax'];
      if (isObject(tax)) return { ...tax };
      const { tax_name, tax_amount, ...rest } = e;
      return { ...rest, tax: { tax_name, tax_amount } };
    });
  }
}

/**
 * The variants that choose how a value is written rather than what it is, applied again after a
 * `modify` (which writes the default form): hoursAsNumbers.
 */
export function applyValueForms(v: Variants, rec: Rec): void {
  if (!v.hoursAsNumbers) return;
  for (const field of HOURS_FIELDS) {
    const text = rec[field];
    const m = typeof text === 'string' ? HOURS_MINUTES.exec(text) : null;
    // Four decimals, as a double an API serializes from minutes would be written.
    if (m) rec[field] = Math.round((Number(m[1]) + Number(m[2]) / 60) * 10_000) / 10_000;
  }
}

/** The hours fields of projects and tasks (spec 2.1: doubles, whose sample shows hh:mm text). */
const HOURS_FIELDS: readonly string[] = ['total_hours', 'billed_hours', 'un_billed_hours', 'log_time'];
const HOURS_MINUTES = /^(\d+):(\d{2})$/;

function addExtras(rec: Rec, r: Rng, first: number): void {
  if (r.bool(0.8)) rec[`${EXTRA_PREFIX}${first}`] = r.pick(['beta', 'Ünïcödé "new"', '', 'x'.repeat(1 + r.int(40))]);
  // 12345678901234567168 is the double nearest 12345678901234567890: an integer past 2^53 (JSON text 12345678901234567000).
  if (r.bool(0.7)) rec[`${EXTRA_PREFIX}${first + 1}`] = r.pick([0, -1, 3.25, 1e21, 12345678901234567168]);
  if (r.bool(0.6))
    rec[`${EXTRA_PREFIX}${first + 2}`] = { kind: r.pick(['a', 'b']), nested: { level: 2, values: [1, 'two', null, { deep: true }] } };
  if (r.bool(0.2)) rec[`${EXTRA_PREFIX}${first + 3}`] = [r.int(9), r.int(9)];
}

export function isExtraField(key: string): boolean {
  return key.startsWith(EXTRA_PREFIX);
}

function isObject(value: unknown): value is Rec {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Fields arrayQuirks may send as one object instead of an array of one. */
export const SINGLE_OBJECT_FIELDS: readonly string[] = ['line_items', 'vendor_credit_refunds', 'bills_credited'];

/** A truth record as the rows a client should keep: a single object as [object], string arrays as []. */
export function normalizeArrays(rec: Rec): Rec {
  for (const field of SINGLE_OBJECT_FIELDS) if (isObject(rec[field])) rec[field] = [rec[field]];
  const docs = rec['documents'];
  if (Array.isArray(docs) && docs.some((d) => typeof d === 'string')) rec['documents'] = docs.filter((d) => isObject(d));
  return rec;
}

// ------------------------------------------------------------ filters

const hiddenStatus =
  (...statuses: string[]) =>
  (rec: Rec): boolean =>
    !statuses.includes(String(rec['status']));

/**
 * defaultFiltersHide: what a list that takes filter_by shows when none is sent. Records
 * whose status field is absent or null count as visible.
 */
export const DEFAULT_VISIBLE: Readonly<Record<string, (rec: Rec) => boolean>> = {
  'books.users': hiddenStatus('inactive', 'deleted'),
  'books.vendor_credits': hiddenStatus('void', 'closed'),
  'books.webhooks': (rec) => rec['is_active'] !== false,
  'inventory.contacts': hiddenStatus('inactive'),
  'inventory.sales_orders': hiddenStatus('void', 'closed'),
  'inventory.vendor_credits': hiddenStatus('void', 'closed'),
  'invoice.projects': hiddenStatus('inactive'),
  'billing.plans': hiddenStatus('inactive'),
  'billing.recurring_expenses': hiddenStatus('stopped', 'expired'),
};

/** Streams whose pages drive changeWhilePagingEvery: top-level, with a change field. */
export function changesWhilePaging(def: StreamDef): boolean {
  return def.kind === 'top' && def.changeField !== undefined;
}
