import type { StreamSpec } from '../catalog/types.js';
import type { PassState } from '../state/stream-state.js';

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

  observe(changedAt: ReadonlyArray<number | null>): WindowView {
    let becameUnsorted = false;
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
