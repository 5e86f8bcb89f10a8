import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Checkpoints a WAL-mode SQLite warehouse from a thread of its own.
 *
 * SQLite copies the write-ahead log back into the database file (and fsyncs it) inside the
 * commit that crosses `wal_autocheckpoint`. better-sqlite3 runs that commit on the main
 * thread, where it stalled HTTP, parsing and normalization of every stream: about a tenth of
 * a list sync's time. A second connection on a worker thread runs passive checkpoints, which
 * never block the writer, so that copy happens on the other core. No rows cross threads.
 *
 * The main connection keeps a (larger) auto-checkpoint of its own, so the log stays bounded
 * even if this thread falls behind or could not start.
 */

/** Frames after which the main connection checkpoints by itself (the thread normally keeps it far below). */
export const FALLBACK_AUTOCHECKPOINT = 10_000;

// Sent as source text so that the same code runs from the TypeScript sources (vitest) and
// from dist/ without a separate entry file.
// A checkpoint that fails (the file busy past the timeout) is left to the next tick, and a
// thread that cannot open the file just ends: the main connection's auto-checkpoint remains.
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
try {
  db = new Database(workerData.file);
  db.pragma('busy_timeout = 1000');
} catch {
  process.exit(0);
}
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {}
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'close') {
    clearInterval(timer);
    db.close();
    parentPort.postMessage('closed');
    parentPort.close();
  }
});
`;

export class SqliteCheckpointer {
  private closed = false;
  /** Settles when the thread has ended, however: a thread that could not open the file ends at once. */
  private readonly exited: Promise<void>;

  private constructor(private readonly worker: Worker) {
    // A failed checkpointer only costs speed; it must not take the process down.
    worker.on('error', () => undefined);
    this.exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.unref();
  }

  static start(file: string, intervalMs = 200): SqliteCheckpointer {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    return new SqliteCheckpointer(new Worker(SOURCE, { eval: true, workerData: { driver, file, intervalMs } }));
  }

  /** Stops the thread and closes its connection (before the main connection closes). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const answered = new Promise<void>((resolve) => this.worker.once('message', () => resolve()));
    this.worker.postMessage('close');
    // The bound is a ref'd timer: waiting on an unref'd one for a thread that had already ended
    // left nothing in the event loop, and the CLI died with Node's exit code 13 (unsettled await).
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([answered, this.exited, new Promise<void>((r) => (bound = setTimeout(r, 2_000)))]);
    clearTimeout(bound);
    await this.worker.terminate();
  }
}
