import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../src/loaders/sqlite-checkpointer.js';

const BUILT = fileURLToPath(new URL('../../dist/src/loaders/sqlite-checkpointer.js', import.meta.url));

/** Runs `body` as an ES module in a fresh Node process (the built checkpointer imported as C). */
function inProcess(body: string): { status: number | null; stdout: string; stderr: string } {
  const source = `import { SqliteCheckpointer as C } from ${JSON.stringify(BUILT)};\n${body}`;
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', source], { encoding: 'utf8', timeout: 20_000 });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

describe('SqliteCheckpointer', () => {
  it('closes in a process with nothing else to do when its thread has already ended (it could not open the file)', () => {
    // Only a process whose event loop would otherwise be empty shows it: close() used to wait on an
    // unref'd timer for an exit that had already happened, and Node ended with exit code 13.
    const missing = join(mkdtempSync(join(tmpdir(), 'svcsync-ckpt-')), 'no-such-dir', 'w.db');
    const r = inProcess(
      `const c = C.start(${JSON.stringify(missing)});\n` +
        // Until its thread has ended (its private exit promise), polled on a timer that keeps the process up.
        `let ended = false;\nvoid c.exited.then(() => (ended = true));\n` +
        `while (!ended) await new Promise((r) => setTimeout(r, 10));\n` +
        `await c.close();\n` +
        `console.log('closed');`,
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('closed');
  });

  it('closes a running thread in a process with nothing else to do', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svcsync-ckpt-')), 'w.db');
    const r = inProcess(
      `const c = C.start(${JSON.stringify(file)}, 20);\n` +
        `await new Promise((r) => setTimeout(r, 300));\n` +
        `await c.close();\n` +
        `console.log('closed');`,
    );
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('closed');
  });

  it('close is idempotent in this process', async () => {
    const c = SqliteCheckpointer.start(join(mkdtempSync(join(tmpdir(), 'svcsync-ckpt-')), 'w.db'));
    await c.close();
    await expect(c.close()).resolves.toBeUndefined();
  });
});
