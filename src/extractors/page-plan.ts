import type { NormalizedRecord } from '../normalize/normalize.js';
import type { PendingReason } from '../state/pending.js';
import type { PassKind } from '../state/stream-state.js';

/** What the warehouse holds for an id: its content hash and whether it is marked deleted. */
export interface StoredRow {
  hash: string | null;
  deleted: boolean;
}

/** A list record as the comparison sees it: its id and the hash of its JSON (`listIdentity`). */
export interface ListedRecord {
  id: string;
  hash: string;
}

export interface PagePlanInput {
  /** Every record on the page, in the page's order. */
  records: readonly ListedRecord[];
  /** The records `isNewOrChanged` picked, normalized: the only ones written. */
  changed: readonly NormalizedRecord[];
  /** Stored rows of the ids on the page (ids with none are new). */
  stored: ReadonlyMap<string, StoredRow>;
  kind: PassKind;
  /** The stream has a detail endpoint and it is enabled. */
  detail: boolean;
  hasMore: boolean;
  reachedFloor: boolean;
  /**
   * Queue every record's child lists, not only the changed ones'. Unset: on full reads. A
   * reconcile or a tree read whole sets it when its slow cycle is due for every parent
   * (`childrenRereadDue`), or gives the parents whose day of the cycle is due (`childrenSlice`).
   */
  everyParent?: boolean | ((id: string) => boolean);
  /**
   * The single record carries every child list of the stream (books vendor credits: A48), so a
   * parent whose child lists are re-read gets its single read as well: one request that makes
   * the lists unneeded when the record's totals prove them whole, where each list costs one.
   */
  detailCarriesChildren?: boolean;
  /**
   * The stream has a change field, so an unchanged record's children are re-read as a check that
   * they did not change either (A25): queued apart, as `checked`. Without one, every record's
   * children are simply re-read.
   */
  changeField?: boolean;
}

export interface PagePlan {
  /** Rows to write: the new and changed records, on every pass kind. */
  rows: NormalizedRecord[];
  /** How many records are new or changed. */
  changed: number;
  /**
   * On a read whose end marks the rows not listed as gone (a full-refresh stream, a reconcile),
   * the ids of the unchanged rows: kept until the pass ends, they tell the rows still listed
   * from those gone. The rows themselves are not touched.
   */
  listedUnchanged: string[];
  /** Ids with no stored row: they have no older child rows to mark as gone. */
  fresh: ReadonlySet<string>;
  /** Parents whose child streams are queued for reading. */
  parents: string[];
  /**
   * Unchanged parents whose child streams (and single record, when it carries them) are re-read
   * all the same, by a reconcile's cycle or a backfill: queued as checks of A25.
   */
  checked: string[];
  /** Ids queued for their single-record read. */
  details: string[];
  reason: PendingReason;
  /** The last page of the pass: the cursor moves and, on full reads, vanished rows are marked. */
  finished: boolean;
}

/** Why queued work exists, as the queue records it. */
export function pendingReason(kind: PassKind): PendingReason {
  return kind === 'backfill' || kind === 'reconcile' ? kind : 'changed';
}

/** Whether a pass marks the rows it did not list as gone when it ends: a full-refresh read and a reconcile. */
export function marksVanished(kind: PassKind): boolean {
  return kind === 'full' || kind === 'reconcile';
}

/** Whether a listed record must be normalized and written: no stored row, a row marked deleted, or another hash. */
export function isNewOrChanged(record: ListedRecord, stored: ReadonlyMap<string, StoredRow>): boolean {
  const s = stored.get(record.id);
  return !s || s.deleted || s.hash !== record.hash;
}

/**
 * Decides what one list page writes and queues; no I/O. Every pass kind writes only new and
 * changed records; a pass that marks vanished rows at its end (a full-refresh stream, a
 * reconcile) also keeps the ids of the unchanged ones it listed. A parent without a change
 * field cannot say its children changed (a new task does not touch its project), so a full
 * read re-reads the children of every parent; a reconcile and a tree read whole do so for the
 * parents `everyParent` says their slow cycle is due for.
 */
export function planPage(input: PagePlanInput): PagePlan {
  const fullRead = input.kind !== 'incremental';
  const everyParent = input.everyParent ?? fullRead;
  const changed = input.changed.map((n) => n.id);
  const listedUnchanged = marksVanished(input.kind)
    ? [...new Set(input.records.filter((r) => !isNewOrChanged(r, input.stored)).map((r) => r.id))]
    : [];
  const isChanged = new Set(changed);
  // Unchanged parents whose children are re-read all the same: all of them, or the cycle's share.
  const rereads = (id: string): boolean => everyParent === true || (typeof everyParent === 'function' && everyParent(id));
  const reread = unique(input.records.filter((r) => !isChanged.has(r.id) && rereads(r.id)).map((r) => r.id));
  // Without a change field there is nothing to check: the re-read parents are parents like the changed.
  const checked = input.changeField ? reread : [];
  const parents = input.changeField ? changed : input.records.filter((r) => isChanged.has(r.id) || rereads(r.id)).map((r) => r.id);
  return {
    rows: [...input.changed],
    changed: input.changed.length,
    listedUnchanged,
    fresh: new Set(input.records.filter((r) => !input.stored.has(r.id)).map((r) => r.id)),
    parents,
    checked,
    details: !input.detail ? [] : [...(input.detailCarriesChildren && !input.changeField ? parents : changed)],
    reason: pendingReason(input.kind),
    finished: !input.hasMore || input.reachedFloor,
  };
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}
