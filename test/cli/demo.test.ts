import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli-process.js';

/** `2.5 s`, `850 ms`, `2 min 3 s` (the summary's durations) in milliseconds. */
function millis(text: string): number {
  const m = /^(?:(\d+) min (\d+) s|([\d.]+) s|(\d+) ms)$/.exec(text);
  if (!m) throw new Error(`not a duration: ${text}`);
  if (m[1] !== undefined) return (Number(m[1]) * 60 + Number(m[2])) * 1000;
  return m[3] !== undefined ? Number(m[3]) * 1000 : Number(m[4]);
}

/**
 * The demo runs svcsync on the sandbox's clock, 60 times faster than the wall's and starting on
 * a fixed day. What it prints a user is in the user's time: how long the run took on the wall
 * clock, and the quota reset as the wall-clock instant it comes at.
 */
describe('svcsync demo tells time on the wall clock', () => {
  it("the run's duration is what the user waited, and the quota resets ahead, within the sandbox's day", async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'svcsync-demo-')), 'demo.db');
    const started = Date.now();
    const r = await runCli(['demo', '--db', db, '--scale', '2'], { env: { SVCSYNC_LOG_LEVEL: 'error' } });
    const waited = Date.now() - started;
    expect(r.code, r.stderr).toBe(0);
    const header = /^svcsync demo — run \S+, (.+?), \d+ API requests$/m.exec(r.stdout);
    expect(header, r.stdout.slice(0, 500)).not.toBeNull();
    expect(millis(header![1]!)).toBeLessThanOrEqual(waited);
    const resets = [...r.stdout.matchAll(/, resets (\S+)$/gm)].map((m) => Date.parse(m[1]!));
    expect(resets.length).toBeGreaterThan(0);
    // A sandbox day (24 h) lasts 24 minutes of the wall's; the demo starts it at 08:00.
    for (const at of resets) {
      expect(at).toBeGreaterThan(started);
      expect(at).toBeLessThan(Date.now() + 24 * 60_000);
    }
    expect(r.stdout).toContain("The sandbox's clock runs 60× faster than yours");
  }, 60_000);
});
