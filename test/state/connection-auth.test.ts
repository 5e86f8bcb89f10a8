import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { listAuthorizations, recordAuthorization, type AuthorizationSeen } from '../../src/state/connection-auth.js';
import { DIALECTS, migratedWarehouse } from '../helpers/dialects.js';

const T0 = Date.parse('2026-11-25T10:00:00Z');
const at = (minutes: number): number => T0 + minutes * 60_000;
const iso = (minutes: number): string => new Date(at(minutes)).toISOString();
const ok = (minutes: number): AuthorizationSeen => ({ connection: 'acme', result: 'ok', at: at(minutes), error: null, hint: null });
const refused = (minutes: number, error = 'refused'): AuthorizationSeen => ({
  connection: 'acme',
  result: 'refused',
  at: at(minutes),
  error,
  hint: 'get a new refresh token',
});

describe.each(DIALECTS)('_svcsync_connections, on %s', (dialect) => {
  let w: Warehouse | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  async function rows() {
    return (await listAuthorizations(w!.db)).map((r) => ({ ...r, checked_ms: Number(r.checked_ms) }));
  }

  it('keeps the newest result per connection, when refusals began and when it last worked', async () => {
    w = await (await migratedWarehouse(dialect)).open();
    await migrateToLatest(w);
    await recordAuthorization(w.db, ok(0));
    await recordAuthorization(w.db, refused(5));
    await recordAuthorization(w.db, refused(10, 'refused again'));
    expect(await rows()).toEqual([
      {
        connection: 'acme',
        result: 'refused',
        checked_at: iso(10),
        checked_ms: at(10),
        error: 'refused again',
        hint: 'get a new refresh token',
        // The streak began at the first refusal; the last success is kept.
        failing_since: iso(5),
        last_ok_at: iso(0),
      },
    ]);
    // Another process's older result arrives late: it does not replace the newer one.
    await recordAuthorization(w.db, ok(7));
    expect((await rows())[0]).toMatchObject({ result: 'refused', checked_at: iso(10) });
    // Authorized again: the streak ends.
    await recordAuthorization(w.db, ok(20));
    expect((await rows())[0]).toMatchObject({ result: 'ok', error: null, hint: null, failing_since: null, last_ok_at: iso(20) });
    await recordAuthorization(w.db, { ...refused(21), connection: 'other' });
    expect((await rows()).map((r) => [r.connection, r.result, r.failing_since])).toEqual([
      ['acme', 'ok', null],
      ['other', 'refused', iso(21)],
    ]);
  });
});
