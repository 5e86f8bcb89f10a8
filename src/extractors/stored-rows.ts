import type { StreamSpec } from '../catalog/types.js';
import { tableName } from '../catalog/types.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import type { SyncContext } from './context.js';
import type { StoredRow } from './page-plan.js';
import { SeenFilter } from './seen-filter.js';

/**
 * The stored hashes of a page's ids. An organization with no rows yet (a first sync) has
 * nothing stored but what this pass writes; a filter says which ids that might be, so most
 * pages need no lookup.
 */
export class StoredRows {
  private constructor(
    private readonly ctx: Pick<SyncContext, 'warehouse' | 'writer'>,
    private readonly stream: StreamSpec,
    private readonly organizationId: string,
    private readonly seen: SeenFilter | null,
  ) {}

  /** The table held no row of the organization when the pass began. */
  get wasEmpty(): boolean {
    return this.seen !== null;
  }

  static async open(ctx: Pick<SyncContext, 'warehouse' | 'writer'>, stream: StreamSpec, organizationId: string): Promise<StoredRows> {
    const empty = !(await ctx.writer.hasRows(ctx.warehouse.db, tableName(stream), organizationId));
    return new StoredRows(ctx, stream, organizationId, empty ? new SeenFilter() : null);
  }

  async of(records: ReadonlyArray<{ id: string }>): Promise<Map<string, StoredRow>> {
    const seen = this.seen;
    const lookup = seen ? records.filter((n) => seen.mightHave(n.id)) : records;
    if (lookup.length === 0) return new Map();
    return this.ctx.writer.storedHashes(
      this.ctx.warehouse.db,
      tableName(this.stream),
      this.stream.primaryKey,
      this.organizationId,
      lookup.map((n) => n.id),
    );
  }

  /** Once a page is in, a record repeated on a later page (the list shifted) must be compared. */
  written(rows: readonly NormalizedRecord[]): void {
    if (this.seen) for (const n of rows) this.seen.add(n.id);
  }
}
