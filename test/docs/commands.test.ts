import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { FakeClock } from '../../src/core/clock.js';
import type { DaemonMetrics } from '../../src/scheduler/surface/metrics.js';
import { DEFAULT_HOOK_SETTINGS, parseHookUrl, type HookResult } from '../../src/scheduler/surface/hooks.js';
import { serveHttp, type HttpServer, type HttpTarget } from '../../src/scheduler/surface/http-server.js';
import { isInvocation, optionalParts, problems, shellWords, STREAMS, withoutComment } from './cli-check.js';
import { documentPaths, fencedBlocks, readDocument } from './markdown.js';

const DOCS = documentPaths();
const FAMILIES = new Set(CATALOG.map((s) => s.family));
const SHELL_BLOCKS = new Set(['sh', 'bash', 'shell', 'console', 'cron', 'crontab', 'ini', 'systemd', '']);

interface DocumentedCommand {
  where: string;
  words: string[];
}

/** Every `svcsync ...` or `node bin/svcsync.js ...` invocation in the documents' fenced shell blocks. */
function documentedCommands(): DocumentedCommand[] {
  const out: DocumentedCommand[] = [];
  for (const doc of DOCS) {
    for (const block of fencedBlocks(readDocument(doc))) {
      if (!SHELL_BLOCKS.has(block.lang)) continue;
      // Join continued lines, keeping the first line's number.
      const lines: { line: number; text: string }[] = [];
      block.lines.forEach((text, i) => {
        const last = lines[lines.length - 1];
        if (last && last.text.endsWith('\\')) last.text = `${last.text.slice(0, -1)} ${text}`;
        else lines.push({ line: block.line + i, text });
      });
      for (const { line, text: raw } of lines) {
        const text = withoutComment(raw);
        // A command may follow `cd dir &&`, `ExecStart=`, a cron schedule or `$ `.
        for (const m of text.matchAll(
          /(?:^|[\s=&;(])(?:(?:\S*\/)?node\s+(?:\S*\/)?bin\/svcsync\.js|(?:\S*\/)?svcsync)(?=\s|$)(?=(.*)$)/g,
        )) {
          // Optional parts written `[--flag value]` are checked like the rest.
          const words = shellWords(optionalParts(m[1] ?? ''));
          if (isInvocation(words)) out.push({ where: `${doc}:${line}`, words });
        }
      }
    }
    // Inline: `svcsync sync --reconcile` in a sentence or a table.
    readDocument(doc)
      .split('\n')
      .forEach((text, index) => {
        for (const m of text.matchAll(/`(?:node (?:\S*\/)?bin\/svcsync\.js|svcsync)((?: [^`]*)?)`/g)) {
          const code = optionalParts((m[1] ?? '').replace(/\\\|/g, ' '));
          out.push({ where: `${doc}:${index + 1}`, words: shellWords(code) });
        }
      });
  }
  return out;
}

describe('the commands the documents show', () => {
  const commands = documentedCommands();

  it('are found (README, daemon, sandbox, scale-out)', () => {
    const files = new Set(commands.map((c) => c.where.split(':')[0]));
    expect(commands.length).toBeGreaterThan(20);
    for (const doc of ['README.md', 'docs/daemon.md', 'docs/sandbox.md', 'docs/scale-out.md']) expect(files).toContain(doc);
  });

  it('name subcommands and options the command line has, and streams the catalog has', () => {
    const found = commands.flatMap((c) => problems(c.words).map((p) => `${c.where}: ${p} (svcsync ${c.words.join(' ')})`));
    expect(found).toEqual([]);
  });

  it('reject what the command line does not have (the check itself)', () => {
    expect(problems(['sync', '--stream', 'books.invoices'])).toEqual(['no stream books.invoices in the catalog']);
    expect(problems(['sync', '--since', '2026-01-01'])).toEqual(['sync has no option --since']);
    expect(problems(['sandbox', 'mutate', '--modify', '5%'])).toEqual([]);
    expect(problems(['auth', 'refresh'])).toEqual(['auth has no subcommand refresh']);
  });
});

describe('the stream names the documents show', () => {
  it('are streams of the catalog (family.stream)', () => {
    const found: string[] = [];
    for (const doc of DOCS) {
      readDocument(doc)
        .split('\n')
        .forEach((line, index) => {
          for (const m of line.matchAll(/(?<![\w/.-])(books|inventory|invoice|billing)\.([a-z_]+)\b(?!\.|\/|\(|-)/g)) {
            const name = `${m[1]}.${m[2]}`;
            if (['ts', 'js', 'md', 'yaml', 'json'].includes(m[2] ?? '')) continue;
            if (!STREAMS.has(name)) found.push(`${doc}:${index + 1} ${name}`);
          }
        });
    }
    expect(found).toEqual([]);
  });
});

const SECRET = 'docs-secret-0123456789';
/** Where the documents run the daemon: its default port on the loopback, and the example host behind a proxy. */
const DAEMON_HOST = /https?:\/\/(?:127\.0\.0\.1|localhost):9464(\/[^\s`'")\];]*)?|https?:\/\/sync\.example\.com(\/[^\s`'")\]]*)?/g;
const ROUTE_DOCS = ['docs/daemon.md', 'docs/scale-out.md'];
const DAEMON_PATH =
  /(?:https?:\/\/[\w.-]+(?::\d+)?)?(\/(?:hooks|status\.json|metrics|healthz|livez)(?:\/[^\s`'")\]]*)?(?:\?[^\s`'")\]]*)?)(?=[\s`'"),.:;\]]|$)/g;

/** The daemon URLs the documents show, with placeholders filled in. */
function documentedUrls(): { where: string; path: string }[] {
  const out: { where: string; path: string }[] = [];
  for (const doc of DOCS) {
    readDocument(doc)
      .split('\n')
      .forEach((line, index) => {
        const paths = [
          ...[...line.matchAll(DAEMON_PATH)].map((m) => m[1] ?? ''),
          // Any path on the daemon's documented addresses, and the routes the daemon's pages list.
          ...[...line.matchAll(DAEMON_HOST)].map((m) => m[1] || m[2] || '/'),
          ...(ROUTE_DOCS.includes(doc) ? [...line.matchAll(/`(?:GET|POST|PUT|DELETE|HEAD) (\/[^`\s]*)`/g)].map((m) => m[1] ?? '') : []),
        ];
        for (const raw of new Set(paths)) {
          const path = raw.replace(/[.,:;]+$/, '');
          if (path.includes('...') || path === '/hooks/') continue;
          out.push({ where: `${doc}:${index + 1}`, path });
        }
      });
  }
  return out;
}

/** A documented URL with its placeholders (`{connection}`, `C`, `ID`, `[/{stream}]`) filled in. */
function concrete(path: string): string {
  return path
    .replace(/\[\/\{stream\}\]/g, '/sales_orders')
    .replace(/\{family\}/g, 'inventory')
    .replace(/\{stream\}/g, 'sales_orders')
    .replace(/\{[a-z_]+\}/g, 'x')
    .replace(/=(?:&|$)/g, (m) => `=x${m.slice(1)}`);
}

describe('the daemon URLs the documents show', () => {
  let server: HttpServer;
  beforeAll(async () => {
    const metrics = { registry: { metrics: () => Promise.resolve(''), contentType: 'text/plain' } } as unknown as DaemonMetrics;
    const target: HttpTarget = {
      metrics,
      health: () => Promise.resolve({ healthy: true, body: {} }),
      fleetHealth: () => Promise.resolve({ healthy: true, body: {} }),
      status: () => Promise.resolve({}),
      page: () => Promise.resolve('<html></html>'),
      hooks: {
        settings: DEFAULT_HOOK_SETTINGS,
        secretFor: () => SECRET,
        receive: (): Promise<HookResult> => Promise.resolve({ kind: 'accepted', runAt: 0, coalesced: false }),
      },
    };
    server = await serveHttp(target, { port: 0, clock: new FakeClock(0) });
  });
  afterAll(() => server.close());

  it('are routes the daemon serves', async () => {
    const urls = documentedUrls();
    expect(urls.map((u) => u.path)).toContain('/status.json');
    const failed: string[] = [];
    for (const { where, path } of urls) {
      const url = concrete(path);
      const hook = url.startsWith('/hooks/');
      const res = await fetch(`${server.url}${url}`, {
        method: hook ? 'POST' : 'GET',
        headers: hook ? { 'x-svcsync-secret': SECRET } : {},
      });
      await res.arrayBuffer();
      if (res.status === 404 || res.status === 405) failed.push(`${where} ${path}: ${res.status}`);
    }
    expect(failed).toEqual([]);
  });

  it('name families and streams of the catalog in webhook paths and ?streams=', () => {
    const found: string[] = [];
    for (const { where, path } of documentedUrls().filter((u) => u.path.startsWith('/hooks/'))) {
      const target = parseHookUrl(new URL(concrete(path), 'http://svcsync.invalid'));
      if (!target) {
        found.push(`${where} ${path}: not a hook path`);
        continue;
      }
      if (!FAMILIES.has(target.family as never)) found.push(`${where} ${path}: no family ${target.family}`);
      for (const s of target.streams) {
        const name = s.includes('.') ? s : `${target.family}.${s}`;
        if (!STREAMS.has(name)) found.push(`${where} ${path}: no stream ${name}`);
      }
    }
    // Streams named beside a hook path, as `?streams=a,b` or a trailing `/stream`.
    for (const doc of DOCS) {
      readDocument(doc)
        .split('\n')
        .forEach((line, index) => {
          for (const m of line.matchAll(/\?streams?=([\w.,]+)/g)) {
            for (const s of (m[1] ?? '').split(',')) {
              if (!/^[a-z_]+(\.[a-z_]+)?$/.test(s)) continue;
              const known = s.includes('.') ? STREAMS.has(s) : CATALOG.some((c) => c.name === s);
              if (!known) found.push(`${doc}:${index + 1} ?streams= names ${s}, which no family has`);
            }
          }
        });
    }
    expect(found).toEqual([]);
  });
});
