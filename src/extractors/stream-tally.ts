import type { RequestMeter } from '../api/client.js';
import type { Logger } from '../core/logger.js';
import type { NormalizeWarning, UnknownField, WarningKind } from '../normalize/normalize.js';
import type { DriftCount } from '../state/drift.js';
import { mergeDeleted, totalDeleted, type DeletedRows } from '../loaders/deleted-rows.js';

/** One kind of data-shape surprise in one field of one table, counted over a run. */
export interface WarningCount {
  table: string;
  /** The field with element positions folded: `line_items[].rate`. */
  field: string;
  kind: WarningKind;
  count: number;
  /** The first record it was seen in, and what was said of it there. */
  example: string;
  message: string;
}

/**
 * Data-shape warnings counted per table, field and kind, so that 230 records with the same
 * quirk make one line with a count and an example, not 2,800 lines that drown a real problem.
 */
export class WarningTally {
  private readonly counts = new Map<string, WarningCount>();

  add(w: NormalizeWarning): void {
    const field = w.field.replace(/\[\d+\]/g, '[]');
    const key = `${w.table}\u0000${field}\u0000${w.kind}`;
    const c = this.counts.get(key);
    if (c) c.count++;
    else this.counts.set(key, { table: w.table, field, kind: w.kind, count: 1, example: w.id, message: w.message });
  }

  addAll(warnings: readonly NormalizeWarning[]): void {
    for (const w of warnings) this.add(w);
  }

  /** Adds another tally's counts (its examples kept where this one has none). */
  merge(other: WarningTally): void {
    for (const [key, c] of other.counts) {
      const mine = this.counts.get(key);
      if (mine) mine.count += c.count;
      else this.counts.set(key, { ...c });
    }
  }

  entries(): WarningCount[] {
    return [...this.counts.values()];
  }

  total(): number {
    let n = 0;
    for (const c of this.counts.values()) n += c.count;
    return n;
  }

  /** One warning line per table, field and kind. */
  log(logger: Logger, context: Record<string, unknown>): void {
    for (const c of this.counts.values()) {
      logger.warn(
        { ...context, table: c.table, field: c.field, kind: c.kind, count: c.count, example_record: c.example },
        `${c.count} record${c.count === 1 ? '' : 's'}: ${c.field}: ${c.message} (e.g. record ${c.example})`,
      );
    }
  }
}

/**
 * Unknown fields (schema drift) counted per field over a stream's run: recorded into
 * `_svcsync_drift` at the stream's end, one row per field.
 */
export class DriftTally {
  private readonly counts = new Map<string, DriftCount>();

  addAll(unknown: readonly UnknownField[]): void {
    for (const u of unknown) {
      const c = this.counts.get(u.path);
      if (c) {
        c.occurrences++;
        // A null says little about a field's type: the first other type is the sample.
        if (c.type === 'null') c.type = u.type;
      } else this.counts.set(u.path, { field: u.path, type: u.type, occurrences: 1 });
    }
  }

  merge(other: DriftTally): void {
    for (const [path, c] of other.counts) {
      const mine = this.counts.get(path);
      if (!mine) this.counts.set(path, { ...c });
      else {
        mine.occurrences += c.occurrences;
        if (mine.type === 'null') mine.type = c.type;
      }
    }
  }

  entries(): DriftCount[] {
    return [...this.counts.values()];
  }

  get size(): number {
    return this.counts.size;
  }
}

/**
 * What one stream did in a run, counted as it goes: a stream that ends on a spent quota or
 * an error still reports every request it sent and every page and record it committed.
 */
export interface StreamTally {
  pages: number;
  /** The stream's records committed: list records, or a child stream's records (a record's single-record read is not another). */
  records: number;
  /** Records received in answers: list records, single-record reads and child records. */
  reads: number;
  /** Rows changed: new, or with another `_hash` (an unchanged row a full read rewrites is not counted). */
  written: number;
  /** Rows marked deleted, child-table rows and child streams' rows under a deleted record included. */
  deleted: number;
  /** The same rows by table. */
  deletedTables: DeletedRows;
  /** Every request sent for the stream, retries included. */
  meter: RequestMeter;
  warnings: WarningTally;
  /** Fields the catalog does not know, per field. */
  drift: DriftTally;
}

/** Counts rows a unit of work marked deleted. */
export function countDeleted(tally: Pick<StreamTally, 'deleted' | 'deletedTables'>, rows: DeletedRows): void {
  tally.deleted += totalDeleted(rows);
  mergeDeleted(tally.deletedTables, rows);
}

export function newTally(): StreamTally {
  return {
    pages: 0,
    records: 0,
    reads: 0,
    written: 0,
    deleted: 0,
    deletedTables: {},
    meter: { requests: 0 },
    warnings: new WarningTally(),
    drift: new DriftTally(),
  };
}

/**
 * Adds what was counted for a stream elsewhere (children its parents' single records carried)
 * to the stream's own tally; requests stay with the stream that sent them.
 */
export function mergeTally(into: StreamTally, from: StreamTally): void {
  into.pages += from.pages;
  into.records += from.records;
  into.reads += from.reads;
  into.written += from.written;
  into.deleted += from.deleted;
  mergeDeleted(into.deletedTables, from.deletedTables);
  into.warnings.merge(from.warnings);
  into.drift.merge(from.drift);
}
