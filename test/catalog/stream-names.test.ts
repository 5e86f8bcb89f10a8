/**
 * Adding a stream fails fast (docs/design.md, "Adding a stream"). The catalog, the sandbox and
 * the test fixtures each name every stream, on purpose without sharing code: the sandbox is
 * written from the spec on its own, so a wrong catalog entry cannot hide behind it. This file
 * shares no logic with them either; it only compares their `family.stream` name sets.
 */
import { describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { ROUTES } from '../../sandbox/routes.js';
import { STREAMS } from '../../sandbox/stream-catalog.js';
import { TOP } from '../helpers/minimum.js';
import { ID_FIELDS } from '../helpers/stream-ids.js';
import { RECORDS_BY_STREAM } from '../normalize/fixtures.js';

interface NameSet {
  /** Where the names come from, as a reader would look for it. */
  where: string;
  /** What to add there for a missing stream. */
  add: string;
  names: ReadonlySet<string>;
}

const catalogAll = new Set(CATALOG.map((s) => `${s.family}.${s.name}`));
const catalogPerOrganization = new Set(CATALOG.filter((s) => !s.organizationList).map((s) => `${s.family}.${s.name}`));

const CATALOG_SET: NameSet = {
  where: 'the catalog (src/catalog/streams/{family}.ts)',
  add: 'a StreamSpec entry',
  names: catalogAll,
};
const CATALOG_PER_ORGANIZATION: NameSet = {
  where: 'the catalog without its organization lists (src/catalog/streams/{family}.ts)',
  add: 'a StreamSpec entry',
  names: catalogPerOrganization,
};

const SANDBOX_ROUTES: NameSet = {
  where: 'the sandbox routes (sandbox/routes.ts, SPECS)',
  add: 'its list route (and its single-record route, if it has one)',
  names: new Set(ROUTES.map((r) => `${r.family}.${r.stream}`)),
};
const SANDBOX_STREAMS: NameSet = {
  where: 'the sandbox streams (sandbox/stream-catalog.ts, STREAMS)',
  add: 'a StreamDef written from the spec, listed in STREAMS, with its generator in sandbox/generators.ts',
  names: new Set(STREAMS.map((d) => `${d.family}.${d.stream}`)),
};
const NORMALIZER_FIXTURES: NameSet = {
  where: 'the normalizer fixtures (test/normalize/fixtures.ts, RECORDS_BY_STREAM)',
  add: 'a record shaped as the spec shows it',
  names: new Set(Object.keys(RECORDS_BY_STREAM)),
};
const E2E_ID_FIELDS: NameSet = {
  where: 'the end-to-end id fields (test/helpers/stream-ids.ts, ID_FIELDS)',
  add: 'the stream\u2019s id field',
  names: new Set(Object.entries(ID_FIELDS).flatMap(([family, streams]) => Object.keys(streams).map((s) => `${family}.${s}`))),
};
const FIRST_SYNC_REQUESTS: NameSet = {
  where: 'the first-sync request table (test/helpers/minimum.ts, TOP)',
  add: 'the stream as a top-level list, or as a child of its parent',
  names: new Set(
    Object.entries(TOP).flatMap(([family, lists]) =>
      Object.entries(lists).flatMap(([stream, shape]) => [
        `${family}.${stream}`,
        ...(shape.children ?? []).map((c) => `${family}.${c.stream}`),
      ]),
    ),
  ),
};

/** Empty when the two sets are equal; otherwise which names each lacks and what to do. */
function difference(expected: NameSet, actual: NameSet): string {
  const missing = [...expected.names].filter((n) => !actual.names.has(n)).sort();
  const extra = [...actual.names].filter((n) => !expected.names.has(n)).sort();
  const lines: string[] = [];
  if (missing.length > 0) {
    lines.push(`${actual.where} lacks ${missing.join(', ')}, which ${expected.where} has: add ${actual.add} for each.`);
  }
  if (extra.length > 0) {
    lines.push(
      `${expected.where} lacks ${extra.join(', ')}, which ${actual.where} has: ` +
        `add ${expected.add} for each, or remove them from ${actual.where}.`,
    );
  }
  if (lines.length > 0) lines.push('See docs/design.md, "Adding a stream", for every place a stream is named.');
  return lines.join('\n');
}

describe('every place that names the streams names the same ones', () => {
  it.each(
    [
      { other: SANDBOX_ROUTES, catalog: CATALOG_SET },
      { other: SANDBOX_STREAMS, catalog: CATALOG_PER_ORGANIZATION },
      { other: NORMALIZER_FIXTURES, catalog: CATALOG_SET },
      { other: E2E_ID_FIELDS, catalog: CATALOG_SET },
      { other: FIRST_SYNC_REQUESTS, catalog: CATALOG_PER_ORGANIZATION },
    ].map((c) => ({ ...c, name: c.other.where })),
  )('$name', ({ other, catalog }) => {
    expect(difference(catalog, other)).toBe('');
  });

  it('compares real name sets, not empty ones', () => {
    expect(catalogPerOrganization.size).toBeGreaterThan(0);
    expect(catalogPerOrganization.size).toBeLessThan(catalogAll.size);
  });
});

describe('the failure message', () => {
  const set = (where: string, add: string, names: string[]): NameSet => ({ where, add, names: new Set(names) });

  it('says which names are missing where, and what to add', () => {
    const catalog = set('the catalog', 'a StreamSpec entry', ['books.users', 'books.webhooks', 'billing.plans']);
    const sandbox = set('the sandbox', 'a StreamDef', ['books.users', 'books.ghosts']);
    expect(difference(catalog, sandbox)).toBe(
      [
        'the sandbox lacks billing.plans, books.webhooks, which the catalog has: add a StreamDef for each.',
        'the catalog lacks books.ghosts, which the sandbox has: add a StreamSpec entry for each, or remove them from the sandbox.',
        'See docs/design.md, "Adding a stream", for every place a stream is named.',
      ].join('\n'),
    );
  });

  it('is empty when the sets agree, whatever their order', () => {
    expect(difference(set('a', 'x', ['b.y', 'a.x']), set('b', 'y', ['a.x', 'b.y']))).toBe('');
  });
});
