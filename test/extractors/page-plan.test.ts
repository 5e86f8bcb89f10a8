import { describe, expect, it } from 'vitest';
import type { NormalizedRecord } from '../../src/normalize/normalize.js';
import { isNewOrChanged, pendingReason, planPage, type ListedRecord, type StoredRow } from '../../src/extractors/page-plan.js';
import type { PassKind } from '../../src/state/stream-state.js';

const rec = (id: string, hash: string): NormalizedRecord => ({
  table: 't',
  id,
  key: { id },
  changedAt: null,
  columns: [],
  row: {},
  hash,
  children: [],
  warnings: [],
  unknown: [],
});

// A page of three: "a" is new, "b" is unchanged, "c" changed since it was stored, "d" was marked deleted.
const page = [rec('a', 'h1'), rec('b', 'h2'), rec('c', 'h3-new'), rec('d', 'h4')];
const stored = new Map<string, StoredRow>([
  ['b', { hash: 'h2', deleted: false }],
  ['c', { hash: 'h3-old', deleted: false }],
  ['d', { hash: 'h4', deleted: true }],
]);
// What the pass normalizes of it: only the records isNewOrChanged picks.
const changedOf = (records: NormalizedRecord[]): NormalizedRecord[] => records.filter((r) => isNewOrChanged(r, stored));
const input = (records: NormalizedRecord[]): { records: ListedRecord[]; changed: NormalizedRecord[] } => ({
  records,
  changed: changedOf(records),
});

describe('isNewOrChanged', () => {
  it('picks a record with no stored row, a row marked deleted (to restore it) and another hash; not an unchanged one', () => {
    expect(page.filter((r) => isNewOrChanged(r, stored)).map((r) => r.id)).toEqual(['a', 'c', 'd']);
  });
});

describe('planPage on a reconcile between its slower cycles', () => {
  it("writes the changed rows, keeps the unchanged ids it listed (to find deletions), queues the changed parents' child lists", () => {
    const base = { ...input(page), stored, kind: 'reconcile' as const, detail: true, hasMore: false, reachedFloor: false };
    const daily = planPage({ ...base, everyParent: false });
    expect(daily.rows.map((n) => n.id)).toEqual(['a', 'c', 'd']);
    expect(daily.listedUnchanged).toEqual(['b']);
    expect(daily.parents).toEqual(['a', 'c', 'd']);
    expect(daily.details).toEqual(['a', 'c', 'd']);
    expect(daily.reason).toBe('reconcile');
    expect(planPage({ ...base, everyParent: true }).parents).toEqual(['a', 'b', 'c', 'd']);
  });

  it("queues the changed parents' child lists and those of the parents whose day of the rolling cycle is due", () => {
    const base = { ...input(page), stored, kind: 'reconcile' as const, detail: true, hasMore: false, reachedFloor: false };
    const plan = planPage({ ...base, everyParent: (id) => id === 'b' || id === 'c' });
    expect(plan.parents).toEqual(['a', 'b', 'c', 'd']);
    // Single reads stay with the changed records: the cycle re-reads child lists, not records.
    expect(plan.details).toEqual(['a', 'c', 'd']);
    expect(planPage({ ...base, everyParent: () => false }).parents).toEqual(['a', 'c', 'd']);
  });

  it('gives a parent whose single record carries its child lists a single read when its child lists are re-read', () => {
    const base = { ...input(page), stored, kind: 'reconcile' as const, detail: true, hasMore: false, reachedFloor: false };
    const carried = planPage({ ...base, everyParent: (id) => id === 'b', detailCarriesChildren: true });
    expect(carried.details).toEqual(['a', 'b', 'c', 'd']);
    expect(carried.parents).toEqual(['a', 'b', 'c', 'd']);
    // Without a detail endpoint there is nothing to read instead.
    expect(planPage({ ...base, detail: false, everyParent: true, detailCarriesChildren: true }).details).toEqual([]);
  });

  it('on a stream with a change field, queues the unchanged parents it re-reads apart, as checks of A25', () => {
    const base = {
      ...input(page),
      stored,
      kind: 'reconcile' as const,
      detail: true,
      hasMore: false,
      reachedFloor: false,
      changeField: true,
    };
    const plan = planPage({ ...base, everyParent: (id) => id === 'b' || id === 'c' });
    // 'c' changed: a parent like any; 'b' did not: its children are a check.
    expect(plan.parents).toEqual(['a', 'c', 'd']);
    expect(plan.checked).toEqual(['b']);
    expect(plan.details).toEqual(['a', 'c', 'd']);
    const every = planPage({ ...base, everyParent: true, detailCarriesChildren: true });
    expect(every.checked).toEqual(['b']);
    // The record that carries the lists is queued for the changed only; the checked get theirs as checks (commitPage).
    expect(every.details).toEqual(['a', 'c', 'd']);
    expect(planPage({ ...base, kind: 'incremental' }).checked).toEqual([]);
  });
});

describe('planPage', () => {
  const cases: Array<{
    name: string;
    kind: PassKind;
    detail: boolean;
    hasMore: boolean;
    reachedFloor: boolean;
    rows: string[];
    listedUnchanged: string[];
    parents: string[];
    details: string[];
    finished: boolean;
  }> = [
    {
      name: 'incremental: writes and queues only new, changed and revived records',
      kind: 'incremental',
      detail: true,
      hasMore: true,
      reachedFloor: false,
      rows: ['a', 'c', 'd'],
      listedUnchanged: [],
      parents: ['a', 'c', 'd'],
      details: ['a', 'c', 'd'],
      finished: false,
    },
    {
      name: "full read: writes new, changed and revived records, keeps the unchanged ids it listed, re-reads every parent's children",
      kind: 'full',
      detail: true,
      hasMore: true,
      reachedFloor: false,
      rows: ['a', 'c', 'd'],
      listedUnchanged: ['b'],
      parents: ['a', 'b', 'c', 'd'],
      details: ['a', 'c', 'd'],
      finished: false,
    },
    {
      name: 'backfill reads every parent but marks nothing gone at its end, so keeps no listed ids',
      kind: 'backfill',
      detail: false,
      hasMore: false,
      reachedFloor: false,
      rows: ['a', 'c', 'd'],
      listedUnchanged: [],
      parents: ['a', 'b', 'c', 'd'],
      details: [],
      finished: true,
    },
    {
      name: 'reconcile is a full read',
      kind: 'reconcile',
      detail: true,
      hasMore: true,
      reachedFloor: false,
      rows: ['a', 'c', 'd'],
      listedUnchanged: ['b'],
      parents: ['a', 'b', 'c', 'd'],
      details: ['a', 'c', 'd'],
      finished: false,
    },
    {
      name: 'detail disabled: nothing queued for single-record reads',
      kind: 'incremental',
      detail: false,
      hasMore: true,
      reachedFloor: false,
      rows: ['a', 'c', 'd'],
      listedUnchanged: [],
      parents: ['a', 'c', 'd'],
      details: [],
      finished: false,
    },
    {
      name: 'the last page finishes the pass',
      kind: 'incremental',
      detail: true,
      hasMore: false,
      reachedFloor: false,
      rows: ['a', 'c', 'd'],
      listedUnchanged: [],
      parents: ['a', 'c', 'd'],
      details: ['a', 'c', 'd'],
      finished: true,
    },
    {
      name: 'reaching the floor finishes the pass though the server has more',
      kind: 'incremental',
      detail: true,
      hasMore: true,
      reachedFloor: true,
      rows: ['a', 'c', 'd'],
      listedUnchanged: [],
      parents: ['a', 'c', 'd'],
      details: ['a', 'c', 'd'],
      finished: true,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planPage({ ...input(page), stored, kind: c.kind, detail: c.detail, hasMore: c.hasMore, reachedFloor: c.reachedFloor });
      expect(plan.rows.map((r) => r.id)).toEqual(c.rows);
      expect(plan.listedUnchanged).toEqual(c.listedUnchanged);
      expect(plan.changed).toBe(3);
      expect(plan.parents).toEqual(c.parents);
      expect(plan.details).toEqual(c.details);
      expect(plan.finished).toBe(c.finished);
      // Only "a" has no stored row: it has no older child rows to look for.
      expect([...plan.fresh]).toEqual(['a']);
      expect(plan.reason).toBe(pendingReason(c.kind));
    });
  }

  it('an unchanged page on an incremental pass writes and queues nothing', () => {
    const plan = planPage({ ...input([rec('b', 'h2')]), stored, kind: 'incremental', detail: true, hasMore: true, reachedFloor: false });
    expect(plan).toMatchObject({ rows: [], listedUnchanged: [], parents: [], details: [], finished: false });
  });

  it('an unchanged page on a full read writes nothing and keeps its ids once each', () => {
    const plan = planPage({
      ...input([rec('b', 'h2'), rec('b', 'h2')]),
      stored,
      kind: 'full',
      detail: true,
      hasMore: true,
      reachedFloor: false,
    });
    expect(plan).toMatchObject({ rows: [], changed: 0, listedUnchanged: ['b'], parents: ['b', 'b'], details: [] });
  });

  it('an empty last page still finishes the pass', () => {
    expect(
      planPage({ records: [], changed: [], stored: new Map(), kind: 'full', detail: true, hasMore: false, reachedFloor: false }),
    ).toMatchObject({
      rows: [],
      finished: true,
    });
  });
});

describe('pendingReason', () => {
  it.each([
    ['incremental', 'changed'],
    ['full', 'changed'],
    ['backfill', 'backfill'],
    ['reconcile', 'reconcile'],
  ] as const)('%s pass queues work as %s', (kind, reason) => {
    expect(pendingReason(kind)).toBe(reason);
  });
});
