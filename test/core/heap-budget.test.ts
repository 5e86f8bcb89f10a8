import { describe, expect, it } from 'vitest';
import { HeapBudget, fullCollector, watchHeap } from '../../src/core/heap-budget.js';

const MB = 1024 * 1024;
/** A clock that never moves: collections take no time, so pacing never holds a check back. */
const unpaced = (): (() => number) => () => 0;

/** A heap that is `live` MB alive plus whatever garbage was made since the last collection. */
function fakeHeap(live: number): { used: () => number; collect: () => void; make: (mb: number) => void; collections: () => number } {
  let garbage = 0;
  let collections = 0;
  return {
    used: () => (live + garbage) * MB,
    collect: () => {
      garbage = 0;
      collections++;
    },
    make: (mb) => void (garbage += mb),
    collections: () => collections,
  };
}

describe('HeapBudget', () => {
  it.each([
    // live MB, garbage MB made before the check, collects?
    [20, 50, false],
    [20, 76, false],
    [20, 77, true],
    [96, 1, true],
  ])('with %i MB alive and %i MB of garbage against 96 MB, collects: %s', (live, garbage, collects) => {
    const heap = fakeHeap(live);
    const budget = new HeapBudget(96 * MB, heap.collect, heap.used, unpaced());
    heap.make(garbage);
    expect(budget.check()).toBe(collects);
    expect(heap.collections()).toBe(collects ? 1 : 0);
  });

  it('does not collect at every check when most of the heap is alive: it waits for half as much again', () => {
    const heap = fakeHeap(90);
    const budget = new HeapBudget(96 * MB, heap.collect, heap.used, unpaced());
    heap.make(10);
    expect(budget.check()).toBe(true);
    // 90 MB alive: the next mark is 135 MB, not 96.
    heap.make(10);
    expect(budget.check()).toBe(false);
    heap.make(36);
    expect(budget.check()).toBe(true);
    expect(budget.count).toBe(2);
  });

  it('comes back down to the budget once the live set shrinks', () => {
    let live = 90;
    let garbage = 0;
    const budget = new HeapBudget(
      96 * MB,
      () => void (garbage = 0),
      () => (live + garbage) * MB,
      unpaced(),
    );
    garbage = 10;
    budget.check();
    live = 10;
    garbage = 130;
    expect(budget.check()).toBe(true);
    // After that collection 10 MB is alive: the mark is the budget again.
    garbage = 87;
    expect(budget.check()).toBe(true);
  });

  it('keeps forced collections to a twentieth of the time: after one that took 50 ms, none for the next 950 ms', () => {
    let t = 0;
    let garbage = 0;
    const budget = new HeapBudget(
      96 * MB,
      () => {
        t += 50;
        garbage = 0;
      },
      () => (20 + garbage) * MB,
      () => t,
    );
    garbage = 100;
    expect(budget.check()).toBe(true);
    garbage = 100;
    t += 900;
    expect(budget.check()).toBe(false);
    t += 50;
    expect(budget.check()).toBe(true);
    expect(budget.count).toBe(2);
  });

  it('the real collector is available at run time, and watching can be stopped', () => {
    const gc = fullCollector();
    expect(typeof gc).toBe('function');
    const watched = watchHeap(96);
    expect(watched.budget?.budgetBytes).toBe(96 * MB);
    watched.stop();
    expect(watchHeap(0).budget).toBeNull();
  });
});
