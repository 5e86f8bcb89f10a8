import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { processOwner } from '../../src/loaders/lease/lease.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { closeAbandonedRuns, finishRun, startRun } from '../../src/state/runs.js';
import { stateDb } from '../../src/state/tables.js';
import { DIALECTS, migratedWarehouse } from '../helpers/dialects.js';

describe.each(DIALECTS)('runs that never recorded their end, on %s', (dialect) => {
  let w: Warehouse | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  it('are closed as abandoned when their process is gone or no longer runs them; runs in flight and finished runs are kept', async () => {
    w = await (await migratedWarehouse(dialect)).open();
    await migrateToLatest(w);
    const db = stateDb(w.db);
    const [host] = processOwner().split('/');
    const row = (runId: string, process: string, status = 'running') => ({
      run_id: runId,
      command: 'sync',
      started_at: '2026-11-25T10:00:00.000Z',
      finished_at: null,
      status,
      requests: 0,
      records: 0,
      errors: null,
      summary: null,
      process,
    });
    // A process of this host that no longer exists (pid 2^22 + 1 is above Linux's pid_max).
    await db
      .insertInto('_svcsync_runs')
      .values(row('dead', `${host}/4194305`))
      .execute();
    // This process, but not a run it is running (its end was never written).
    await db.insertInto('_svcsync_runs').values(row('mine-lost', processOwner())).execute();
    // Another machine's: its process cannot be seen from here.
    await db.insertInto('_svcsync_runs').values(row('elsewhere', 'another-host/123')).execute();
    await db
      .insertInto('_svcsync_runs')
      .values(row('done', `${host}/4194305`, 'ok'))
      .execute();
    await startRun(w.db, { runId: 'live', command: 'sync', startedAt: '2026-11-25T11:00:00.000Z' });

    const closed = await closeAbandonedRuns(w.db, { runId: 'next', at: '2026-11-25T12:00:00.000Z' });
    expect(closed.sort()).toEqual(['dead', 'mine-lost']);
    const rows = await db.selectFrom('_svcsync_runs').select(['run_id', 'status', 'abandoned_at', 'errors']).execute();
    const byId = Object.fromEntries(rows.map((r) => [r.run_id, r]));
    expect(byId['dead']).toMatchObject({ status: 'abandoned', abandoned_at: '2026-11-25T12:00:00.000Z' });
    expect(String(byId['dead']!.errors)).toContain('is gone');
    expect(byId['mine-lost']!.status).toBe('abandoned');
    expect(byId['elsewhere']!.status).toBe('running');
    expect(byId['done']!.status).toBe('ok');
    expect(byId['live']!.status).toBe('running');

    await finishRun(w.db, 'live', { finishedAt: '2026-11-25T11:05:00.000Z', status: 'ok', requests: 1, records: 1, errors: [] });
    expect(await closeAbandonedRuns(w.db, { runId: 'later', at: '2026-11-25T13:00:00.000Z' })).toEqual([]);
  });
});
