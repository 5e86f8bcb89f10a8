import { sql } from 'kysely';
import type { AnyDb } from '../loaders/db.js';
import { newUnitId } from '../loaders/applied-units.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { stateDb } from './tables.js';
import type { Reservation, UsageRecord, UsageStore } from '../api/usage-store.js';

const COUNT = sql.ref('count');

/**
 * The daily request count per organization and quota day, kept in the warehouse so it survives
 * restarts and is shared by every svcsync process writing to the same warehouse.
 *
 * Each process's limiter takes the budget in chunks: `reserve` is one conditional UPDATE
 * (`count = count + n WHERE count + n <= budget`), atomic on Postgres under any number of
 * writers and on SQLite because its writers are serialized. `count` is therefore what every
 * process took (sent, or holds unsent); a process that dies holding a chunk leaves its unsent
 * part counted until the day ends (docs/assumptions.md).
 *
 * A reservation and a release change the count by n, so each is a unit of work with an id of
 * its own (src/loaders/applied-units.ts): retried after its COMMIT's reply was lost, it finds
 * its id claimed and returns the first attempt's grant, so no request is counted twice or lost.
 * The other writes set absolute values and are safe to send twice.
 */
export class WarehouseUsageStore implements UsageStore {
  private readonly db: AnyDb;

  constructor(
    private readonly warehouse: Pick<Warehouse, 'db' | 'transaction'>,
    private readonly now: () => number = Date.now,
  ) {
    this.db = warehouse.db;
  }

  async load(organizationId: string): Promise<UsageRecord | null> {
    const row = await stateDb(this.db)
      .selectFrom('_svcsync_usage')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .orderBy('day', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (!row) return null;
    return {
      organizationId,
      day: row.day,
      count: Number(row.count),
      blockedUntil: row.blocked_until ? Date.parse(row.blocked_until) : null,
      resetsAt: row.resets_at ? Date.parse(row.resets_at) : null,
    };
  }

  reserve(organizationId: string, day: string, n: number, budget: number): Promise<Reservation> {
    return this.warehouse.transaction((trx) => this.take(trx, organizationId, day, Math.floor(n), budget), undefined, newUnitId());
  }

  private async take(db: AnyDb, organizationId: string, day: string, n: number, budget: number): Promise<Reservation> {
    await this.ensureRow(organizationId, day, db);
    let want = n;
    while (want > 0) {
      const row = await stateDb(db)
        .updateTable('_svcsync_usage')
        .set({ count: sql<number>`${COUNT} + ${want}`, updated_at: this.stamp() })
        .where('organization_id', '=', organizationId)
        .where('day', '=', day)
        .where(sql<number>`${COUNT} + ${want}`, '<=', budget)
        .returning('count')
        .executeTakeFirst();
      if (row) return { granted: want, used: Number(row.count) };
      // Less than n is left: take what is left (others may take it first; then try again).
      const used = await this.count(organizationId, day, db);
      if (used >= budget) return { granted: 0, used };
      want = Math.min(want, budget - used);
    }
    return { granted: 0, used: await this.count(organizationId, day, db) };
  }

  async release(organizationId: string, day: string, n: number): Promise<void> {
    if (n <= 0) return;
    await this.warehouse.transaction(
      async (trx) => {
        await stateDb(trx)
          .updateTable('_svcsync_usage')
          .set({ count: sql<number>`CASE WHEN ${COUNT} > ${n} THEN ${COUNT} - ${n} ELSE 0 END`, updated_at: this.stamp() })
          .where('organization_id', '=', organizationId)
          .where('day', '=', day)
          .execute();
        return null;
      },
      undefined,
      newUnitId(),
    );
  }

  async raise(organizationId: string, day: string, count: number): Promise<void> {
    await this.ensureRow(organizationId, day);
    await stateDb(this.db)
      .updateTable('_svcsync_usage')
      .set({ count, updated_at: this.stamp() })
      .where('organization_id', '=', organizationId)
      .where('day', '=', day)
      .where('count', '<', count)
      .execute();
  }

  async block(organizationId: string, day: string, until: number): Promise<void> {
    await this.ensureRow(organizationId, day);
    await stateDb(this.db)
      .updateTable('_svcsync_usage')
      .set({ blocked_until: new Date(until).toISOString(), updated_at: this.stamp() })
      .where('organization_id', '=', organizationId)
      .where('day', '=', day)
      .execute();
  }

  async markReset(organizationId: string, day: string, resetsAt: number): Promise<void> {
    await this.ensureRow(organizationId, day);
    await stateDb(this.db)
      .updateTable('_svcsync_usage')
      .set({ resets_at: new Date(resetsAt).toISOString(), updated_at: this.stamp() })
      .where('organization_id', '=', organizationId)
      .where('day', '=', day)
      .execute();
  }

  /** The day's row, created at 0 by whichever process comes first. */
  private async ensureRow(organizationId: string, day: string, db: AnyDb = this.db): Promise<void> {
    await stateDb(db)
      .insertInto('_svcsync_usage')
      .values({ organization_id: organizationId, day, count: 0, blocked_until: null, resets_at: null, updated_at: this.stamp() })
      .onConflict((oc) => oc.columns(['organization_id', 'day']).doNothing())
      .execute();
  }

  private async count(organizationId: string, day: string, db: AnyDb = this.db): Promise<number> {
    const row = await stateDb(db)
      .selectFrom('_svcsync_usage')
      .select('count')
      .where('organization_id', '=', organizationId)
      .where('day', '=', day)
      .executeTakeFirst();
    return row ? Number(row.count) : 0;
  }

  private stamp(): string {
    return new Date(this.now()).toISOString();
  }
}
