import { quotaDay } from '../src/api/quota-day.js';
import type { Family } from '../src/catalog/families.js';
import { parseConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { migrateToLatest } from '../src/loaders/migrate.js';
import type { Warehouse } from '../src/loaders/warehouse.js';
import { resolveJobs } from '../src/scheduler/timing/jobs.js';
import { stateDb, type StreamStateRow } from '../src/state/tables.js';

/**
 * A fleet's state written straight into a warehouse's `_svcsync_` tables, as the daemon would
 * leave it after a day of runs: N organizations of one connection, each with every stream the
 * daemon schedules, most fresh, some late, stale, failing or never synced, and their requests
 * today (a few near or past the budget). No API, no data rows: what the status page, its
 * document and `/healthz` read. Used by `bench/status-page.ts` and the 1,000-organization
 * browser test.
 */

export const FLEET_CONNECTION = 'fleet';

/**
 * The configuration of the fleet: one connection on the free plan, all four families, the plan's
 * cron schedules (freshness off: the seeded ages are set against those periods).
 */
export function fleetConfig(warehouseUrl: string): Config {
  return parseConfig(
    {
      warehouse: warehouseUrl,
      connections: [
        { name: FLEET_CONNECTION, client_id: 'fleet-client', client_secret: 'fleet-secret', refresh_token: 'fleet-refresh', plan: 'free' },
      ],
      daemon: { freshness: { enabled: false } },
    },
    { env: {} },
  );
}

/** What the seeded organization `i` is like (deterministic, so a test can name them). */
export function fleetShape(i: number): 'failing' | 'stale' | 'never' | 'late' | 'fresh' {
  if (i % 97 === 5) return 'failing';
  if (i % 53 === 7) return 'stale';
  if (i % 211 === 11) return 'never';
  if (i % 31 === 3) return 'late';
  return 'fresh';
}

export const fleetOrganizationId = (i: number): string => String(700_000_000 + i);

const status = (failed: boolean): string => (failed ? 'failed' : 'ok');

const FAMILIES: readonly Family[] = ['books', 'inventory', 'invoice', 'billing'];

/** Writes the fleet's state; returns the streams each organization has. */
export async function seedFleet(warehouse: Warehouse, config: Config, organizations: number, now: number): Promise<string[]> {
  await migrateToLatest(warehouse);
  const db = stateDb(warehouse.db);
  const ids = Array.from({ length: organizations }, (_, i) => fleetOrganizationId(i));
  const known = ids.map((organizationId) => ({ connection: FLEET_CONNECTION, organizationId, families: [...FAMILIES] }));
  const jobs = resolveJobs(config, known.slice(0, 1), { backfill: false });
  const every = new Map<string, number>();
  for (const j of jobs)
    if (j.jobClass === 'incremental' || j.jobClass === 'settings')
      for (const s of j.streams) every.set(s, (j.cron.next(j.cron.next(now)) - j.cron.next(now)) / 1000);
  const streams = [...every.keys()].sort();
  const iso = (ms: number): string => new Date(ms).toISOString();
  const orgRows = ids.flatMap((organizationId, i) =>
    FAMILIES.map((family) => ({
      connection: FLEET_CONNECTION,
      family,
      organization_id: organizationId,
      name: i % 10 === 0 ? `Müller & Söhne ${i} GmbH` : `Organization ${i}`,
      is_active: 1,
      time_zone: 'UTC',
      discovered_at: iso(now - 86_400_000),
    })),
  );
  const stateRows: StreamStateRow[] = [];
  ids.forEach((organizationId, i) => {
    const shape = fleetShape(i);
    streams.forEach((stream, k) => {
      const period = every.get(stream)! * 1000;
      // Most streams finished their last run within the period; the shape picks one stream to be late or stale.
      let success: number | null = now - ((i * 7 + k * 13) % 100) * (period / 200);
      if (shape === 'never') success = null;
      if (shape === 'late' && k === i % streams.length) success = now - period * 2;
      if (shape === 'stale' && k === i % streams.length) success = now - period * 5;
      const failed = shape === 'failing' && k === i % streams.length;
      stateRows.push({
        connection: FLEET_CONNECTION,
        organization_id: organizationId,
        stream,
        cursor: success === null ? null : iso(success - 60_000),
        pass_kind: null,
        pass_started_at: null,
        pass_next_page: null,
        pass_floor: null,
        pass_max_changed: null,
        pass_unsorted: null,
        pass_records: null,
        pass_children: null,
        children_reread_at: null,
        last_run_id: null,
        last_started_at: success === null ? null : iso(now - 120_000),
        last_finished_at: success === null ? null : iso(now - 60_000),
        last_success_at: success === null ? null : iso(success),
        last_status: success === null ? null : status(failed),
        last_error: failed
          ? `GET /${stream.split('.')[0]}/v3/list?organization_id=${organizationId} → HTTP 500 code 1: internal error\n` +
            '  → the server failed; svcsync retries with backoff.'
          : null,
        last_pages: 1,
        last_requests: 1,
        last_records: 3,
        updated_at: iso(now - 60_000),
      });
    });
  });
  const day = quotaDay(now, 'UTC');
  const usageRows = ids.map((organizationId, i) => ({
    organization_id: organizationId,
    day,
    count: i % 250 === 9 ? 900 : (i * 37) % 700,
    blocked_until: i % 250 === 9 ? iso(now + 3_600_000) : null,
    updated_at: iso(now),
  }));
  await db.transaction().execute(async (tx) => {
    for (let i = 0; i < orgRows.length; i += 200)
      await tx
        .insertInto('_svcsync_organizations')
        .values(orgRows.slice(i, i + 200))
        .execute();
    for (let i = 0; i < stateRows.length; i += 100)
      await tx
        .insertInto('_svcsync_streams')
        .values(stateRows.slice(i, i + 100))
        .execute();
    for (let i = 0; i < usageRows.length; i += 200)
      await tx
        .insertInto('_svcsync_usage')
        .values(usageRows.slice(i, i + 200))
        .execute();
  });
  return streams;
}
