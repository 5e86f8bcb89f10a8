import { describe, expect, it } from 'vitest';
import { WarehouseError } from '../../src/core/errors.js';
import { LeaseLost } from '../../src/loaders/lease/fence.js';
import { retryWaitMs, withFaultRetry, type FaultPolicy } from '../../src/loaders/fault-aware-driver.js';

/** A policy on a fake clock: sleeping moves it, and every retry is recorded. */
function fakePolicy(retryMs: number): FaultPolicy & { slept: number[]; told: string[] } {
  let now = 0;
  const slept: number[] = [];
  const told: string[] = [];
  return {
    dialect: 'sqlite',
    displayUrl: 'sqlite:/data/w.db',
    retryMs,
    now: () => now,
    sleep: (ms) => {
      slept.push(ms);
      now += ms;
      return Promise.resolve();
    },
    onRetry: (e) => told.push(e.fault),
    slept,
    told,
  };
}

const busy = (): Error => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
const full = (): Error => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });

describe('withFaultRetry: how long a warehouse fault is waited out', () => {
  it('retries a transient fault until the work succeeds, backing off', async () => {
    const policy = fakePolicy(60_000);
    let calls = 0;
    const result = await withFaultRetry(policy, () => (++calls < 4 ? Promise.reject(busy()) : Promise.resolve('done')));
    expect(result).toBe('done');
    expect(policy.slept).toEqual([250, 500, 1000]);
    expect(policy.told).toEqual(['locked', 'locked', 'locked']);
  });

  it('gives up once warehouse.retry_s has passed, with the classified error', async () => {
    const policy = fakePolicy(3_000);
    const error = await withFaultRetry(policy, () => Promise.reject(busy())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WarehouseError);
    expect((error as WarehouseError).fault).toBe('locked');
    expect(policy.slept.reduce((a, b) => a + b, 0)).toBe(3_000);
  });

  it('does not retry a fault that waiting cannot cure (a full disk)', async () => {
    const policy = fakePolicy(60_000);
    let calls = 0;
    const error = await withFaultRetry(policy, () => {
      calls++;
      return Promise.reject(full());
    }).catch((e: unknown) => e);
    expect((error as WarehouseError).fault).toBe('disk_full');
    expect(calls).toBe(1);
  });

  it("passes svcsync's own errors through untouched (a lost lease is not the warehouse's fault)", async () => {
    const policy = fakePolicy(60_000);
    const lost = new LeaseLost('gone', 'taken_over');
    await expect(withFaultRetry(policy, () => Promise.reject(lost))).rejects.toBe(lost);
    expect(policy.slept).toEqual([]);
  });

  it('never waits past the deadline, nor longer than 5 s at once', () => {
    expect(retryWaitMs(0, 60_000)).toBe(250);
    expect(retryWaitMs(10, 60_000)).toBe(5_000);
    expect(retryWaitMs(10, 1_200)).toBe(1_200);
  });
});
