/**
 * The versions the data store keeps of its records (copy-on-write): a change never alters what
 * is stored, it stores a new patch or child list and closes the old version at the change's
 * instant. A version holds only what differs from the generated record, and shares child
 * lists that did not change with the versions before and after it.
 */
import type { Rec } from './stream-types.js';

export type Change = 'created' | 'updated' | 'deleted' | 'restored';

/** One version of a top-level record as the store keeps it. */
export interface StoredVersion {
  /** Sandbox ms when it became current. */
  from: number;
  /** Sandbox ms when it stopped being current; undefined while it is. */
  to: number | undefined;
  change: Change;
  /** The fields that differ from the slot's generated record, never changed once stored; undefined: none. */
  rec: Rec | undefined;
  /**
   * The child lists embedded in the record (in the order of the stream's `embeds`), each never
   * changed once stored; undefined (the whole, or an entry): the generated list.
   */
  kids: ReadonlyArray<Rec[] | undefined> | undefined;
}

/** One version of the child list of one parent (contact persons of a contact, tasks of a project, ...). */
export interface StoredList {
  from: number;
  to: number | undefined;
  /** undefined: the generated children of the parent. */
  list: Rec[] | undefined;
}

/** A version as the sandbox hands it out: `[from, to)` in sandbox ms, `to` null while current. */
export interface Version {
  from: number;
  to: number | null;
  change: Change;
  /** The record as truth shows it (top-level records with their embedded child arrays). */
  record: Rec;
}

/** What the data store holds besides the current records. */
export interface HistoryStats {
  /** Past (closed) versions of records and child lists kept. */
  versions: number;
  /** Past versions dropped to stay within maxVersions. */
  dropped: number;
  maxVersions: number;
  /** The earliest instant (sandbox ms) `truthAt` answers for every organization; null while nothing was dropped. */
  since: number | null;
}

/** The item current at instant t (`from <= t < to`), if any. Items are in time order and contiguous. */
export function currentAt<T extends { from: number; to: number | undefined }>(items: readonly T[], t: number): T | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i] as T;
    if (item.from > t) continue;
    return item.to === undefined || t < item.to ? item : undefined;
  }
  return undefined;
}

/** What a sandbox's organizations have forgotten: versions that closed before it are gone. */
export interface Horizon {
  horizon: number;
}

/**
 * Closed versions of every organization of a sandbox, oldest first, up to `max`: past it,
 * the oldest closed version is dropped and its organization's horizon moves to where it closed.
 * Versions close in time order within one record, so the oldest closed version of the
 * sandbox is always the first one of its record's list.
 */
export class VersionLedger {
  private lists: Array<Array<{ to: number | undefined }> | undefined> = [];
  private owners: Array<Horizon | undefined> = [];
  private head = 0;
  kept = 0;
  dropped = 0;

  constructor(readonly max: number) {}

  closed(owner: Horizon, versions: Array<{ to: number | undefined }>): void {
    this.lists.push(versions);
    this.owners.push(owner);
    this.kept++;
    while (this.kept > this.max) this.dropOldest();
  }

  private dropOldest(): void {
    const versions = this.lists[this.head];
    const owner = this.owners[this.head];
    this.lists[this.head] = undefined;
    this.owners[this.head] = undefined;
    this.head++;
    const gone = versions?.shift();
    if (owner && gone?.to !== undefined) owner.horizon = Math.max(owner.horizon, gone.to);
    this.kept--;
    this.dropped++;
    if (this.head > 4096 && this.head * 2 > this.lists.length) {
      this.lists = this.lists.slice(this.head);
      this.owners = this.owners.slice(this.head);
      this.head = 0;
    }
  }
}
