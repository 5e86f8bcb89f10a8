import type { Kysely } from 'kysely';
import { stateDb } from './tables.js';
import type { UsageRecord, UsageStore } from '../api/limiter.js';

/**
 * The daily request count per organization, kept in the warehouse so it survives restarts
 * and is shared by every svcsync process writing to the same warehouse.
 */
export class WarehouseUsageStore implements UsageStore {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  constructor(private readonly db: Kysely<any>, private readonly now: () => number = Date.now) {}

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
    };
  }

  async save(record: UsageRecord): Promise<void> {
    const values = {
      count: record.count,
      blocked_until: record.blockedUntil === null ? null : new Date(record.blockedUntil).toISOString(),
      updated_at: new Date(this.now()).toISOString(),
    };
    await stateDb(this.db)
      .insertInto('_svcsync_usage')
      .values({ organization_id: record.organizationId, day: record.day, ...values })
      .onConflict((oc) => oc.columns(['organization_id', 'day']).doUpdateSet(values))
      .execute();
  }
}
