import pLimit from 'p-limit';
import { describe, expect, it } from 'vitest';
import { runAll } from '../../src/extractors/settle.js';

describe('runAll', () => {
  it('returns every result in order', async () => {
    expect(
      await runAll(
        pLimit(2),
        [1, 2, 3].map((n) => () => Promise.resolve(n * 10)),
      ),
    ).toEqual([10, 20, 30]);
  });

  it('after a failure starts nothing new, waits for what is in flight, then throws the first error', async () => {
    const started: number[] = [];
    const finished: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tasks = [0, 1, 2, 3, 4, 5].map((n) => async () => {
      started.push(n);
      if (n === 0) throw new Error('first');
      if (n === 1) {
        await gate;
        finished.push(n);
        return n;
      }
      finished.push(n);
      return n;
    });
    const run = runAll(pLimit(2), tasks);
    let settled = false;
    void run.catch(() => undefined).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 10));
    // Task 1 is still in flight, so runAll has not returned yet.
    expect(settled).toBe(false);
    release();
    await expect(run).rejects.toThrow('first');
    expect(finished).toEqual([1]);
    expect(started.filter((n) => n > 1)).toEqual([]);
  });
});
