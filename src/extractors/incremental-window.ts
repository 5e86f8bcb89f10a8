import type { StreamSpec } from '../catalog/types.js';
import type { PassState } from '../state/stream-state.js';
import type { SortEcho } from './pager.js';

/** What one page told the window. */
export interface WindowView {
  /** This page showed the list is not newest first after all: the pass reads every page. */
  becameUnsorted: boolean;
  /** A record on this page changed before the floor: older pages hold nothing new. */
  reachedFloor: boolean;
}

/**
 * What a pass learns from the change times on its pages, one page at a time: whether the list
 * really comes newest first as asked, whether it has gone below the floor (the last cursor
 * less the lookback, or `backfill --since`), and the newest change seen, which becomes the
 * next cursor. Change times are instants (epoch milliseconds), never strings.
 */
export class IncrementalWindow {
  private previous: number | null = null;
  unsorted: boolean;
  /** The newest change seen, as an instant: compared per record, so kept as a number (the text is made when asked). */
  private maxChangedMs: number | null;
  private maxChangedText: string | null;

  /**
   * @param sortParams the query asking the server for newest first, or null when the pass
   *   does not ask (no floor to stop at, or a stream that cannot sort).
   */
  constructor(
    readonly sortParams: Readonly<Record<string, string>> | null,
    private readonly floorMs: number | null,
    resumed: { unsorted: boolean; maxChanged: string | null },
  ) {
    this.unsorted = resumed.unsorted;
    this.maxChangedText = resumed.maxChanged;
    this.maxChangedMs = resumed.maxChanged === null ? null : Date.parse(resumed.maxChanged);
  }

  /** The newest change seen so far (ISO-8601 UTC), which becomes the next cursor; null before any. */
  get maxChanged(): string | null {
    if (this.maxChangedMs !== null && this.maxChangedText === null) this.maxChangedText = new Date(this.maxChangedMs).toISOString();
    return this.maxChangedText;
  }

  /** The window of a pass; sorting is only asked for when a floor lets the walk stop early. */
  static forPass(stream: StreamSpec, pass: PassState): IncrementalWindow {
    const floorMs = pass.floor !== null ? Date.parse(pass.floor) : null;
    const sortParams = floorMs !== null && stream.cursor?.sort ? stream.cursor.sort.params : null;
    return new IncrementalWindow(sortParams, floorMs, pass);
  }

  /** Whether the walk may end before the last page; if not, prefetching costs nothing extra. */
  mayStopEarly(): boolean {
    return this.sortParams !== null && this.floorMs !== null;
  }

  /**
   * @param sortedBy the order the page's `page_context` reports. One that differs from the order
   *   asked for says the server ignored it, even when the page happens to look sorted: a list in
   *   creation order whose first page was never edited is in change order too, and the walk
   *   stopped after it, missing changes further down (the audit's run).
   */
  observe(changedAt: ReadonlyArray<number | null>, sortedBy?: SortEcho): WindowView {
    let becameUnsorted = false;
    if (this.sortParams && !this.unsorted && sortedBy && !echoes(sortedBy, this.sortParams)) {
      this.unsorted = becameUnsorted = true;
    }
    if (this.sortParams && !this.unsorted) {
      for (const at of changedAt) {
        if (at === null || (this.previous !== null && at > this.previous)) {
          this.unsorted = becameUnsorted = true;
          break;
        }
        this.previous = at;
      }
    }
    const floor = this.floorMs;
    const reachedFloor = this.mayStopEarly() && !this.unsorted && changedAt.some((at) => at !== null && at < floor!);
    for (const at of changedAt) {
      if (at !== null && (this.maxChangedMs === null || at > this.maxChangedMs)) {
        this.maxChangedMs = at;
        this.maxChangedText = null;
      }
    }
    return { becameUnsorted, reachedFloor };
  }
}

/**
 * Whether the order a page reports is the order asked for. A key it does not report is not held
 * against it; an order is compared by its first letter (`D`, `desc`, `descending`), since the
 * spec does not show its values.
 */
export function echoes(sortedBy: SortEcho, asked: Readonly<Record<string, string>>): boolean {
  const same = (a: string, b: string, key: string): boolean =>
    key === 'sort_order'
      ? a.trim().charAt(0).toLowerCase() === b.trim().charAt(0).toLowerCase()
      : a.trim().toLowerCase() === b.trim().toLowerCase();
  for (const key of ['sort_column', 'sort_order'] as const) {
    const said = sortedBy[key];
    const wanted = asked[key];
    if (said !== undefined && wanted !== undefined && !same(said, wanted, key)) return false;
  }
  return true;
}
