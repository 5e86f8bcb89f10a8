import { afterEach, describe, expect, it } from 'vitest';
import { LimiterRegistry } from '../../src/api/limiter.js';
import { FakeClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { RecordBudget } from '../../src/extractors/record-budget.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { DaemonMetrics } from '../../src/scheduler/surface/metrics.js';
import { listDrift, recordDrift } from '../../src/state/drift.js';
import { WarehouseUsageStore } from '../../src/state/usage-store.js';
import { DIALECTS, migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';

/** A process that knows no organization yet. */
const NO_ORGANIZATIONS = { organizations: () => [], limiter: () => Promise.resolve(null), jobs: () => [] };

const AT = { connection: 'c', organizationId: '1', stream: 'inventory.sales_orders', runId: 'r1', seenAt: '2026-11-22T10:00:00.000Z' };

describe.each(DIALECTS)('_svcsync_drift and its metric, on %s', (dialect) => {
  let tw: TestWarehouse | undefined;
  let w: Warehouse | undefined;
  afterEach(async () => {
    await w?.close();
    await tw?.drop();
    w = undefined;
  });

  async function open(): Promise<Warehouse> {
    tw = await migratedWarehouse(dialect);
    w = await tw.open();
    await migrateToLatest(w);
    return w;
  }

  it('upserts per field: first seen stays, last seen and the counts move, a null does not replace a type', async () => {
    const db = (await open()).db;
    await recordDrift(db, AT, [
      { field: 'x_a', type: 'null', occurrences: 2 },
      { field: 'line_items[].x_b', type: 'string', occurrences: 5 },
    ]);
    await recordDrift(db, { ...AT, runId: 'r2', seenAt: '2026-11-22T11:00:00.000Z' }, [
      { field: 'x_a', type: 'number', occurrences: 3 },
      { field: 'line_items[].x_b', type: 'null', occurrences: 1 },
    ]);
    await recordDrift(db, { ...AT, organizationId: '2' }, [{ field: 'x_a', type: 'boolean', occurrences: 1 }]);
    const rows = await listDrift(db);
    expect(rows.map((r) => [r.organization_id, r.field, r.sample_type, r.occurrences, r.first_seen, r.last_seen, r.last_run_id])).toEqual([
      ['1', 'line_items[].x_b', 'string', 6, AT.seenAt, '2026-11-22T11:00:00.000Z', 'r2'],
      ['1', 'x_a', 'number', 5, AT.seenAt, '2026-11-22T11:00:00.000Z', 'r2'],
      ['2', 'x_a', 'boolean', 1, AT.seenAt, AT.seenAt, 'r1'],
    ]);
  });

  it('svcsync_drift_fields counts the unknown fields per connection, organization and stream', async () => {
    const warehouse = await open();
    await recordDrift(warehouse.db, AT, [
      { field: 'x_a', type: 'string', occurrences: 1 },
      { field: 'x_b', type: 'number', occurrences: 1 },
    ]);
    await recordDrift(warehouse.db, { ...AT, stream: 'inventory.contacts' }, [{ field: 'x_c', type: 'object', occurrences: 4 }]);
    const clock = new FakeClock(Date.parse(AT.seenAt));
    const logger = createLogger({ level: 'silent', secrets: new SecretRegistry() });
    const limiters = new LimiterRegistry({ clock, store: new WarehouseUsageStore(warehouse, () => clock.now()), logger });
    const metrics = new DaemonMetrics({ clock, limiters, warehouse, quota: NO_ORGANIZATIONS });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^svcsync_drift_fields\{connection="c",organization="1",stream="inventory.sales_orders"\} 2$/m);
    expect(text).toMatch(/^svcsync_drift_fields\{connection="c",organization="1",stream="inventory.contacts"\} 1$/m);
  });

  it('svcsync_records_in_flight reads the process cap on records at each scrape', async () => {
    const warehouse = await open();
    const clock = new FakeClock(Date.parse(AT.seenAt));
    const logger = createLogger({ level: 'silent', secrets: new SecretRegistry() });
    const limiters = new LimiterRegistry({ clock, store: new WarehouseUsageStore(warehouse, () => clock.now()), logger });
    const records = new RecordBudget(2_000);
    const metrics = new DaemonMetrics({ clock, limiters, warehouse, quota: NO_ORGANIZATIONS, records });
    const page = await records.acquire(200);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^svcsync_records_in_flight 200$/m);
    expect(text).toMatch(/^svcsync_records_in_flight_limit 2000$/m);
    page.release();
    expect(await metrics.registry.metrics()).toMatch(/^svcsync_records_in_flight 0$/m);
  });
});
