import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createProgress } from '../../src/cli/progress.js';
import { createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';

/** The escape that starts each of cli-progress's cursor moves and erasures. */
const ESC = String.fromCharCode(27);

/**
 * A terminal as cli-progress sees one (a TTY of 120 columns) that keeps the screen it was drawn
 * into: the cursor moves and erasures cli-progress sends are applied, so a test reads what a
 * user would see, not the bytes (cli-progress redraws only the lines that changed).
 */
function fakeTerminal(): { stream: NodeJS.WritableStream; screen: () => string[] } {
  const lines: string[] = [''];
  let row = 0;
  let col = 0;
  const put = (ch: string): void => {
    const line = (lines[row] ?? '').padEnd(col);
    lines[row] = line.slice(0, col) + ch + line.slice(col + 1);
    col++;
  };
  const apply = (text: string): void => {
    // ESC [ params letter: column (G), up (A), down (B), erase line (K), erase below (J), modes (h, l).
    const pattern = new RegExp(`${ESC}\\[([?\\d;]*)([A-Za-z])|\\n|[^${ESC}\\n]`, 'g');
    for (const [token, params, command] of text.matchAll(pattern)) {
      if (token === '\n') {
        row++;
        col = 0;
        lines[row] ??= '';
      } else if (command === undefined) put(token);
      else if (command === 'G') col = Number(params || 1) - 1;
      else if (command === 'A') row = Math.max(0, row - Number(params || 1));
      else if (command === 'B') row += Number(params || 1);
      else if (command === 'K') lines[row] = (lines[row] ?? '').slice(0, col);
      else if (command === 'J') {
        lines[row] = (lines[row] ?? '').slice(0, col);
        lines.length = row + 1;
      }
    }
  };
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      apply(chunk.toString());
      done();
    },
  });
  Object.assign(stream, { isTTY: true, columns: 120 });
  return { stream, screen: () => lines.map((l) => l.trimEnd()).filter((l) => l !== '') };
}

const logger = createLogger({ level: 'silent', secrets: new SecretRegistry() });

describe('progress on a terminal', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.UTC(2026, 10, 20, 10, 0, 0) });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('counts down an organization held back, second by second, and ends at 0 s', () => {
    const terminal = fakeTerminal();
    const progress = createProgress(logger, true, terminal.stream);
    // Half a second past a whole number: the count rounds up, so it never shows 0 while time is left.
    progress.waiting?.({ connection: 'c', organizationId: '700', reason: 'lease held', until: Date.now() + 2_500 });
    vi.advanceTimersByTime(100);
    expect(terminal.screen()).toEqual([expect.stringMatching(/^ 700 waiting +\| lease held: 3 s left$/)]);
    vi.advanceTimersByTime(1_000);
    expect(terminal.screen()).toEqual([expect.stringMatching(/lease held: 2 s left$/)]);
    vi.advanceTimersByTime(1_000);
    expect(terminal.screen()).toEqual([expect.stringMatching(/lease held: 1 s left$/)]);
    vi.advanceTimersByTime(1_000);
    expect(terminal.screen()).toEqual([expect.stringMatching(/lease held: 0 s left$/)]);
    vi.advanceTimersByTime(5_000);
    expect(terminal.screen()).toEqual([expect.stringMatching(/lease held: 0 s left$/)]);

    // The organization's streams take the line once the wait is over.
    progress.streamStarted({ connection: 'c', organizationId: '700', stream: 'books.invoices', kind: 'incremental' });
    vi.advanceTimersByTime(200);
    expect(terminal.screen()).toEqual([expect.stringMatching(/^ 700 books\.invoices +\| page 0 \| 0 records/)]);
    progress.stop();
  });

  it('shows each stream in flight with its page, records and the requests left today', () => {
    const terminal = fakeTerminal();
    const progress = createProgress(logger, true, terminal.stream);
    const key = { connection: 'c', organizationId: '700', stream: 'inventory.contacts' };
    progress.streamStarted({ ...key, kind: 'incremental' });
    progress.page({ ...key, page: 3, records: 600, written: 12, requestsLeftToday: 880 });
    vi.advanceTimersByTime(200);
    expect(terminal.screen()).toEqual([
      expect.stringMatching(/^ 700 inventory\.contacts +\| page 3 \| 600 records, 12 written \| 880 requests left today$/),
    ]);
    progress.stop();
  });
});
