import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { problems, shellWords } from './cli-check.js';
import { documentPaths, fencedBlocks, readDocument, ROOT } from './markdown.js';

interface Unit {
  where: string;
  execStart: string[];
  environment: string[];
}

/** The systemd units the documents show: ini blocks with a [Service] section. */
function documentedUnits(): Unit[] {
  const units: Unit[] = [];
  for (const doc of documentPaths()) {
    for (const block of fencedBlocks(readDocument(doc))) {
      if (!block.lines.some((l) => l.trim() === '[Service]')) continue;
      const unit: Unit = { where: `${doc}:${block.line}`, execStart: [], environment: [] };
      for (const line of block.lines) {
        const m = /^\s*(ExecStart|Environment)\s*=\s*(.*)$/.exec(line);
        if (m?.[1] === 'ExecStart') unit.execStart.push(m[2] ?? '');
        // Environment=NAME=value, or several quoted assignments on one line.
        if (m?.[1] === 'Environment') unit.environment.push(...shellWords(m[2] ?? '').map((a) => a.slice(0, a.indexOf('='))));
      }
      units.push(unit);
    }
  }
  return units;
}

/** The svcsync arguments of an ExecStart line: after the installed command or `node .../bin/svcsync.js`. */
function svcsyncArguments(execStart: string): string[] | undefined {
  const words = shellWords(execStart.replace(/^[-@:+!]+/, ''));
  const bin = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  const at = words.findIndex((w, i) => (/\/?node$/.test(w) && words[i + 1]?.endsWith(bin.bin['svcsync'] ?? '')) || w.endsWith('/svcsync'));
  if (at < 0) return undefined;
  return words.slice(/\/?node$/.test(words[at]!) ? at + 2 : at + 1);
}

/** Every source file's text under a folder. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.isDirectory()) return sources(join(dir, e.name));
    return e.name.endsWith('.ts') ? [readFileSync(join(dir, e.name), 'utf8')] : [];
  });
}

/**
 * The environment variables svcsync reads: names in `process.env[...]`/`env[...]`, and the
 * string constants of the files that read the environment (`CONFIG_ENV = 'SVCSYNC_CONFIG'`);
 * and the ones the example configuration interpolates (`${SVC_CLIENT_ID}`).
 */
function environmentNames(): Set<string> {
  const names = new Set<string>();
  for (const text of sources(join(ROOT, 'src'))) {
    if (!/process\.env|\benv\[/.test(text)) continue;
    for (const m of text.matchAll(/['"]([A-Z][A-Z0-9]*_[A-Z0-9_]+)['"]/g)) names.add(m[1]!);
  }
  for (const m of readFileSync(join(ROOT, 'config/svcsync.example.yaml'), 'utf8').matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)) names.add(m[1]!);
  return names;
}

describe('the systemd units the documents show', () => {
  const units = documentedUnits();

  it('include the daemon and the worker for the installed command (docs/daemon.md)', () => {
    const commands = units
      .filter((u) => u.where.startsWith('docs/daemon.md'))
      .flatMap((u) => u.execStart)
      .map((e) => svcsyncArguments(e)?.[0]);
    expect(commands).toEqual(expect.arrayContaining(['daemon', 'worker']));
    expect(units.filter((u) => u.where.startsWith('docs/daemon.md')).flatMap((u) => u.execStart)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\/usr\/local\/bin\/svcsync daemon /),
        expect.stringMatching(/^\/usr\/local\/bin\/svcsync worker /),
      ]),
    );
  });

  it('start svcsync with subcommands and flags the command line has', () => {
    const found: string[] = [];
    for (const unit of units) {
      for (const line of unit.execStart) {
        const args = svcsyncArguments(line);
        if (args === undefined) found.push(`${unit.where}: ExecStart=${line} does not start svcsync`);
        else found.push(...problems(args).map((p) => `${unit.where}: ${p}`));
      }
    }
    expect(found).toEqual([]);
  });

  it('set only environment variables svcsync reads', () => {
    const known = environmentNames();
    expect(known).toContain('SVCSYNC_CONFIG');
    expect(known).toContain('SVCSYNC_WAREHOUSE');
    const unknown = units.flatMap((u) => u.environment.filter((n) => !known.has(n)).map((n) => `${u.where}: ${n}`));
    expect(unknown).toEqual([]);
  });

  it('the checks catch a wrong unit (the check itself)', () => {
    expect(problems(svcsyncArguments('/usr/local/bin/svcsync daemon --port 9464')!)).toEqual(['daemon has no option --port']);
    expect(svcsyncArguments('/usr/bin/node /srv/svcsync/bin/svcsync.js worker --http-port 946%i')).toEqual([
      'worker',
      '--http-port',
      '946%i',
    ]);
    expect(environmentNames().has('SVCSYNC_CONFIGFILE')).toBe(false);
  });
});
