import { existsSync, statSync } from 'node:fs';
import { dirname, posix, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, documentPaths, links, prose, readDocument, ROOT } from './markdown.js';

const DOCS = documentPaths();

/** Phrases that narrate how the project was built rather than what svcsync does. */
const HISTORY = [
  /\bchanged this round\b/i,
  /\bthis round\b/i,
  /\bthe audit\b/i,
  /\baudit's run\b/i,
  /\bissues? \d+\b/i,
  /\bstop \d+\b/i,
  /\b(?:this|that|the (?:earlier|previous|next|last)|an earlier) session\b/i,
  /\b(?:earlier|previous|older) versions? of svcsync\b/i,
  /\bsvcsync used to\b/i,
  /\bknown problems\b/i,
  /\*\*fixed:/i,
];

/** Where a link points, relative to the root (`undefined` outside the repository), and its anchor. */
function resolveLink(from: string, target: string): { path: string | undefined; anchor: string | undefined } {
  const hash = target.indexOf('#');
  const file = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  if (file === '') return { path: from, anchor };
  const absolute = resolve(ROOT, dirname(from), decodeURIComponent(file));
  const inside = relative(ROOT, absolute);
  return { path: inside.startsWith('..') || posix.isAbsolute(inside) ? undefined : inside, anchor };
}

describe('the documents (README.md, docs/*.md)', () => {
  it('link only inside the repository', () => {
    const outside: string[] = [];
    for (const doc of DOCS) {
      for (const link of links(readDocument(doc))) {
        const external = /^[a-z][a-z0-9+.-]*:/i.test(link.target) || link.target.startsWith('//') || link.target.startsWith('/');
        if (external || resolveLink(doc, link.target).path === undefined) outside.push(`${doc}:${link.line} ${link.target}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('resolve every relative link and #anchor', () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      for (const link of links(readDocument(doc))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) continue;
        const { path, anchor } = resolveLink(doc, link.target);
        if (path === undefined) continue;
        if (!existsSync(`${ROOT}${path}`)) {
          broken.push(`${doc}:${link.line} ${link.target} (no such file)`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!path.endsWith('.md') || statSync(`${ROOT}${path}`).isDirectory()) {
          broken.push(`${doc}:${link.line} ${link.target} (an anchor into a file that is not markdown)`);
        } else if (!anchors(readDocument(path)).has(anchor)) {
          broken.push(`${doc}:${link.line} ${link.target} (no heading or anchor #${anchor} in ${path})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('cite the API through docs/api.md, never a document outside the repository', () => {
    const found: string[] = [];
    for (const doc of DOCS) {
      readDocument(doc)
        .split('\n')
        .forEach((line, index) => {
          if (/\.\.\/shared|spec\/api\.md/.test(line)) found.push(`${doc}:${index + 1} names a file outside the repository`);
        });
      // "spec 8", "spec 2.4": a citation of a section that a user cannot open.
      prose(readDocument(doc))
        .split('\n')
        .forEach((line, index) => {
          const m = /\bspec(?:'s)? (?:§ ?)?\d|§ ?\d+(?:\.\d+)?(?![\d\]])/.exec(line.replace(/\[§\d+(?:\.\d+)?\]\(api\.md#[^)]*\)/g, ''));
          if (m && doc !== 'docs/api.md') found.push(`${doc}:${index + 1} "${m[0]}" is not a link into docs/api.md`);
        });
    }
    expect(found).toEqual([]);
  });

  it("speak to users, never of the project's history", () => {
    const found: string[] = [];
    for (const doc of DOCS) {
      readDocument(doc)
        .split('\n')
        .forEach((line, index) => {
          for (const phrase of HISTORY) {
            const m = phrase.exec(line);
            if (m) found.push(`${doc}:${index + 1} "${m[0]}"`);
          }
        });
    }
    expect(found).toEqual([]);
  });

  it('give every section of docs/api.md a heading that carries its number', () => {
    const headings = [...anchors(readDocument('docs/api.md'))];
    for (const section of ['1', '2', '2.1', '2.5', '2.10', '2.11', '3', '4', '4.1', '4.12', '5', '5.4', '6', '7', '8', '9']) {
      const prefix = `${section.replace('.', '')}-`;
      expect(
        headings.filter((h) => h.startsWith(prefix)),
        `section ${section}`,
      ).toHaveLength(1);
    }
  });
});
