import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository's root, with a trailing slash. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The documents users read: README.md and docs/*.md, as paths relative to the root. */
export function documentPaths(): string[] {
  const docs = readdirSync(`${ROOT}docs`)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

export function readDocument(path: string): string {
  return readFileSync(`${ROOT}${path}`, 'utf8');
}

export interface FencedBlock {
  lang: string;
  /** Line number (1-based) of the block's first line of content. */
  line: number;
  lines: string[];
}

/** Every fenced code block (``` or ~~~) with its info string's first word. */
export function fencedBlocks(text: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  let open: { fence: string; block: FencedBlock } | undefined;
  text.split('\n').forEach((raw, index) => {
    const line = raw.replace(/^\s+/, '');
    if (open) {
      if (line.startsWith(open.fence) && line.slice(open.fence.length).trim() === '') open = undefined;
      else open.block.lines.push(raw);
      return;
    }
    const fence = /^(`{3,}|~{3,})\s*([^\s`]*)/.exec(line);
    if (fence) {
      const block: FencedBlock = { lang: fence[2] ?? '', line: index + 2, lines: [] };
      blocks.push(block);
      open = { fence: fence[1] ?? '```', block };
    }
  });
  return blocks;
}

/** The text with fenced blocks and inline code blanked out (line numbers kept). */
export function prose(text: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/^\s+/, '');
    if (fence) {
      if (line.startsWith(fence) && line.slice(fence.length).trim() === '') fence = undefined;
      out.push('');
      continue;
    }
    const open = /^(`{3,}|~{3,})/.exec(line);
    if (open) {
      fence = open[1];
      out.push('');
      continue;
    }
    out.push(raw.replace(/(`+)(?:(?!\1).)+?\1/g, (m) => ' '.repeat(m.length)));
  }
  return out.join('\n');
}

/**
 * The anchors GitHub gives a document's headings (github-slugger: the heading's text lowercased,
 * punctuation dropped, spaces to hyphens, a repeated slug numbered -1, -2, ...), plus explicit
 * `<a id>`/`<a name>` anchors.
 */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseKeepingCode(text).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const plain = (heading[1] ?? '')
        .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
        .replace(/<[^>]+>/g, '')
        .replace(/[`*]/g, '');
      const base = slug(plain);
      const n = seen.get(base);
      out.add(n === undefined ? base : `${base}-${n}`);
      seen.set(base, (n ?? 0) + 1);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1] ?? '');
  }
  return out;
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

/** The text with fenced blocks blanked out but inline code kept (headings may hold code). */
function proseKeepingCode(text: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/^\s+/, '');
    if (fence) {
      if (line.startsWith(fence) && line.slice(fence.length).trim() === '') fence = undefined;
      out.push('');
      continue;
    }
    const open = /^(`{3,}|~{3,})/.exec(line);
    if (open) fence = open[1];
    out.push(open ? '' : raw);
  }
  return out.join('\n');
}

export interface Link {
  line: number;
  target: string;
}

/** Every inline link and image target outside code, and every HTML href/src. */
export function links(text: string): Link[] {
  const out: Link[] = [];
  prose(text)
    .split('\n')
    .forEach((line, index) => {
      for (const m of line.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
        out.push({ line: index + 1, target: m[1] ?? '' });
      }
      for (const m of line.matchAll(/\b(?:href|src)="([^"]*)"/g)) out.push({ line: index + 1, target: m[1] ?? '' });
      for (const m of line.matchAll(/<((?:https?|ftp|file):[^>\s]+)>/g)) out.push({ line: index + 1, target: m[1] ?? '' });
    });
  return out;
}
