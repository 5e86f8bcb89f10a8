import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The benchmark driver as built (npm run build compiles bench/ into dist/bench/).
const driver = join(process.cwd(), 'dist', 'bench', 'run.js');

describe('npm run bench -- --only http-client', () => {
  it('--only http-client prints the table of client CPU a request, fetch against node:http, for both answer sizes', () => {
    const args = [driver, '--only', 'http-client', '--http-requests', '40', '--repeat', '2'];
    const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    // Each run is printed as it comes, in the order it ran: fetch first, then node:http first.
    expect(r.stdout).toMatch(/run 1, 35 KB: fetch \d+ µs, node:http \d+ µs/);
    expect(r.stdout).toMatch(/run 2, 200 KB: node:http \d+ µs, fetch \d+ µs/);
    expect(r.stdout).toContain('Command: `npm run bench -- --only http-client --http-requests 40 --repeat 2`');
    expect(r.stdout).toContain('for 40 GETs of the same answer, 10 in flight');
    expect(r.stdout).toContain('median of 2 runs');
    const rows = r.stdout.split('\n').filter((l) => /^\| \d+ KB \(/.test(l));
    expect(rows.map((l) => l.split(' KB')[0])).toEqual(['| 35', '| 200']);
    for (const row of rows) {
      const [answer, fetchCell, httpCell, ratio] = row.slice(2, -2).split(' | ');
      expect(Number(answer!.match(/\(([\d,]+) bytes\)/)![1]!.replace(/,/g, ''))).toBeGreaterThan(30_000);
      // A median, then both runs' figures in brackets.
      for (const cell of [fetchCell!, httpCell!]) expect(cell).toMatch(/^[\d,]+ µs \([\d,]+, [\d,]+\)$/);
      expect(Number(ratio)).toBeGreaterThan(0);
    }
    // No sync scenario ran, so no targets are judged.
    expect(r.stdout).not.toContain('Targets');
  });
});
