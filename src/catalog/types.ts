import type { Family } from './families.js';

/**
 * The catalog declares every stream as data. Code reads these entries and never
 * special-cases a stream by name.
 *
 * Column types and what the normalizer makes of the API's value:
 * - id:        text exactly as sent; a JSON number becomes its decimal digits.
 * - text:      text; numbers and booleans become their JSON text.
 * - integer:   whole number; numeric text is parsed; "" becomes null.
 * - number:    decimal (numeric in Postgres, REAL in SQLite); numeric text parsed; "" is null.
 * - hours:     a number the API may send as "hh:mm" text ("12:30" is 12.5).
 * - boolean:   true/false; "true"/"false" text accepted.
 * - date:      yyyy-mm-dd text; "" becomes null.
 * - timestamp: an instant; stored in UTC (ISO-8601 ending in Z in SQLite, timestamptz in Postgres).
 * - json:      any value (arrays of scalars, objects kept whole), stored as JSON text.
 */
export type ColumnType = 'id' | 'text' | 'integer' | 'number' | 'hours' | 'boolean' | 'date' | 'timestamp' | 'json';

/** Which response a field comes from: the list endpoint, the single-record endpoint, or both. */
export type Source = 'list' | 'detail';

export interface ColumnSpec {
  /** Warehouse column name: the API field name; nested fields joined with "__". */
  name: string;
  type: ColumnType;
  /** Where the value sits in the record (defaults to [name]). */
  path?: readonly string[];
  /**
   * A discount-like field that is an amount or a percentage written as text ("12.5%").
   * The column keeps the text; the normalizer adds `${name}__amount` and
   * `${name}__percentage` number columns (see discountColumns()).
   */
  amountOrPercentage?: boolean;
  /** Responses that carry this field. Defaults to the stream's sources. */
  sources?: readonly Source[];
  /**
   * Other places the same value sits in some answers, tried in order when `path` holds
   * nothing: the spec spells the custom-field id `custom_field_id` in some sections and
   * `customfield_id` in others, and wraps VAT summary entries in `tax` in one section only.
   */
  alsoAt?: readonly (readonly string[])[];
  /** The spec section the field comes from, for the data dictionary. */
  spec?: string;
  description?: string;
  /**
   * The stream this id points to, as `family.stream` (same family): the column holds that
   * stream's primary key, and the two join on (organization_id, this column). Published as
   * metadata (schema --json, `_svcsync_columns`, the ERD), never enforced: a row may arrive
   * before the row it points to. See src/catalog/relationships.ts.
   */
  references?: string;
}

/** An array of objects inside a record becomes a child table `{table}__{field}`. */
export interface ChildSpec {
  /** The array field in the record; the table is named after the first. */
  field: string;
  /** Other spellings of the same field that some responses use. */
  aliases?: readonly string[];
  /** The child's own id field, unique within its parent; omitted means the position keys it. */
  key?: string;
  columns: readonly ColumnSpec[];
  children?: readonly ChildSpec[];
  /** Responses that carry this array. Defaults to the stream's sources. */
  sources?: readonly Source[];
  spec?: string;
  description?: string;
}

export interface CursorSpec {
  /** The change field (last_modified_time, updated_time, event_time). */
  field: string;
  /**
   * How to ask the server to sort by the change field, newest first, when it can.
   * Absent: the server does not sort (or the spec does not say it can), so every
   * incremental run reads all pages and writes only what changed.
   */
  sort?: { params: Readonly<Record<string, string>> };
}

export interface ParentSpec {
  /** The parent stream's name in the same family. */
  stream: string;
  /** The parent's primary key, substituted into `path` as `{key}`. */
  key: string;
}

export interface DetailSpec {
  /** Single-record path, with `{primaryKey}` substituted. */
  path: string;
  /** The response key holding the record; first match wins. */
  recordKeys: readonly string[];
  /** Fetched by default? (events' details cost a request each and are off by default.) */
  defaultEnabled: boolean;
  /** The setting in `sync:` that turns it on or off, when there is one. */
  setting?: string;
  /**
   * Child streams the single record also embeds (`field`), each with the record's field holding
   * their total (`total`, the sum of the entries' `amount`): when the entries add up to it, the
   * children are written from the record and their per-parent list is not read.
   */
  embeddedChildren?: ReadonlyArray<{ stream: string; field: string; total: string }>;
}

export type StreamKind = 'settings' | 'transaction';

export interface StreamSpec {
  /** Stream name; with the family it names the table `{family}_{name}`. */
  name: string;
  family: Family;
  /** List path under the family root; `{key}` placeholders come from the parent record. */
  path: string;
  /** Response key(s) holding the records; first present wins (spellings differ). */
  recordsKey: readonly string[];
  /** The record's id field; with organization_id it is the table's primary key. */
  primaryKey: string;
  /**
   * A child stream's list of every parent's children at once (paged), read instead of one list
   * per parent when enough parents are queued; entries name their parent by `parent.key`.
   */
  allList?: {
    path: string;
    recordsKey: readonly string[];
    /**
     * The parent's column that adds up its children's `amount` (a credit's `total_refunded_amount`):
     * a parent whose total differs from what the list gives it is checked first (A49's checks).
     */
    parentTotal?: string;
  };
  /** Fixed query parameters (filter_by=Status.All so nothing is missed). */
  query?: Readonly<Record<string, string>>;
  /** Whether the endpoint takes page and per_page (all lists do unless the spec says otherwise). */
  paginated: boolean;
  /** Incremental streams have a cursor; streams without one are full refreshes. */
  cursor?: CursorSpec;
  parent?: ParentSpec;
  /** List records lack fields (line items) that the single-record endpoint has. */
  detail?: DetailSpec;
  /** settings-like streams change rarely and run less often under the daemon. */
  kind: StreamKind;
  columns: readonly ColumnSpec[];
  children: readonly ChildSpec[];
  /** Spec sections and assumptions behind this entry, for the data dictionary. */
  spec: string;
  description: string;
  /**
   * The records are the organizations themselves (each family's `GET /organizations`): the
   * list is read once per connection, at discovery, not per organization, and each record
   * is keyed by its own organization_id. Set on one stream per family.
   */
  organizationList?: true;
  /**
   * Top-level fields that hold secrets (a webhook's signing secret): never a column,
   * and their value is replaced by "[redacted]" in `_raw`, so no secret reaches the warehouse.
   */
  redact?: readonly string[];
  /**
   * Values that may carry a credential of another system, found by the name they sit under
   * (src/normalize/redaction.ts): in the `urls` fields, query values under a sensitive
   * name (`?secret=`, `token=`); in the `pairs` lists of `{name, value}` objects, the value
   * whose name is sensitive (an `Authorization` header). Replaced by "[redacted]" in the
   * columns, the child rows and `_raw`.
   */
  redactByName?: RedactByName;
  /**
   * The API offers no way to delete or change the list's records (a log of what happened): the
   * daemon's nightly reconcile leaves the list out unless a stream schedule asks for it; `svcsync
   * sync --reconcile` still reads it (docs/assumptions.md, A51).
   */
  appendOnly?: true;
}

export interface RedactByName {
  urls: readonly string[];
  pairs: readonly string[];
  /** The field of a pair holding its name, and the one holding its value. */
  name: string;
  value: string;
}

/** The responses a stream reads: its list, and its single-record endpoint when it has one. */
export function streamSources(stream: Pick<StreamSpec, 'detail'>): readonly Source[] {
  return stream.detail ? BOTH_SOURCES : LIST_ONLY;
}
const BOTH_SOURCES: readonly Source[] = ['list', 'detail'];
const LIST_ONLY: readonly Source[] = ['list'];

/** The parsed-number columns an amountOrPercentage column adds: amount first, then percentage. */
export function discountColumns(column: Pick<ColumnSpec, 'name'>): { amount: string; percentage: string } {
  return { amount: `${column.name}__amount`, percentage: `${column.name}__percentage` };
}

/**
 * A stream whose records are organizations (each family's `GET /organizations`): it is read
 * once per connection, at discovery, not per organization. The catalog says so explicitly
 * (`organizationList`); validateCatalog checks it agrees with the primary key.
 */
export function isOrganizationList(stream: Pick<StreamSpec, 'organizationList'>): boolean {
  return stream.organizationList === true;
}

/** The stream's table name. */
export function tableName(stream: Pick<StreamSpec, 'family' | 'name'>): string {
  return `${stream.family}_${stream.name}`;
}

/** A stream's full name as used on the command line and in config: `family.name`. */
export function qualifiedName(stream: Pick<StreamSpec, 'family' | 'name'>): string {
  return `${stream.family}.${stream.name}`;
}
