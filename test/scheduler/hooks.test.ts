import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import {
  AddressRateLimit,
  HookDebouncer,
  hookBudget,
  parseHookUrl,
  presentedSecret,
  secretMatches,
} from '../../src/scheduler/surface/hooks.js';

describe('secretMatches', () => {
  it.each([
    ['the same secret', 'a-long-webhook-secret-1', 'a-long-webhook-secret-1', true],
    ['a different secret of the same length', 'a-long-webhook-secret-2', 'a-long-webhook-secret-1', false],
    ['a prefix', 'a-long-webhook', 'a-long-webhook-secret-1', false],
    ['a longer one', 'a-long-webhook-secret-1x', 'a-long-webhook-secret-1', false],
    ['none presented', undefined, 'a-long-webhook-secret-1', false],
    ['none configured (hooks off)', 'anything', undefined, false],
    ['both missing', undefined, undefined, false],
    ['an empty secret against an empty configuration', '', '', false],
  ])('%s', (_name, presented, expected, result) => {
    expect(secretMatches(presented, expected)).toBe(result);
  });
});

describe('parseHookUrl', () => {
  const u = (path: string): URL => new URL(path, 'http://x');
  it.each([
    ['/hooks/main/books/10234695', { connection: 'main', family: 'books', organizationId: '10234695', streams: [] }],
    ['/hooks/main/books/10234695/invoices', { connection: 'main', family: 'books', organizationId: '10234695', streams: ['invoices'] }],
    [
      '/hooks/main/books/10234695?streams=invoices,bills&stream=contacts',
      { connection: 'main', family: 'books', organizationId: '10234695', streams: ['invoices', 'bills', 'contacts'] },
    ],
    // Identifiers stay as sent, leading zeros included.
    ['/hooks/a%20b/inventory/007', { connection: 'a b', family: 'inventory', organizationId: '007', streams: [] }],
  ])('%s', (path, want) => {
    expect(parseHookUrl(u(path))).toEqual(want);
  });
  it.each(['/hooks/main/books', '/hooks/main', '/other/main/books/1', '/hooks/a/b/c/d/e', '/hooks/%E0%A4%A/books/1'])(
    'not a hook path: %s',
    (path) => {
      expect(parseHookUrl(u(path))).toBeNull();
    },
  );
  it('takes the secret from the header before the query', () => {
    const url = u('/hooks/a/books/1?secret=from-query');
    expect(presentedSecret({ 'x-svcsync-secret': 'from-header' }, url)).toBe('from-header');
    expect(presentedSecret({}, url)).toBe('from-query');
    expect(presentedSecret({}, u('/hooks/a/books/1'))).toBeUndefined();
  });
});

describe('AddressRateLimit', () => {
  it('allows `limit` hooks per address in any minute, each address on its own', async () => {
    const clock = new FakeClock(0);
    const rate = new AddressRateLimit(clock, 3);
    expect([1, 2, 3, 4].map(() => rate.allow('10.0.0.1'))).toEqual([true, true, true, false]);
    expect(rate.allow('10.0.0.2')).toBe(true);
    await clock.advance(59_999);
    expect(rate.allow('10.0.0.1')).toBe(false);
    // A minute after the first three, their slots are free again.
    await clock.advance(1);
    expect(rate.allow('10.0.0.1')).toBe(true);
  });
});

describe('HookDebouncer', () => {
  it('coalesces the hooks of one organization into one fire after the delay, with the union of their streams', async () => {
    const clock = new FakeClock(0);
    const fired: Array<{ key: string; streams: string[]; hooks: number }> = [];
    const d = new HookDebouncer(clock, 10_000, (key, streams, hooks) => fired.push({ key, streams, hooks }));
    expect(d.add('c/1', ['books.invoices'])).toEqual({ kind: 'scheduled', at: 10_000 });
    await clock.advance(4_000);
    for (let i = 0; i < 999; i++) expect(d.add('c/1', ['books.bills']).kind).toBe('coalesced');
    expect(d.add('c/2', ['books.bills'])).toEqual({ kind: 'scheduled', at: 14_000 });
    expect(d.dueAt('c/1')).toBe(10_000);
    await clock.advance(5_999);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual([{ key: 'c/1', streams: ['books.bills', 'books.invoices'], hooks: 1_000 }]);
    expect(d.dueAt('c/1')).toBeNull();
    // The next hook for the same organization starts a new window.
    expect(d.add('c/1', ['books.invoices'])).toEqual({ kind: 'scheduled', at: 20_000 });
    await clock.advance(10_000);
    expect(fired.map((f) => f.key)).toEqual(['c/1', 'c/2', 'c/1']);
  });

  it('a hook that names no stream widens the pending run to every stream', async () => {
    const clock = new FakeClock(0);
    const fired: string[][] = [];
    const d = new HookDebouncer(clock, 1_000, (_k, streams) => fired.push(streams));
    d.add('k', ['books.invoices']);
    d.add('k', []);
    d.add('k', ['books.bills']);
    await clock.advance(1_000);
    expect(fired).toEqual([[]]);
  });

  it('cancelAll drops pending runs (shutdown)', async () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    const d = new HookDebouncer(clock, 1_000, (k) => fired.push(k));
    d.add('k', []);
    d.cancelAll();
    await clock.advance(2_000);
    expect(fired).toEqual([]);
  });
});

describe('hookBudget', () => {
  it.each([
    // estimate, remaining, held for the scheduled incrementals → run?
    [5, 100, 50, true],
    [50, 100, 50, true],
    [51, 100, 50, false],
    [1, 10, 10, false],
    [1, 0, 0, false],
    [0, 0, 0, true],
  ])('estimate %i, %i left, %i held → %s', (estimate, remaining, held, run) => {
    const d = hookBudget(estimate, remaining, held);
    expect(d.run).toBe(run);
    if (!run) expect(d.reason).toMatch(/fall back to the schedule/);
  });
});
