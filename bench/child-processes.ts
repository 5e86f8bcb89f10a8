/**
 * The benchmark's child processes, as the driver sees them: an answer awaited over IPC with a
 * bound, an exit awaited, a kill that tolerates a process already gone.
 */
import type { ChildProcess } from 'node:child_process';

/** The first message `accept` maps to a value; an error when the child exits first or `timeoutMs` passes. */
export function waitMessage<T>(child: ChildProcess, accept: (m: unknown) => T | undefined, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${what}: no answer within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    const onMessage = (m: unknown): void => {
      const v = accept(m);
      if (v !== undefined) {
        cleanup();
        resolvePromise(v);
      }
    };
    const onExit = (code: number | null, signal: string | null): void => {
      cleanup();
      reject(new Error(`${what}: process exited (${signal ?? code}) before answering`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

export function kill(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

export function exited(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => {
    const t = setTimeout(() => {
      kill(child);
      r();
    }, ms);
    child.once('exit', () => {
      clearTimeout(t);
      r();
    });
  });
}
