import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Keeps the JavaScript heap near a budget (`sync.heap_budget_mb`) by asking for a full
 * collection when it grows past it.
 *
 * Why: a sync makes garbage fast (every response body, every parsed page), and V8 sizes its
 * first collections from the machine's memory, not from what the process keeps: on a 24 GB
 * machine the heap grew to 140-160 MB while under 60 MB of it was alive, and the whole-catalog
 * run peaked at 290-360 MB of RSS (docs/benchmarks.md, "Memory"). `--max-old-space-size` would
 * bound it, but it is a command-line flag (`node bin/svcsync.js` cannot pass it) and a hard
 * limit that crashes the process when reached; this is neither. What the process keeps alive is
 * bounded separately, by the cap on records in flight (src/extractors/record-budget.ts).
 *
 * The decision is `check()`, a function of the heap it is shown; the collector and the
 * reading are injected so tests drive it without a real heap.
 */
/** Forced collections take at most one part in PACE of the time. */
const PACE = 20;

export class HeapBudget {
  private threshold: number;
  private collections = 0;
  private notBefore = -Infinity;

  constructor(
    readonly budgetBytes: number,
    private readonly collect: () => void,
    private readonly used: () => number = () => getHeapStatistics().used_heap_size,
    /** Milliseconds, monotonic; injected so tests pace it with fake time. */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.threshold = budgetBytes;
  }

  /** Collects when the heap is past the threshold and the pace allows; returns whether it did. */
  check(): boolean {
    const started = this.now();
    if (started < this.notBefore || this.used() <= this.threshold) return false;
    this.collect();
    const ended = this.now();
    this.collections++;
    // When most of the heap is alive (a legitimately large working set), collecting again at the
    // same mark would run a full collection at every check: wait for half as much again.
    this.threshold = Math.max(this.budgetBytes, this.used() * 1.5);
    // A forced collection stops everything, where V8's own works mostly beside the program: keep
    // them to at most 1/PACE of the time (measured: unpaced, a daemon's first syncs of 1,000
    // organizations took 55-59 s instead of 15).
    this.notBefore = ended + (ended - started) * (PACE - 1);
    return true;
  }

  /** Full collections it asked for. */
  get count(): number {
    return this.collections;
  }

  /** Checks every `intervalMs` until the returned function is called; never keeps the process alive. */
  watch(intervalMs = 200): () => void {
    const timer = setInterval(() => this.check(), intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}

/**
 * The full collector, as `gc()` from `--expose-gc`, made available at run time (as
 * jest-leak-detector does): null where the engine refuses, and then no budget applies.
 */
export function fullCollector(): (() => void) | null {
  const existing = (globalThis as { gc?: unknown }).gc;
  if (typeof existing === 'function') return existing as () => void;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    return null;
  }
}

/** Starts watching the heap against `budgetMb` (0: off); returns how to stop. */
export function watchHeap(budgetMb: number): { budget: HeapBudget | null; stop: () => void } {
  const collect = budgetMb > 0 ? fullCollector() : null;
  if (!collect) return { budget: null, stop: () => undefined };
  const budget = new HeapBudget(budgetMb * 1024 * 1024, collect);
  return { budget, stop: budget.watch() };
}
