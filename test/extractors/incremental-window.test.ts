import { describe, expect, it } from 'vitest';
import { findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { IncrementalWindow } from '../../src/extractors/incremental-window.js';
import type { PassState } from '../../src/state/stream-state.js';

const T = (iso: string): number => Date.parse(iso);
const SORT = { sort_column: 'last_modified_time', sort_order: 'D' };
const FLOOR = T('2026-11-20T10:00:00Z');
const fresh = { unsorted: false, maxChanged: null };

describe('IncrementalWindow.observe', () => {
  const cases: Array<{
    name: string;
    sort: boolean;
    floor: number | null;
    pages: Array<Array<number | null>>;
    want: Array<{ becameUnsorted: boolean; reachedFloor: boolean }>;
    max: string | null;
    unsorted: boolean;
  }> = [
    {
      name: 'newest first, above the floor: carries on',
      sort: true,
      floor: FLOOR,
      pages: [[T('2026-11-21T12:00:00Z'), T('2026-11-21T11:00:00Z')]],
      want: [{ becameUnsorted: false, reachedFloor: false }],
      max: '2026-11-21T12:00:00.000Z',
      unsorted: false,
    },
    {
      name: 'a record below the floor ends the walk on that page',
      sort: true,
      floor: FLOOR,
      pages: [[T('2026-11-21T12:00:00Z')], [T('2026-11-20T11:00:00Z'), T('2026-11-20T09:59:59Z')]],
      want: [
        { becameUnsorted: false, reachedFloor: false },
        { becameUnsorted: false, reachedFloor: true },
      ],
      max: '2026-11-21T12:00:00.000Z',
      unsorted: false,
    },
    {
      name: 'a later change after an earlier one, across pages: unsorted, never reaches the floor',
      sort: true,
      floor: FLOOR,
      pages: [[T('2026-11-21T10:00:00Z')], [T('2026-11-21T11:00:00Z'), T('2026-11-19T00:00:00Z')]],
      want: [
        { becameUnsorted: false, reachedFloor: false },
        { becameUnsorted: true, reachedFloor: false },
      ],
      max: '2026-11-21T11:00:00.000Z',
      unsorted: true,
    },
    {
      name: 'a record without a change time makes the order unknowable',
      sort: true,
      floor: FLOOR,
      pages: [[T('2026-11-21T10:00:00Z'), null, T('2026-11-19T00:00:00Z')]],
      want: [{ becameUnsorted: true, reachedFloor: false }],
      max: '2026-11-21T10:00:00.000Z',
      unsorted: true,
    },
    {
      name: 'instants with offsets compare as instants (+0530 is earlier than the same wall time in UTC)',
      sort: true,
      floor: T('2026-11-20T10:00:00Z'),
      pages: [[T('2026-11-20T15:00:00+0530'.replace('+0530', '+05:30'))]],
      want: [{ becameUnsorted: false, reachedFloor: true }],
      max: '2026-11-20T09:30:00.000Z',
      unsorted: false,
    },
    {
      name: 'no sort asked: order is not checked and the floor never ends the walk',
      sort: false,
      floor: FLOOR,
      pages: [[T('2026-11-19T00:00:00Z'), T('2026-11-21T00:00:00Z')]],
      want: [{ becameUnsorted: false, reachedFloor: false }],
      max: '2026-11-21T00:00:00.000Z',
      unsorted: false,
    },
    {
      name: 'sorted without a floor: the walk reads every page',
      sort: true,
      floor: null,
      pages: [[T('2026-11-21T00:00:00Z'), T('2026-11-19T00:00:00Z')]],
      want: [{ becameUnsorted: false, reachedFloor: false }],
      max: '2026-11-21T00:00:00.000Z',
      unsorted: false,
    },
    {
      name: 'an empty page changes nothing',
      sort: true,
      floor: FLOOR,
      pages: [[]],
      want: [{ becameUnsorted: false, reachedFloor: false }],
      max: null,
      unsorted: false,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const w = new IncrementalWindow(c.sort ? SORT : null, c.floor, fresh);
      expect(c.pages.map((p) => w.observe(p))).toEqual(c.want);
      expect(w.maxChanged).toBe(c.max);
      expect(w.unsorted).toBe(c.unsorted);
    });
  }

  it('a page whose page_context reports another order is unsorted, even when its change times look newest first', () => {
    // Creation order, never edited: change times descend like the order asked for.
    const page = [T('2026-11-21T12:00:00Z'), T('2026-11-19T00:00:00Z')];
    for (const [sortedBy, unsorted] of [
      [{ sort_column: 'created_time', sort_order: 'D' }, true],
      [{ sort_column: 'last_modified_time', sort_order: 'A' }, true],
      [{ sort_column: 'last_modified_time', sort_order: 'descending' }, false],
      [{ sort_column: 'LAST_MODIFIED_TIME' }, false],
      [{ sort_order: 'd' }, false],
      [undefined, false],
    ] as const) {
      const w = new IncrementalWindow(SORT, FLOOR, fresh);
      const view = w.observe(page, sortedBy);
      expect(view, JSON.stringify(sortedBy)).toEqual({ becameUnsorted: unsorted, reachedFloor: !unsorted });
      expect(w.unsorted).toBe(unsorted);
    }
  });

  it('a resumed pass keeps what it had learnt: unsorted stays unsorted, the newest change only grows', () => {
    const w = new IncrementalWindow(SORT, FLOOR, { unsorted: true, maxChanged: '2026-11-21T12:00:00.000Z' });
    expect(w.observe([T('2026-11-19T00:00:00Z')])).toEqual({ becameUnsorted: false, reachedFloor: false });
    expect(w.maxChanged).toBe('2026-11-21T12:00:00.000Z');
  });
});

describe('IncrementalWindow.forPass', () => {
  const sorted = findStream('inventory.sales_orders') as StreamSpec;
  const pass = (floor: string | null): PassState => ({
    kind: 'incremental',
    startedAt: '2026-11-21T00:00:00.000Z',
    nextPage: 1,
    floor,
    maxChanged: null,
    unsorted: false,
    records: 0,
    children: false,
  });

  it('asks for newest first only when a floor lets the walk stop early', () => {
    expect(sorted.cursor?.sort).toBeTruthy();
    const withFloor = IncrementalWindow.forPass(sorted, pass('2026-11-20T00:00:00.000Z'));
    expect(withFloor.sortParams).toEqual(sorted.cursor!.sort!.params);
    expect(withFloor.mayStopEarly()).toBe(true);
    const first = IncrementalWindow.forPass(sorted, pass(null));
    expect(first.sortParams).toBeNull();
    expect(first.mayStopEarly()).toBe(false);
  });
});
