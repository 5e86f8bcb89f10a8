import { describe, expect, it } from 'vitest';
import { afterCheck, checkDue, sampleOf, type CheckPolicy } from '../../src/extractors/shortcuts.js';
import type { ShortcutRow } from '../../src/state/tables.js';

const POLICY: CheckPolicy = { newConnection: 3, samplePercent: 2, atLeastEveryMs: 7 * 86_400_000 };
const NOW = Date.parse('2026-12-04T12:00:00Z');
const DAY = 86_400_000;

function row(over: Partial<ShortcutRow>): ShortcutRow {
  return {
    connection: 'c',
    organization_id: 'o',
    shortcut: 'embedded_children',
    stream: 'books.vendor_credits',
    state: 'verifying',
    checks: 0,
    since_check: 0,
    first_checked_at: null,
    last_checked_at: null,
    refuted_at: null,
    evidence: null,
    healed_at: null,
    updated_at: '2026-12-01T00:00:00.000Z',
    ...over,
  };
}

describe('checkDue: which uses of a shortcut are checked against the long way', () => {
  const cases: Array<[string, Partial<ShortcutRow>, number, number, boolean]> = [
    ['a new connection checks its first use', {}, 0, NOW, true],
    ['and its third, with two checks made', { checks: 2 }, 0, NOW, true],
    ['but not a fourth while three are under way', {}, 3, NOW, false],
    ['nor once three agreed', { state: 'trusted', checks: 3, last_checked_at: new Date(NOW - DAY).toISOString() }, 0, NOW, false],
    [
      'trusted: the fiftieth use after a check (2 %)',
      { state: 'trusted', since_check: 49, last_checked_at: new Date(NOW).toISOString() },
      0,
      NOW,
      true,
    ],
    ['trusted: not the forty-ninth', { state: 'trusted', since_check: 48, last_checked_at: new Date(NOW).toISOString() }, 0, NOW, false],
    [
      'trusted: any use a week after the last check',
      { state: 'trusted', last_checked_at: new Date(NOW - 7 * DAY).toISOString() },
      0,
      NOW,
      true,
    ],
    ['trusted: one check at a time', { state: 'trusted', since_check: 49, last_checked_at: new Date(NOW).toISOString() }, 1, NOW, false],
    ['refuted: never (the shortcut is not taken)', { state: 'refuted', since_check: 99 }, 0, NOW, false],
  ];
  it.each(cases)('%s', (_name, facts, claimed, now, due) => {
    expect(checkDue(row(facts), claimed, now, POLICY)).toBe(due);
  });

  it('a sample share of 0 checks only on the weekly floor', () => {
    const never = { ...POLICY, samplePercent: 0 };
    expect(checkDue(row({ state: 'trusted', since_check: 10_000, last_checked_at: new Date(NOW).toISOString() }), 0, NOW, never)).toBe(
      false,
    );
    expect(checkDue(row({ state: 'trusted', last_checked_at: new Date(NOW - 8 * DAY).toISOString() }), 0, NOW, never)).toBe(true);
  });
});

describe('afterCheck: the verdict a check leaves', () => {
  const at = '2026-12-04T12:00:00.000Z';
  it('three agreeing checks make a new connection trust the shortcut', () => {
    let v = row({});
    v = afterCheck(v, at, null, POLICY);
    expect([v.state, v.checks, v.first_checked_at]).toEqual(['verifying', 1, at]);
    v = afterCheck(afterCheck(v, at, null, POLICY), at, null, POLICY);
    expect([v.state, v.checks, v.since_check]).toEqual(['trusted', 3, 0]);
  });

  it('one that disagrees refutes it, with what it found, and leaves it to be healed', () => {
    const v = afterCheck(row({ state: 'trusted', checks: 40, since_check: 12 }), at, 'credit 7: 2 the record lacks', POLICY);
    expect(v).toMatchObject({ state: 'refuted', refuted_at: at, evidence: 'credit 7: 2 the record lacks', healed_at: null, checks: 40 });
  });

  it('a check that agrees after the refutation (it began before) leaves it refuted', () => {
    const refuted = afterCheck(row({ state: 'trusted', checks: 5 }), at, 'credit 7: 2 the record lacks', POLICY);
    expect(afterCheck(refuted, '2026-12-04T12:00:01.000Z', null, POLICY)).toEqual(refuted);
  });
});

describe('sampleOf: which parents a check reads', () => {
  const ids = Array.from({ length: 40 }, (_, i) => `4000000000${i}`);
  it('takes n, the same for the same day, others another day', () => {
    const a = sampleOf(ids, 3, 20_000);
    expect(a).toHaveLength(3);
    expect(sampleOf([...ids].reverse(), 3, 20_000)).toEqual(a);
    const days = new Set(Array.from({ length: 5 }, (_, d) => sampleOf(ids, 3, 20_000 + d).join()));
    expect(days.size).toBeGreaterThan(1);
  });
  it('takes all when there are fewer, and none for n = 0', () => {
    expect(sampleOf(['a', 'b'], 3, 1).sort()).toEqual(['a', 'b']);
    expect(sampleOf(ids, 0, 1)).toEqual([]);
  });
});
