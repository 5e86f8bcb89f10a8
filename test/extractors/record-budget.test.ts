import { describe, expect, it } from 'vitest';
import { RecordBudget, holding } from '../../src/extractors/record-budget.js';

/** Lets queued grants and their continuations run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('RecordBudget', () => {
  it('grants at once while the records fit, and makes the next share wait until room is given back', async () => {
    const budget = new RecordBudget(400);
    const a = await budget.acquire(200);
    const b = await budget.acquire(200);
    expect(budget.inFlight).toBe(400);
    let granted = false;
    const c = budget.acquire(200).then((p) => ((granted = true), p));
    await settle();
    expect(granted).toBe(false);
    a.release();
    await settle();
    expect(granted).toBe(true);
    expect(budget.inFlight).toBe(400);
    b.release();
    (await c).release();
    expect(budget.inFlight).toBe(0);
    expect(budget.peak).toBe(400);
  });

  it('grants a share larger than the cap when nothing else is held, so no page is refused for its size', async () => {
    const budget = new RecordBudget(100);
    const big = await budget.acquire(200);
    expect(budget.inFlight).toBe(200);
    let small = false;
    const next = budget.acquire(1).then((p) => ((small = true), p));
    await settle();
    expect(small).toBe(false);
    big.release();
    (await next).release();
    expect(small).toBe(true);
  });

  it('serves waiters in arrival order: a small share does not pass a large one waiting before it', async () => {
    const budget = new RecordBudget(300);
    const held = await budget.acquire(200);
    const order: string[] = [];
    const large = budget.acquire(200).then((p) => (order.push('large'), p));
    const small = budget.acquire(50).then((p) => (order.push('small'), p));
    // 50 would fit now, but only after the large one: arrival order.
    expect(budget.tryAcquire(50)).toBeNull();
    await settle();
    expect(order).toEqual([]);
    held.release();
    await settle();
    expect(order).toEqual(['large', 'small']);
    (await large).release();
    (await small).release();
    expect(budget.inFlight).toBe(0);
  });

  it('tryAcquire takes only room that is free now', () => {
    const budget = new RecordBudget(250);
    const a = budget.tryAcquire(200);
    expect(a?.records).toBe(200);
    expect(budget.tryAcquire(100)).toBeNull();
    expect(budget.tryAcquire(50)?.records).toBe(50);
    expect(budget.inFlight).toBe(250);
  });

  it('a permit released twice gives its records back once; grow adds without waiting', async () => {
    const budget = new RecordBudget(100);
    const p = await budget.acquire(100);
    p.grow(30);
    expect(budget.inFlight).toBe(130);
    expect(budget.peak).toBe(130);
    p.release();
    p.release();
    expect(budget.inFlight).toBe(0);
  });

  it('shrinkTo gives back what the answer did not need, and lets a waiter in', async () => {
    const budget = new RecordBudget(200);
    const page = await budget.acquire(200);
    let next = false;
    const waiting = budget.acquire(100).then((p) => ((next = true), p));
    await settle();
    expect(next).toBe(false);
    // The page held 8 records.
    page.shrinkTo(8);
    await settle();
    expect(next).toBe(true);
    expect(budget.inFlight).toBe(108);
    page.shrinkTo(50);
    expect(page.records).toBe(8);
    page.release();
    (await waiting).release();
    expect(budget.inFlight).toBe(0);
  });

  it('an aborted wait leaves the queue and rejects with the reason; those behind it are served', async () => {
    const budget = new RecordBudget(100);
    const held = await budget.acquire(60);
    const controller = new AbortController();
    const waiting = budget.acquire(100, controller.signal);
    let behind = false;
    const after = budget.acquire(40).then((p) => ((behind = true), p));
    await settle();
    expect(behind).toBe(false);
    controller.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
    await settle();
    expect(behind).toBe(true);
    held.release();
    (await after).release();
    expect(budget.inFlight).toBe(0);
  });

  it('holding gives the records back when the work throws', async () => {
    const budget = new RecordBudget(10);
    await expect(
      holding(budget, 5, new AbortController().signal, () => {
        expect(budget.inFlight).toBe(5);
        return Promise.reject(new Error('page failed'));
      }),
    ).rejects.toThrow('page failed');
    expect(budget.inFlight).toBe(0);
  });

  it.each([0, -1, 1.5])('refuses a limit of %s', (limit) => {
    expect(() => new RecordBudget(limit)).toThrow(/positive integer/);
  });
});
