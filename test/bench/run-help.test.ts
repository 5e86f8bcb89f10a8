import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The benchmark driver as built (npm run build compiles bench/ into dist/bench/).
const driver = join(process.cwd(), 'dist', 'bench', 'run.js');

describe('bench/run.ts command line', () => {
  it('prints its help text and exits 0 on --help, without starting any scenario', () => {
    expect(existsSync(driver)).toBe(true);
    const r = spawnSync(process.execPath, [driver, '--help'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: npm run bench -- \[options\]/);
    for (const option of ['--quick', '--only', '--repeat', '--no-bare', '--write-docs', '--http-requests', '--per-page', '--help'])
      expect(r.stdout).toContain(option);
    expect(r.stdout).toContain('alternate in pairs');
    expect(r.stdout).toContain('http-client');
    expect(r.stdout).not.toContain('svcsync benchmark:');
  });

  it('names an unknown option and points to --help', () => {
    const r = spawnSync(process.execPath, [driver, '--bogus'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('unknown option --bogus');
    expect(r.stderr).toContain('--help');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
