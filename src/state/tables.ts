import type { Kysely, Transaction } from 'kysely';
import type { AnyDb } from '../loaders/db.js';

/**
 * Typed view of the `_svcsync_` tables (created by migrations/20261122T050000-state-tables.ts;
 * `_svcsync_verify` by migrations/20261122T180000-verify-table.ts; `_svcsync_drift` by
 * migrations/20261122T191000-drift-table.ts).
 */
export interface StreamStateRow {
  connection: string;
  organization_id: string;
  stream: string;
  cursor: string | null;
  pass_kind: string | null;
  pass_started_at: string | null;
  pass_next_page: number | null;
  pass_floor: string | null;
  pass_max_changed: string | null;
  pass_unsorted: number | null;
  pass_records: number | null;
  /** 1 when the pass in flight queues every parent's child lists (a reconcile's slower cycle). */
  pass_children: number | null;
  /** When every parent's child lists were last queued (the start of that pass). */
  children_reread_at: string | null;
  last_run_id: string | null;
  last_started_at: string | null;
  last_finished_at: string | null;
  last_success_at: string | null;
  last_status: string | null;
  last_error: string | null;
  last_pages: number | null;
  last_requests: number | null;
  last_records: number | null;
  updated_at: string | null;
}

export interface PendingRow {
  connection: string;
  organization_id: string;
  stream: string;
  kind: string;
  item_id: string;
  reason: string;
  enqueued_at: string;
  /** The record's change time or date (ISO-8601 UTC): newest is taken first; null goes behind. */
  recency: string | null;
}

export interface RunRow {
  run_id: string;
  command: string;
  started_at: string;
  finished_at: string | null;
  status: string;
  requests: number | null;
  records: number | null;
  errors: string | null;
  summary: string | null;
  /** `host/pid` of the process that ran it (null before migration 20261122T210000). */
  process: string | null;
  /** When a later run found this one `running` with its process gone, and closed it as `abandoned`. */
  abandoned_at?: string | null;
}

export interface RunStreamRow {
  run_id: string;
  connection: string;
  organization_id: string;
  stream: string;
  started_at: string;
  finished_at: string | null;
  status: string;
  pages: number;
  /** The stream's records (a list record and its single-record read are one). */
  records: number;
  /** Records received: list records, single-record reads, child records (migration 20261128T100000; null before). */
  reads: number | null;
  /** Rows new or changed (migration 20261128T100000; null before). */
  written: number | null;
  /** Rows marked deleted, child tables included (migration 20261204T091000; null before). */
  deleted?: number | null;
  /** JSON object of table name to rows marked deleted, or null when none. */
  deleted_tables?: string | null;
  requests: number;
  error: string | null;
  /** JSON array of WarningCount (migration 20261122T173000), or null when there were none. */
  warnings: string | null;
}

export interface UsageRow {
  organization_id: string;
  day: string;
  count: number;
  blocked_until: string | null;
  /** When the day ends, where the server told it (X-Rate-Limit-Reset); null: midnight in the reset zone. */
  resets_at: string | null;
  updated_at: string;
}

export interface OrganizationRow {
  connection: string;
  family: string;
  organization_id: string;
  name: string | null;
  is_active: number | null;
  time_zone: string | null;
  discovered_at: string;
}

/** One stream's result of one `svcsync verify` run (src/state/verify.ts). */
export interface VerifyRow {
  run_id: string;
  connection: string;
  organization_id: string;
  /** Qualified stream name, `family.name`. */
  stream: string;
  verified_at: string;
  /** agree | differ | incomplete | failed */
  status: string;
  api_count: number | null;
  warehouse_count: number | null;
  missing_count: number | null;
  extra_count: number | null;
  /** JSON array of up to a few ids, as text. */
  missing_examples: string | null;
  extra_examples: string | null;
  requests: number;
  error: string | null;
}

/** One field the catalog does not know, per connection, organization and stream (src/state/drift.ts). */
export interface DriftRow {
  connection: string;
  organization_id: string;
  /** Qualified stream name, `family.name`. */
  stream: string;
  /** Path relative to the stream's record: `x_new`, `billing_address.x_new`, `line_items[].x_new`. */
  field: string;
  /** JSON type of a value seen: string, number, boolean, object, array or null. Never the value. */
  sample_type: string;
  first_seen: string;
  last_seen: string;
  /** Records that carried the field, over every run (bigint: a string from Postgres). */
  occurrences: number | string;
  last_run_id: string | null;
}

/**
 * The ids one page of a full read listed unchanged, kept until its pass ends (src/state/listed-ids.ts):
 * then the rows neither written by the pass nor listed are marked deleted.
 */
export interface ListedRow {
  connection: string;
  organization_id: string;
  /** Qualified stream name, `family.name`. */
  stream: string;
  pass_started_at: string;
  page: number;
  /** JSON array of the ids, as text. */
  ids: string;
}

/**
 * What one page of a whole read of a list-only stream answered, kept so that the same answer
 * later need not be parsed again (src/extractors/page-memo.ts). Replaced when the page is read again.
 */
export interface PageRow {
  connection: string;
  organization_id: string;
  /** Qualified stream name, `family.name`. */
  stream: string;
  /** The request's query without its page number, as `memoQuery` writes it. */
  query: string;
  page: number;
  /** SHA-1 (hex) of the answer's bytes. */
  body_hash: string;
  /** JSON array of the page's record ids, as text. */
  ids: string;
  /** 1 when the walk went on after this page. */
  has_more: number;
  /** The newest change time among the page's records (ISO-8601 UTC), null without any. */
  max_changed: string | null;
  /** The `_synced_at` of the commit that read the page: its rows have been written at or before it. */
  synced_at: string;
}

/** A request-saving reading of the API as svcsync has found it for one organization (src/state/shortcut-verdicts.ts). */
export interface ShortcutRow {
  connection: string;
  organization_id: string;
  /** `embedded_children`, `all_children_list`, `child_changes_touch_parent`. */
  shortcut: string;
  /** The qualified stream it concerns (a parent stream, or a child stream). */
  stream: string;
  /** verifying | trusted | refuted */
  state: string;
  /** Checks that agreed. */
  checks: number;
  /** Uses of the shortcut since the last check. */
  since_check: number;
  first_checked_at: string | null;
  last_checked_at: string | null;
  refuted_at: string | null;
  /** What a check found different, when refuted. */
  evidence: string | null;
  /** When what a refuted shortcut may have missed was queued to be read the long way; null until then. */
  healed_at: string | null;
  updated_at: string;
}

export interface StateTables {
  _svcsync_streams: StreamStateRow;
  _svcsync_pending: PendingRow;
  _svcsync_runs: RunRow;
  _svcsync_run_streams: RunStreamRow;
  _svcsync_usage: UsageRow;
  _svcsync_organizations: OrganizationRow;
  _svcsync_verify: VerifyRow;
  _svcsync_drift: DriftRow;
  _svcsync_listed: ListedRow;
  _svcsync_pages: PageRow;
  _svcsync_shortcuts: ShortcutRow;
}

export type StateDb = Kysely<StateTables> | Transaction<StateTables>;

/** The warehouse handle seen through the state tables' types. */
export function stateDb(db: AnyDb): StateDb {
  return db as StateDb;
}
