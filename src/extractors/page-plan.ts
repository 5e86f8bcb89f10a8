import type { NormalizedRecord } from '../normalize/normalize.js';
import type { PendingReason } from '../state/pending.js';
import type { PassKind } from '../state/stream-state.js';

/** What the warehouse holds for an id: its content hash and whether it is marked deleted. */
export interface StoredRow {
  hash: string | null;
  deleted: boolean;
}

export interface PagePlanInput {
  records: readonly NormalizedRecord[];
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
}

export interface PagePlan {
  /** Rows to write: every record on a full read, else the new and changed ones. */
  rows: NormalizedRecord[];
  /** How many of them are new or changed (a full read rewrites unchanged rows too, changing nothing). */
  changed: number;
  /** Ids with no stored row: they have no older child rows to mark as gone. */
  fresh: ReadonlySet<string>;
  /** Parents whose child streams are queued for reading. */
  parents: string[];
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

/**
 * Decides what one list page writes and queues; no I/O. Only a full read (every pass kind but
 * incremental) rewrites unchanged rows, since their `_synced_at` is how vanished rows are found.
 * A parent without a change field cannot say its children changed (a new task does not touch
 * its project), so a full read re-reads the children of every parent; a reconcile and a tree
 * read whole do so for the parents `everyParent` says their slow cycle is due for.
 */
export function planPage(input: PagePlanInput): PagePlan {
  const fullRead = input.kind !== 'incremental';
  const everyParent = input.everyParent ?? fullRead;
  const changed = input.records.filter((n) => {
    const s = input.stored.get(n.id);
    return !s || s.deleted || s.hash !== n.hash;
  });
  let parents: readonly NormalizedRecord[] = changed;
  if (everyParent === true) parents = input.records;
  else if (typeof everyParent === 'function') {
    const isChanged = new Set(changed);
    parents = input.records.filter((n) => isChanged.has(n) || everyParent(n.id));
  }
  return {
    rows: fullRead ? [...input.records] : changed,
    changed: changed.length,
    fresh: new Set(input.records.filter((n) => !input.stored.has(n.id)).map((n) => n.id)),
    parents: parents.map((n) => n.id),
    details: !input.detail ? [] : (input.detailCarriesChildren ? parents : changed).map((n) => n.id),
    reason: pendingReason(input.kind),
    finished: !input.hasMore || input.reachedFloor,
  };
}
