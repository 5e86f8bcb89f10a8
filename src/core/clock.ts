/**
 * Time is injected everywhere (limiters, token expiry, schedules, backoff) so that
 * tests drive it with FakeClock instead of sleeping.
 */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls fn after ms milliseconds of this clock's time. */
  setTimeout(fn: () => void, ms: number): Timer;
  /** Resolves after ms; rejects with the signal's reason if it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}

function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      timer.cancel();
      reject(abortReason(signal!));
    };
    const timer = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    // Not unref'd: a run waiting on a backoff or a rate-limit slot has nothing else keeping
    // the process alive. The CLI exits explicitly when its command is done.
    const handle = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(handle) };
  },
  sleep(ms, signal) {
    return sleepOn(systemClock, ms, signal);
  },
};

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that only moves when told. advance() fires due timers in time order and
 * lets promise continuations run between them, so code awaiting sleep() makes progress.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private pending: Pending[] = [];

  constructor(start: number | Date = Date.UTC(2026, 0, 1)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const entry: Pending = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.pending.push(entry);
    return { cancel: () => void (entry.cancelled = true) };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** Number of timers still waiting. */
  get pendingTimers(): number {
    return this.pending.filter((p) => !p.cancelled).length;
  }

  /** Moves time forward by ms, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await flushMicrotasks();
    for (;;) {
      this.pending = this.pending.filter((p) => !p.cancelled);
      this.pending.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.pending[0];
      if (!next || next.at > target) break;
      this.pending.shift();
      this.current = Math.max(this.current, next.at);
      next.fn();
      await flushMicrotasks();
    }
    this.current = target;
    await flushMicrotasks();
  }

  /** Moves time to the given instant. */
  async advanceTo(at: number | Date): Promise<void> {
    const t = typeof at === 'number' ? at : at.getTime();
    await this.advance(Math.max(0, t - this.current));
  }
}

/** Lets queued promise callbacks (and the macrotask queue, once) run. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
  await new Promise<void>((resolve) => setImmediate(resolve));
  for (let i = 0; i < 10; i++) await Promise.resolve();
}
