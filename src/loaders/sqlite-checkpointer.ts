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
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
try {
  db = new Database(workerData.file);
  db.pragma('busy_timeout = 1000');
} catch (error) {
  parentPort.postMessage({ type: 'failed', message: String(error && error.message || error) });
  process.exit(0);
}
const tick = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort.postMessage({ type: 'failed', message: String(error && error.message || error) });
  }
};
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'close') {
    clearInterval(timer);
    db.close();
    parentPort.postMessage({ type: 'closed' });
    parentPort.close();
  }
});
parentPort.postMessage({ type: 'ready' });
`;

export class SqliteCheckpointer {
  private closed = false;
  /** The last error the thread reported, if any (it keeps trying). */
  lastError: string | null = null;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: { type: string; message?: string }) => {
      if (m.type === 'failed') this.lastError = m.message ?? 'unknown error';
    });
    // A failed checkpointer only costs speed: the main connection's auto-checkpoint remains.
    worker.on('error', (e) => (this.lastError = e.message));
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
    const done = new Promise<void>((resolve) => {
      const finish = (): void => resolve();
      this.worker.on('message', (m: { type: string }) => m.type === 'closed' && finish());
      this.worker.once('exit', finish);
      this.worker.once('error', finish);
    });
    this.worker.ref();
    this.worker.postMessage('close');
    await Promise.race([done, new Promise<void>((r) => setTimeout(r, 2_000).unref())]);
    await this.worker.terminate();
  }
}
