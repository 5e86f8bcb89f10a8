/**
 * The sandbox's own clock: start + real elapsed × timeScale + manual advances. Windows,
 * the quota day, token expiry and mutation timestamps all read it, so a test can live
 * through a "day" in seconds or jump over one with advance().
 */
export interface SandboxTimer {
  cancel(): void;
}

interface PendingTimer {
  due: number;
  fn: () => void;
  handle: ReturnType<typeof setTimeout> | undefined;
  done: boolean;
}

export class SandboxClock {
  private readonly realStart = performance.now();
  private advanced = 0;
  private readonly pending = new Set<PendingTimer>();

  constructor(
    private readonly startMs: number,
    private readonly timeScale: number,
  ) {}

  now(): number {
    return Math.floor(this.startMs + (performance.now() - this.realStart) * this.timeScale + this.advanced);
  }

  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('advanceClock needs a non-negative number of milliseconds');
    this.advanced += ms;
    // Timers waiting for sandbox time must notice the jump, not wait out their real delay.
    for (const timer of [...this.pending]) this.arm(timer);
  }

  setTimeout(fn: () => void, ms: number): SandboxTimer {
    const timer: PendingTimer = { due: this.now() + Math.max(0, ms), fn, handle: undefined, done: false };
    this.pending.add(timer);
    this.arm(timer);
    return {
      cancel: () => {
        timer.done = true;
        if (timer.handle) clearTimeout(timer.handle);
        this.pending.delete(timer);
      },
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        timer.cancel();
        reject(signal?.reason ?? new Error('aborted'));
      };
      const timer = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Cancels every pending timer (on stop), so nothing fires into a closed sandbox. */
  dispose(): void {
    for (const timer of this.pending) {
      timer.done = true;
      if (timer.handle) clearTimeout(timer.handle);
    }
    this.pending.clear();
  }

  private arm(timer: PendingTimer): void {
    if (timer.done) return;
    if (timer.handle) clearTimeout(timer.handle);
    const remaining = timer.due - this.now();
    if (remaining <= 0) {
      timer.done = true;
      this.pending.delete(timer);
      timer.handle = undefined;
      timer.fn();
      return;
    }
    timer.handle = setTimeout(() => this.arm(timer), Math.max(1, Math.ceil(remaining / this.timeScale)));
  }
}
