import { describe, expect, it } from 'vitest';
import { changeRates, changesBetween, DAY_MS, HOUR_MS, NO_CHANGES, type ChangeRates } from '../../src/scheduler/timing/change-model.js';
import {
  afterPoll,
  baseIntervals,
  DEFAULT_FRESH_SETTINGS,
  FIRST_POLLS,
  MAX_STRETCH,
  minutesByHour,
  nextDue,
  planFreshness,
  stalenessOf,
  type FreshStream,
} from '../../src/scheduler/timing/freshness.js';

const DAY0 = Date.UTC(2026, 10, 2);
const MIN = 60_000;

/** Rates of `perHour` changes an hour in the hours [from, to), none in the others. */
function busy(perHour: number, from = 9, to = 17): ChangeRates {
  const hours = Array.from({ length: 24 }, (_, h) => (h >= from && h < to ? perHour : 0));
  return { perHour: hours, perDay: hours.reduce((a, n) => a + n, 0) };
}

function stream(tree: string, extra: Partial<FreshStream> = {}): FreshStream {
  return { tree, targetMinutes: 30, pollCost: 1, perChange: 1, rates: NO_CHANGES, lastPolledAt: DAY0, ...extra };
}

const day = (remaining: number, reserved = 0) => ({ now: DAY0, reset: DAY0 + DAY_MS, remaining, reserved });

describe('the change model', () => {
  it('reads a steady rate as itself whatever the half-life, in the hours the changes happen', () => {
    const now = DAY0 + 14 * DAY_MS;
    // 10 changes a day at 10:30 for 14 days.
    const instants = Array.from({ length: 14 * 10 }, (_, i) => DAY0 + Math.floor(i / 10) * DAY_MS + 10.5 * HOUR_MS + (i % 10) * MIN);
    for (const halfLifeDays of [1, 2, 7]) {
      const r = changeRates(instants, now, { halfLifeDays });
      expect(r.perDay).toBeGreaterThan(9.3);
      expect(r.perDay).toBeLessThan(10.7);
      // Spread over 08:00–12:00 by the smoothing, nothing at night.
      expect(r.perHour[10]).toBeGreaterThan(r.perHour[9]!);
      expect(r.perHour[3]).toBe(0);
    }
  });

  it('weighs recent changes more: a stream that became busy yesterday reads busier than its fortnight mean', () => {
    const now = DAY0 + 14 * DAY_MS;
    const yesterday = Array.from({ length: 100 }, (_, i) => now - DAY_MS + i * MIN);
    expect(changeRates(yesterday, now).perDay).toBeGreaterThan((100 / 14) * 2);
    // Outside the window, and in the future, nothing counts.
    expect(changeRates([now - 15 * DAY_MS, now + HOUR_MS], now).perDay).toBe(0);
  });

  it('reads at least what the last 24 hours saw: a quiet stream that turns busy is busy the next hour', () => {
    const now = DAY0 + 14 * DAY_MS;
    // One change a day for a fortnight, then 50 in the last two hours.
    const old = Array.from({ length: 13 }, (_, i) => DAY0 + i * DAY_MS + 10 * HOUR_MS);
    const surge = Array.from({ length: 50 }, (_, i) => now - 2 * HOUR_MS + i * MIN);
    const r = changeRates([...old, ...surge], now);
    expect(r.perDay).toBeGreaterThanOrEqual(50);
    expect(Math.max(...r.perHour)).toBeGreaterThan(5);
  });

  it('counts expected changes between two instants hour by hour', () => {
    const r = busy(6);
    expect(changesBetween(r, DAY0, DAY0 + DAY_MS)).toBeCloseTo(48);
    expect(changesBetween(r, DAY0 + 8 * HOUR_MS, DAY0 + 9.5 * HOUR_MS)).toBeCloseTo(3);
    expect(changesBetween(r, DAY0 + 18 * HOUR_MS, DAY0 + 20 * HOUR_MS)).toBe(0);
  });
});

describe('afterPoll', () => {
  const at = (h: number): number => DAY0 + h * HOUR_MS;
  const hoursAbove1 = (m: { stretch: number[] }): number[] => m.stretch.flatMap((x, h) => (x > 1 ? [h] : []));

  it.each([
    { name: 'an empty night poll stretches the night hours it covered only', from: at(1), to: at(3.5), expect: [1, 2, 3] },
    { name: 'an empty poll within one hour stretches that hour', from: at(9.1), to: at(9.6), expect: [9] },
    { name: 'an empty poll across midnight stretches both sides', from: at(23.5), to: at(24.5), expect: [0, 23] },
    { name: 'an empty poll a day long or more stretches every hour', from: at(0), to: at(30), expect: [...Array(24).keys()] },
    { name: 'the first poll (no span) stretches nothing', from: at(5), to: at(5), expect: [] },
  ])('$name', ({ from, to, expect: hours }) => {
    expect(hoursAbove1(afterPoll(FIRST_POLLS, 0, from, to))).toEqual(hours);
  });

  it('a night of empty polls leaves the morning at its target; changes found reset every hour', () => {
    let m = FIRST_POLLS;
    for (let h = 0; h < 8; h++) m = afterPoll(m, 0, at(h), at(h + 1));
    for (let h = 0; h < 8; h++) m = afterPoll(m, 0, at(h), at(h + 1));
    expect(m.stretch.slice(0, 8)).toEqual(new Array(8).fill(4));
    const s = stream('a', { rates: { perHour: new Array<number>(24).fill(0.1), perDay: 2.4 }, recent: m });
    expect(baseIntervals(s, DEFAULT_FRESH_SETTINGS).slice(6, 10)).toEqual([120, 120, 30, 30]);
    const found = afterPoll(m, 3, at(8), at(9));
    expect(found).toEqual({ changed: true, stretch: new Array(24).fill(1), seen: true });
    // The first empty poll after changes starts the stretch again from the target.
    expect(afterPoll(found, 0, at(9), at(10)).stretch[9]).toBe(2);
  });

  it('never stretches past the cap', () => {
    let m = FIRST_POLLS;
    for (let i = 0; i < 20; i++) m = afterPoll(m, 0, at(2), at(2.5));
    expect(m.stretch[2]).toBe(MAX_STRETCH);
  });
});

describe('planFreshness', () => {
  it('rule 1: a changing hour polls at the target, a quiet one at the quiet interval, on a budget with nothing spare', () => {
    const s = stream('a', { rates: busy(2) });
    expect(baseIntervals(s, DEFAULT_FRESH_SETTINGS).slice(8, 10)).toEqual([720, 30]);
    // Empty polls stretch the busy hours; a poll that found changes brings them back.
    const stretched = { changed: false, stretch: FIRST_POLLS.stretch.map((_, h) => (h === 10 ? 4 : 1)) };
    expect(baseIntervals({ ...s, recent: stretched }, DEFAULT_FRESH_SETTINGS).slice(9, 12)).toEqual([30, 120, 30]);
    expect(baseIntervals({ ...s, recent: { changed: true, stretch: FIRST_POLLS.stretch } }, DEFAULT_FRESH_SETTINGS)[3]).toBe(30);
    // Not learned yet: every hour counts as busy.
    expect(new Set(baseIntervals(stream('b', { rates: null }), DEFAULT_FRESH_SETTINGS))).toEqual(new Set([30]));
  });

  it('rule 2: spare budget tightens the busiest stream most, never below the minimum, within the budget', () => {
    const streams = [stream('busy', { rates: busy(20) }), stream('slow', { rates: busy(0.5) })];
    const plan = planFreshness(streams, day(300));
    const [b, s] = plan.streams;
    expect(b!.intervals[10]).toBeLessThan(s!.intervals[10]!);
    expect(Math.min(...b!.intervals)).toBeGreaterThanOrEqual(DEFAULT_FRESH_SETTINGS.minMinutes);
    expect(b!.state).toBe('fresher');
    // The polls and the changes (held at the safety factor) fit what is left.
    const changes = 20 * 8 + 0.5 * 8;
    expect(plan.demand - changes + changes * DEFAULT_FRESH_SETTINGS.safety).toBeLessThanOrEqual(300 + 1);
    expect(plan.short).toBe(false);
    // A richer day buys more polls, not fewer.
    expect(planFreshness(streams, day(2000)).streams[0]!.polls).toBeGreaterThan(b!.polls);
  });

  it('rule 2: until a poll finds a change, spare budget polls a stretched hour no faster than its stretched floor', () => {
    // A first day: rates learned from records spread over years, the same small rate in every hour.
    const uniform: ChangeRates = { perHour: new Array<number>(24).fill(0.3), perDay: 7.2 };
    const quietNight = { changed: false, stretch: FIRST_POLLS.stretch.map((_, h) => (h < 6 ? 4 : 1)) };
    const fresh = planFreshness([stream('a', { rates: uniform })], day(5000)).streams[0]!;
    const stretched = planFreshness([stream('a', { rates: uniform, recent: quietNight })], day(5000)).streams[0]!;
    const min = DEFAULT_FRESH_SETTINGS.minMinutes;
    // Without evidence a rich day polls every hour at the minimum; the stretched night hours at 4 times it.
    expect(fresh.intervals[2]).toBe(min);
    expect(stretched.intervals.slice(0, 6)).toEqual(new Array(6).fill(4 * min));
    // Never beyond the target, however many empty polls: spare budget keeps its promise.
    const longNight = { changed: false, stretch: FIRST_POLLS.stretch.map((_, h) => (h < 6 ? MAX_STRETCH : 1)) };
    const capped = planFreshness([stream('a', { rates: uniform, recent: longNight })], day(5000)).streams[0]!;
    expect(capped.intervals.slice(0, 6)).toEqual(new Array(6).fill(30));
    expect(stretched.intervals[9]).toBe(min);
    // A poll that finds changes brings the night back to the minimum; from then on the rates have
    // met the stream's own changes, and empty polls no longer hold spare budget back.
    const found = afterPoll(quietNight, 3, DAY0, DAY0 + HOUR_MS);
    expect(planFreshness([stream('a', { rates: uniform, recent: found })], day(5000)).streams[0]!.intervals[2]).toBe(min);
    const emptyAgain = afterPoll(afterPoll(found, 0, DAY0, DAY0 + 3 * HOUR_MS), 0, DAY0, DAY0 + 3 * HOUR_MS);
    expect(emptyAgain.stretch[2]).toBe(4);
    expect(planFreshness([stream('a', { rates: uniform, recent: emptyAgain })], day(5000)).streams[0]!.intervals[2]).toBe(min);
  });

  it('counts change-driven reads once per change, whatever the polling', () => {
    const streams = [stream('a', { rates: busy(10), perChange: 2 })];
    const rich = planFreshness(streams, day(5000));
    const poor = planFreshness(streams, day(400));
    const pollCost = (p: typeof rich): number => p.streams[0]!.polls;
    expect(rich.demand - pollCost(rich)).toBeCloseTo(poor.demand - pollCost(poor), 0);
    expect(rich.streams[0]!.changes).toBeCloseTo(80);
  });

  it('rule 3: a short day delays the stream with the fewest changes first, and says so', () => {
    const streams = [stream('busy', { rates: busy(4), targetMinutes: 10 }), stream('quiet', { rates: busy(0.2), targetMinutes: 10 })];
    // Both at their targets need 2 × (8 h × 6 polls + the quiet hours' 1.3) and 40 for the changes; give 120.
    const plan = planFreshness(streams, day(120));
    expect(plan.kappa).toBeNull();
    expect(plan.streams.find((s) => s.tree === 'quiet')!.state).toBe('budget');
    expect(plan.streams.find((s) => s.tree === 'busy')!.state).not.toBe('budget');
    // Other integrations spending from the same quota shrink the day: the plan stretches further.
    const shorter = planFreshness(streams, day(120, 60));
    expect(shorter.streams[0]!.polls).toBeLessThanOrEqual(plan.streams[0]!.polls);
    // However short the day, no stream waits longer than the maximum.
    const none = planFreshness(streams, day(0));
    expect(none.short).toBe(true);
    for (const s of none.streams) expect(Math.max(...s.intervals)).toBeLessThanOrEqual(DEFAULT_FRESH_SETTINGS.maxMinutes);
  });

  it('keeps the day’s κ while it fits, and fits it again when the day turns out shorter', () => {
    const streams = [stream('a', { rates: busy(10) })];
    const first = planFreshness(streams, day(900));
    const kept = planFreshness(streams, { ...day(900), now: DAY0 + 17 * HOUR_MS }, DEFAULT_FRESH_SETTINGS, first.kappa);
    expect(kept.kappa).toBe(first.kappa);
    const squeezed = planFreshness(streams, { ...day(30), now: DAY0 + 10 * HOUR_MS }, DEFAULT_FRESH_SETTINGS, first.kappa);
    expect(squeezed.kappa === null || squeezed.kappa > first.kappa!).toBe(true);
  });

  it('leaves a stream without a change field at its target (nothing to learn a rate from)', () => {
    const plan = planFreshness([stream('settings', { rates: null, targetMinutes: 1440 })], day(900));
    expect(new Set(plan.streams[0]!.intervals)).toEqual(new Set([1440]));
    expect(plan.streams[0]!.polls).toBeCloseTo(1);
  });
});

describe('due times and staleness', () => {
  it('a poll is due an interval after the last, and a quiet night gives way when the busy hours begin', () => {
    const intervals = Array.from({ length: 24 }, (_, h) => (h >= 9 && h < 17 ? 15 : 720));
    expect(nextDue(null, intervals, DAY0)).toBe(DAY0);
    expect(nextDue(DAY0 + 10 * HOUR_MS, intervals, DAY0)).toBe(DAY0 + 10 * HOUR_MS + 15 * MIN);
    // Last polled at 01:00 with 12 h intervals: due at 09:00, not 13:00.
    expect(nextDue(DAY0 + HOUR_MS, intervals, DAY0)).toBe(DAY0 + 9 * HOUR_MS);
  });

  it('predicts the lag of a change as uniform up to the interval of its hour, hours weighted by their changes', () => {
    const flat = new Array<number>(24).fill(20);
    expect(stalenessOf(flat, new Array<number>(24).fill(1))).toEqual({ p50Minutes: 10, p95Minutes: 19 });
    const mixed = Array.from({ length: 24 }, (_, h) => (h < 12 ? 10 : 100));
    const weights = Array.from({ length: 24 }, (_, h) => (h < 12 ? 9 : 1));
    const s = stalenessOf(mixed, weights)!;
    expect(s.p50Minutes).toBeLessThan(10);
    expect(s.p95Minutes).toBeGreaterThan(40);
    expect(stalenessOf(flat, new Array<number>(24).fill(0))).toBeNull();
  });

  it('splits a span into minutes per UTC hour', () => {
    const m = minutesByHour(DAY0 + 8.5 * HOUR_MS, DAY0 + 10 * HOUR_MS);
    expect(m[8]).toBe(30);
    expect(m[9]).toBe(60);
    expect(m.reduce((a, n) => a + n, 0)).toBe(90);
  });
});
