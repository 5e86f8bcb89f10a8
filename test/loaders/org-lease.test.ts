import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { findStream } from '../../src/catalog/index.js';
import { FakeClock } from '../../src/core/clock.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { advisoryKey, PostgresOrgLeases } from '../../src/loaders/lease/postgres.js';
import { applyHandover, localProcessGone, processOwner, type Lease, type LeaseTimings } from '../../src/loaders/lease/lease.js';
import { LeaseLost } from '../../src/loaders/lease/fence.js';
import { ProcessLeases } from '../../src/loaders/lease/process.js';
import { TableWriter } from '../../src/loaders/table-writer.js';
import { commitDetail, commitPage, type Loader } from '../../src/state/unit-of-work.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { normalizeRecord } from '../../src/normalize/normalize.js';
import type { DeletedRows } from '../../src/loaders/deleted-rows.js';
import { DIALECTS, migratedWarehouse, PG_BASE_URL } from '../helpers/dialects.js';
import { CONTACT } from '../normalize/fixtures.js';

const contacts = findStream('inventory.contacts') as StreamSpec;
const ORG = '700';
const T0 = '2026-11-20T10:00:00.000Z';
const key = { connection: 'c', organizationId: ORG, stream: 'inventory.contacts' };
const FAST: Partial<LeaseTimings> = { ttlMs: 400, heartbeatMs: 50, pollMs: 25 };
/**
 * A paused process that never beats: its own clock stands still too, so it does not give the
 * lease up by itself (the time check) and what refuses its writes is the generation fence.
 */
const PAUSED = (): Partial<LeaseTimings> => {
  const at = Date.now();
  return { ...FAST, heartbeatMs: 60_000, now: () => at };
};

/** A page of one contact that keeps its pass going, written under `fence`. */
function page(loader: Loader, id: string): Promise<{ deleted: DeletedRows }> {
  const row = normalizeRecord(contacts, { ...CONTACT, contact_id: id }, { organizationId: ORG, source: 'list', syncedAt: T0 });
  return commitPage(loader, {
    key,
    stream: contacts,
    syncedAt: T0,
    rows: [row],
    fresh: new Set([id]),
    parents: [],
    reason: 'backfill',
    details: [],
    position: { kind: 'full', startedAt: T0, nextPage: 2, floor: null, maxChanged: null, unsorted: false, records: 1, children: true },
  });
}

async function contactIds(w: Warehouse): Promise<string[]> {
  const rows = await w.db.selectFrom('inventory_contacts').select('contact_id').orderBy('contact_id').execute();
  return rows.map((r) => String(r.contact_id));
}

for (const dialect of DIALECTS) {
  describe(`organization leases (${dialect})`, () => {
    // Two warehouses on one database: two processes, as far as leases go.
    const open: Warehouse[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((w) => w.close()));
    });

    async function two(timings: { a?: Partial<LeaseTimings>; b?: Partial<LeaseTimings> } = {}): Promise<[Warehouse, Warehouse]> {
      const tw = await migratedWarehouse(dialect);
      const a = await openWarehouse(tw.url, { poolSize: 2, leaseTimings: { ...FAST, ...timings.a } });
      open.push(a);
      await migrateToLatest(a);
      const b = await openWarehouse(tw.url, { poolSize: 2, leaseTimings: { ...FAST, ...timings.b } });
      open.push(b);
      return [a, b];
    }

    it('one owner at a time: a second acquirer skips, and gets it (next generation) once released', async () => {
      const [a, b] = await two();
      const first = (await a.leases.acquire('c', ORG, { wait: false }))!;
      expect(first.generation).toBe(1);
      expect(await b.leases.acquire('c', ORG, { wait: false })).toBeNull();
      expect(await b.leases.ownerOf('c', ORG)).toMatch(/\/\d+$/);
      // Another organization is free.
      expect((await b.leases.acquire('c', '701', { wait: false }))?.generation).toBe(1);
      await first.release();
      const second = (await b.leases.acquire('c', ORG, { wait: false }))!;
      expect(second.generation).toBe(2);
      await second.release();
    });

    it('runs of one process share its lease: same generation, both commit, held until the last lets go', async () => {
      const [a, b] = await two();
      const one = (await a.leases.acquire('c', ORG, { wait: false }))!;
      const two_ = (await a.leases.acquire('c', ORG, { wait: false }))!;
      expect(two_.generation).toBe(one.generation);
      const writer = new TableWriter(a.sql);
      await page({ warehouse: a, writer, fence: one.fence }, 'A');
      await page({ warehouse: a, writer, fence: two_.fence }, 'B');
      expect(await contactIds(a)).toEqual(['A', 'B']);
      await one.release();
      // Still this process's: the other run holds it.
      expect(await b.leases.acquire('c', ORG, { wait: false })).toBeNull();
      await page({ warehouse: a, writer, fence: two_.fence }, 'C');
      await two_.release();
      expect((await b.leases.acquire('c', ORG, { wait: false }))?.generation).toBe(one.generation + 1);
    });

    it('many organizations acquired and released at once by two processes: each once, by one of them, all given back', async () => {
      const [a, b] = await two();
      const orgs = Array.from({ length: 24 }, (_, i) => String(800 + i));
      const attempts = orgs.flatMap((org) => [a, b].map(async (w) => ({ org, lease: await w.leases.acquire('c', org, { wait: false }) })));
      const got = (await Promise.all(attempts)).filter((x) => x.lease !== null);
      // Exactly one winner per organization, whichever process it was.
      expect(got.map((x) => x.org).sort()).toEqual(orgs);
      expect(got.every((x) => x.lease!.generation === 1)).toBe(true);
      await Promise.all(got.map((x) => x.lease!.release()));
      const again = await Promise.all(orgs.map((org) => b.leases.acquire('c', org, { wait: false })));
      expect(again.map((l) => l?.generation)).toEqual(orgs.map(() => 2));
      await Promise.all(again.map((l) => l!.release()));
    });

    it('a waiting acquirer gets the organization when its owner lets go', async () => {
      const [a, b] = await two();
      const first = (await a.leases.acquire('c', ORG, { wait: false }))!;
      const waiting = b.leases.acquire('c', ORG, { wait: true });
      setTimeout(() => void first.release(), 200);
      const second = (await waiting)!;
      expect(second.generation).toBe(2);
    });

    it('a wait ends when the run is asked to stop', async () => {
      const [a, b] = await two();
      await a.leases.acquire('c', ORG, { wait: false });
      let polls = 0;
      const stop = new Error('stop asked');
      const waiting = b.leases.acquire('c', ORG, {
        wait: true,
        check: () => {
          if (++polls > 3) throw stop;
        },
      });
      await expect(waiting).rejects.toBe(stop);
    });

    it('the holder commits under its fence; a page of no lease applies too', async () => {
      const [a] = await two();
      const lease = (await a.leases.acquire('c', ORG, { wait: false }))!;
      const writer = new TableWriter(a.sql);
      await page({ warehouse: a, writer, fence: lease.fence }, 'A');
      await page({ warehouse: a, writer }, 'B');
      expect(await contactIds(a)).toEqual(['A', 'B']);
      lease.assertHeld();
    });
  });
}

/** Takes the organization from `a`'s holder the way each dialect loses a lease, and returns the taker's lease. */
async function takeOver(dialect: string, a: Warehouse, b: Warehouse): Promise<Lease> {
  if (dialect === 'postgres') {
    // The lock connection dies (a network cut, idle_session_timeout of a paused process).
    const pid = await ((a.leases as ProcessLeases).inner as PostgresOrgLeases).sessionPid();
    const admin = new pg.Client({ connectionString: PG_BASE_URL });
    await admin.connect();
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await admin.end();
  }
  // SQLite: `b` runs 1 s ahead, so `a`'s heartbeat (400 ms lease) has expired by its clock.
  return (await b.leases.acquire('c', ORG, { wait: true }))!;
}

for (const dialect of DIALECTS) {
  describe(`a stale owner cannot commit (${dialect})`, () => {
    const open: Warehouse[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((w) => w.close()));
    });

    it('after a takeover (generation + 1) the old owner’s page and detail commits are refused and write nothing', async () => {
      const tw = await migratedWarehouse(dialect);
      // `a` never beats on its own (a paused process); `b` sees time 1 s ahead.
      const a = await openWarehouse(tw.url, { poolSize: 2, leaseTimings: PAUSED() });
      open.push(a);
      await migrateToLatest(a);
      const b = await openWarehouse(tw.url, { poolSize: 2, leaseTimings: { ...FAST, now: () => Date.now() + 1_000 } });
      open.push(b);
      const old = (await a.leases.acquire('c', ORG, { wait: false }))!;
      const writer = new TableWriter(a.sql);
      await page({ warehouse: a, writer, fence: old.fence }, 'A');

      const taker = await takeOver(dialect, a, b);
      expect(taker.generation).toBe(old.generation + 1);

      await expect(page({ warehouse: a, writer, fence: old.fence }, 'STALE')).rejects.toBeInstanceOf(LeaseLost);
      const detail = normalizeRecord(
        contacts,
        { ...CONTACT, contact_id: 'STALE2' },
        { organizationId: ORG, source: 'detail', syncedAt: T0 },
      );
      await expect(
        commitDetail({ warehouse: a, writer, fence: old.fence }, { key, stream: contacts, id: 'STALE2', syncedAt: T0, record: detail }),
      ).rejects.toBeInstanceOf(LeaseLost);
      // The new owner writes on.
      await page({ warehouse: b, writer: new TableWriter(b.sql), fence: taker.fence }, 'B');
      expect(await contactIds(b)).toEqual(['A', 'B']);
      // The lost lease's release does not free the taker's.
      await old.release();
      expect(() => taker.assertHeld()).not.toThrow();
      await page({ warehouse: b, writer: new TableWriter(b.sql), fence: taker.fence }, 'C');
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`the per-minute window across owners (${dialect})`, () => {
    const open: Warehouse[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((w) => w.close()));
    });

    async function pair(bNow?: () => number): Promise<[Warehouse, Warehouse]> {
      const tw = await migratedWarehouse(dialect);
      const a = await openWarehouse(tw.url, { poolSize: 2, leaseTimings: PAUSED() });
      open.push(a);
      await migrateToLatest(a);
      const b = await openWarehouse(tw.url, { poolSize: 2, leaseTimings: { ...FAST, ...(bNow ? { now: bNow } : {}) } });
      open.push(b);
      return [a, b];
    }

    it('a clean release carries the window to the next owner in the releasing statement', async () => {
      const [a, b] = await pair();
      const first = (await a.leases.acquire('c', ORG, { wait: false }))!;
      expect(first.handover).toEqual({ kind: 'first', window: null });
      // A second run of the same process shares the lease and gets no handover of its own.
      const again = (await a.leases.acquire('c', ORG, { wait: false }))!;
      expect(again.handover.kind).toBe('shared');
      await again.release({ freeAt: [1], notBefore: null });
      const window = { freeAt: [1_000, 1_000, 1_200], notBefore: 1_500 };
      await first.release(window);
      const rows = await b.db.selectFrom('_svcsync_leases').select(['owner', 'window_json']).execute();
      expect(rows).toEqual([{ owner: null, window_json: JSON.stringify(window) }]);

      const second = (await b.leases.acquire('c', ORG, { wait: false }))!;
      expect(second.handover).toEqual({ kind: 'clean', window });
      // The handover seeds the new owner's limiter; a clean release with no window seeds nothing.
      const seeded: unknown[] = [];
      const target = { limits: { window_ms: 60_000 }, seedWindow: (w: unknown) => seeded.push(w), holdUntil: () => seeded.push('hold') };
      applyHandover(second.handover, target, 0);
      expect(seeded).toEqual([window]);
      await second.release();
      const third = (await a.leases.acquire('c', ORG, { wait: false }))!;
      expect(third.handover).toEqual({ kind: 'clean', window: null });
      await third.release();
    });

    it('an unclean takeover reports "wait one window" and the lost owner cannot write its window over it', async () => {
      const [a, b] = await pair(() => Date.now() + 1_000);
      const old = (await a.leases.acquire('c', ORG, { wait: false }))!;
      const taker = await takeOver(dialect, a, b);
      expect(taker.generation).toBe(old.generation + 1);
      expect(taker.handover).toEqual({ kind: 'takeover', window: null });
      const holds: number[] = [];
      applyHandover(
        taker.handover,
        { limits: { window_ms: 60_000 }, seedWindow: () => holds.push(-1), holdUntil: (t) => holds.push(t) },
        5_000,
      );
      expect(holds).toEqual([65_000]);
      // The stale owner's release touches nothing: the row stays the taker's.
      await old.release({ freeAt: [123], notBefore: null });
      const row = await b.db.selectFrom('_svcsync_leases').select(['owner', 'window_json', 'handover']).executeTakeFirstOrThrow();
      expect(row.owner).not.toBeNull();
      expect(row.window_json).toBeNull();
      expect(row.handover).toBe('takeover');
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`a holder the warehouse has not confirmed for its time-to-live (${dialect})`, () => {
    const open: Warehouse[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((w) => w.close()));
    });

    it('gives its lease up before sending or writing (a process paused past its lease), with a message that says so', async () => {
      const tw = await migratedWarehouse(dialect);
      let now = 1_000_000;
      // Never beats (60 s) within the test; lease time-to-live 3 s, so it counts as held for 2 s.
      const a = await openWarehouse(tw.url, {
        poolSize: 2,
        leaseTimings: { ttlMs: 3_000, heartbeatMs: 60_000, pollMs: 25, now: () => now },
      });
      open.push(a);
      await migrateToLatest(a);
      const lease = (await a.leases.acquire('c', ORG, { wait: false }))!;
      const writer = new TableWriter(a.sql);
      now += 1_900;
      expect(() => lease.assertHeld()).not.toThrow();
      await page({ warehouse: a, writer, fence: lease.fence }, 'A');
      now += 200;
      expect(() => lease.assertHeld()).toThrow(/not confirmed by the warehouse for 2 s \(this process was paused or cut off\)/);
      await expect(page({ warehouse: a, writer, fence: lease.fence }, 'LATE')).rejects.toBeInstanceOf(LeaseLost);
      expect(await contactIds(a)).toEqual(['A']);
      await lease.release();
    });

    it('a holder whose keepalive answers stays confirmed well past its time-to-live', async () => {
      const tw = await migratedWarehouse(dialect);
      const clock = new FakeClock(1_000_000);
      const a = await openWarehouse(tw.url, {
        poolSize: 2,
        leaseTimings: { ttlMs: 1_500, heartbeatMs: 100, pollMs: 25, now: () => clock.now(), clock },
      });
      open.push(a);
      await migrateToLatest(a);
      const lease = (await a.leases.acquire('c', ORG, { wait: false }))!;
      // 2 s of the lease's time, one keepalive at a time. ownerOf waits for the keepalive just
      // fired (Postgres: behind it on the lock session; SQLite: after its update), and a SQLite
      // owner whose heartbeat lapsed would read as none.
      for (let elapsed = 0; elapsed < 2_000; elapsed += 100) {
        await clock.advance(100);
        expect(await a.leases.ownerOf('c', ORG)).toMatch(/\/\d+$/);
      }
      expect(() => lease.assertHeld()).not.toThrow();
      await page({ warehouse: a, writer: new TableWriter(a.sql), fence: lease.fence }, 'A');
      await lease.release();
    });
  });
}

describe('advisory lock keys', () => {
  it('are 64-bit, stable, and differ by schema, connection and organization', () => {
    const k = advisoryKey('s', 'c', '1');
    expect(BigInt(k)).toBeGreaterThanOrEqual(-(2n ** 63n));
    expect(BigInt(k)).toBeLessThan(2n ** 63n);
    expect(advisoryKey('s', 'c', '1')).toBe(k);
    expect(new Set([k, advisoryKey('t', 'c', '1'), advisoryKey('s', 'd', '1'), advisoryKey('s', 'c', '2')]).size).toBe(4);
  });
});

describe('a SQLite lease whose owner process is gone', () => {
  it('localProcessGone: this process is alive, an exited one of this host is gone, another host is never judged', async () => {
    const child = spawn(process.execPath, ['-e', '0']);
    const pid = child.pid!;
    await new Promise((resolve) => child.on('exit', resolve));
    expect(localProcessGone(processOwner())).toBe(false);
    expect(localProcessGone(`${hostname()}/${pid}`)).toBe(true);
    expect(localProcessGone(`not-${hostname()}/${pid}`)).toBe(false);
  });

  it('is taken over at once (a killed sync must not block the next for its heartbeat time-to-live), as an unclean takeover', async () => {
    const child = spawn(process.execPath, ['-e', '0']);
    const pid = child.pid!;
    await new Promise((resolve) => child.on('exit', resolve));
    const tw = await migratedWarehouse('sqlite');
    const w = await openWarehouse(tw.url, { leaseTimings: FAST });
    try {
      await migrateToLatest(w);
      // The dead process's row, with a heartbeat an hour from now.
      await w.db
        .insertInto('_svcsync_leases')
        .values({
          connection: 'c',
          organization_id: ORG,
          generation: 4,
          owner: `${hostname()}/${pid}`,
          acquired_at: T0,
          expires_at: Date.now() + 3_600_000,
        })
        .execute();
      const lease = (await w.leases.acquire('c', ORG, { wait: false }))!;
      expect(lease.generation).toBe(5);
      expect(lease.handover.kind).toBe('takeover');
      await lease.release();
    } finally {
      await w.close();
    }
  });
});
