/**
 * When each kept-fresh stream of one organization is next worth a poll: the pure decision behind
 * the daemon's freshness job (docs/daemon.md, "Freshness"). Three rules, applied per UTC hour of
 * the day:
 *
 * 1. Base intervals. An hour in which the stream changes (its learned rate, or a poll that just
 *    found changes) polls at the stream's target; other hours at the quiet interval. Polls
 *    that find nothing stretch the hours of the day they covered (`recent.stretch`, doubled per
 *    empty poll), so hours that stay quiet are not polled every half hour.
 * 2. Spare budget buys freshness. Where the day's budget holds more than the base intervals
 *    need, intervals tighten to κ/√rate (the square-root rule: the polling that minimizes
 *    change-weighted staleness for a number of polls), never above the base nor below
 *    `minMinutes` (the target, in an hour without changes), with κ the smallest that fits.
 *    κ is fitted once a quota day (`kappa` passes it on), so what the budget's margin for
 *    changes leaves unspent late in the day is not spent on polls of quiet evening hours, and
 *    `svcsync plan` predicts the day the daemon runs; it is fitted again only when the day
 *    turns out shorter (other integrations spent from the quota).
 * 3. A short budget delays the streams whose staleness costs least (the fewest changes) first:
 *    their intervals double until the day fits, and they say so (`state: budget`).
 *
 * Change-driven reads (a changed record's single read and child lists) are counted once per
 * change, whatever the polling: fewer polls do not make them cheaper.
 */
import { changesBetween, HOUR_MS, type ChangeRates } from './change-model.js';

export interface FreshStream {
  /** The top-level stream (qualified name). */
  tree: string;
  /** How stale the stream may get, in minutes (`freshness:` in the configuration). */
  targetMinutes: number;
  /** Requests of a poll that finds nothing (a page per list; every page of an unsorted list). */
  pollCost: number;
  /** Requests each change adds (its single read, its child lists, its share of a page). */
  perChange: number;
  /** Changes per UTC hour; null until learned (every hour counts as active). */
  rates: ChangeRates | null;
  lastPolledAt: number | null;
  /** What the last polls found: changes (back to the target), or nothing in some hours (their `stretch` doubles). */
  recent?: PollMemory;
  /** Requests already queued for the stream (single reads, child lists left by earlier runs): due now. */
  queued?: number;
}

export interface FreshDay {
  now: number;
  /** When the quota day resets (epoch ms). */
  reset: number;
  /** Requests of the day's budget left (the limiter's count, lowered to the server's). */
  remaining: number;
  /** Requests the other scheduled jobs need until the reset. */
  reserved: number;
}

export interface FreshSettings {
  minMinutes: number;
  quietMinutes: number;
  /** No stream goes longer than this unpolled, however short the budget. */
  maxMinutes: number;
  /** Demand is multiplied by this before it is held against the budget (`daemon.budget_safety`). */
  safety: number;
}

export const DEFAULT_FRESH_SETTINGS: FreshSettings = { minMinutes: 5, quietMinutes: 720, maxMinutes: 1440, safety: 1.25 };

export type FreshState = 'target' | 'fresher' | 'quiet' | 'budget';

export interface StreamVerdict {
  tree: string;
  /** Minutes between polls in each UTC hour of the day. */
  intervals: number[];
  state: FreshState;
  nextDue: number;
  /** Polls until the reset, and the requests they and the expected changes cost. */
  polls: number;
  changes: number;
  requests: number;
  /** Predicted lag from a change to the poll that reads it, in minutes (null: the stream is not expected to change). */
  staleness: { p50Minutes: number; p95Minutes: number } | null;
}

export interface FreshPlan {
  streams: StreamVerdict[];
  /** Requests every stream needs until the reset. */
  demand: number;
  /**
   * What they need at their base intervals (rules 1 and 3, without the spare budget's extra
   * polls): what the daemon holds back from lower-priority jobs, so that freshness bought with
   * spare budget never starves a reconcile.
   */
  baseDemand: number;
  /** What is left for them: remaining less the other jobs' reservation. */
  available: number;
  /** Even the longest intervals do not fit. */
  short: boolean;
  /** The square-root rule's κ (null: no spare budget, the base intervals or longer). */
  kappa: number | null;
  /** Requests the plan expects in the next hour: on a short day, the hour's share of what is left. */
  nextHour: number;
}

/** An hour whose rate reaches this many changes counts as active. */
export const ACTIVE_PER_HOUR = 0.05;
/** The smallest rate the square-root rule divides by: one change in a fortnight. */
const RATE_FLOOR = 1 / (24 * 14);

const rateAt = (s: FreshStream, hour: number): number => s.rates?.perHour[hour] ?? 0;

function isActive(s: FreshStream, hour: number): boolean {
  return s.rates === null || s.recent?.changed === true || rateAt(s, hour) >= ACTIVE_PER_HOUR;
}

/** Rule 1: the target in active hours (stretched by empty polls), the quiet interval in the others. */
export function baseIntervals(s: FreshStream, settings: FreshSettings): number[] {
  const quiet = Math.min(settings.maxMinutes, Math.max(s.targetMinutes, settings.quietMinutes));
  return Array.from({ length: 24 }, (_, h) => (isActive(s, h) ? Math.min(quiet, s.targetMinutes * stretchAt(s, h)) : quiet));
}

/** How far empty polls have stretched hour `h` (1 once a poll found changes). */
const stretchAt = (s: FreshStream, h: number): number => (s.recent?.changed ? 1 : (s.recent?.stretch[h] ?? 1));

/** The longest an empty poll's stretch grows: 2^6 times the target. */
export const MAX_STRETCH = 64;

/** What the last polls found: changes, or nothing in some hours of the day (each hour's `stretch`). */
export interface PollMemory {
  changed: boolean;
  /** Per UTC hour: 1, doubled by each empty poll whose span covered the hour. */
  stretch: number[];
  /** Some poll since the daemon started found changes: the learned rates have met the stream's own. */
  seen?: boolean;
}

export const FIRST_POLLS: PollMemory = { changed: false, stretch: new Array<number>(24).fill(1) };

/**
 * What a finished poll over [from, to] tells rule 1. Changes bring every hour back to the
 * target. An empty poll stretches only the hours of the day it covered: a night of empty polls
 * is evidence about the night, not about the morning, and stretching the whole day would make
 * the morning's first changes wait for a poll spaced for the night (most of all on a first day,
 * when the model learned from records spread over years counts every hour alike).
 */
export function afterPoll(memory: PollMemory, written: number, from: number, to: number): PollMemory {
  if (written > 0) return { changed: true, stretch: new Array<number>(24).fill(1), seen: true };
  const covered = minutesByHour(Math.min(from, to), to);
  // Changes found reset every hour to 1, so the stretch carries no other memory of them.
  const stretch = memory.stretch.map((x, h) => (covered[h]! > 0 ? Math.min(MAX_STRETCH, x * 2) : x));
  return { changed: false, stretch, seen: memory.seen === true };
}

/** Minutes of each UTC hour between two instants. */
export function minutesByHour(from: number, to: number): number[] {
  const out = new Array<number>(24).fill(0);
  for (let t = from; t < to;) {
    const end = Math.min(to, Math.floor(t / HOUR_MS) * HOUR_MS + HOUR_MS);
    out[new Date(t).getUTCHours()]! += (end - t) / 60_000;
    t = end;
  }
  return out;
}

/** Polls until the reset at these intervals. */
const pollsOver = (minutes: readonly number[], intervals: readonly number[]): number =>
  minutes.reduce((a, m, h) => a + m / intervals[h]!, 0);

/**
 * Rule 2: the square-root rule at κ, within [min, base]. A stream without a change field (a
 * settings list read whole) has nothing to learn a rate from: it keeps its target.
 */
function tightened(s: FreshStream, base: readonly number[], kappa: number, settings: FreshSettings): number[] {
  if (s.rates === null) return [...base];
  return base.map((b, h) => {
    // A stream that just changed counts at least its daily mean in every hour.
    const recent = s.recent?.changed && s.rates ? s.rates.perDay / 24 : 0;
    const rate = Math.max(RATE_FLOOR, rateAt(s, h), recent);
    // Spare budget polls a busy hour down to the minimum, a quiet one only down to half its target.
    // Until a poll has found one of the stream's changes, its rates are a forecast (on a first day,
    // learned from records spread over years, the same in every hour): empty polls stretch that
    // floor too, up to the target, or the forecast buys a poll every few minutes all night from
    // the budget the day's changes need.
    const least = isActive(s, h) ? settings.minMinutes : Math.max(settings.minMinutes, s.targetMinutes / 2);
    const forecast = Math.min(Math.max(least, s.targetMinutes), least * stretchAt(s, h));
    const floor = Math.min(b, s.recent?.seen ? least : forecast);
    return Math.min(b, Math.max(floor, kappa / Math.sqrt(rate)));
  });
}

/** The smallest κ whose polls fit `room` (bisection on log κ); null when the base intervals already need more. */
function fitKappa(
  streams: readonly FreshStream[],
  bases: readonly number[][],
  minutes: readonly number[],
  room: number,
  settings: FreshSettings,
): number | null {
  const polls = (k: number): number =>
    streams.reduce((a, s, i) => a + s.pollCost * pollsOver(minutes, tightened(s, bases[i]!, k, settings)), 0);
  const top = 1e7;
  if (polls(top) > room) return null;
  let lo = 1e-3;
  let hi = top;
  if (polls(lo) <= room) return lo;
  for (let i = 0; i < 60; i++) {
    const mid = Math.sqrt(lo * hi);
    if (polls(mid) <= room) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** Rule 3: doubles the intervals of the streams with the fewest changes until the base polls fit `room`; returns the delayed trees. */
function delayCheapest(
  streams: readonly FreshStream[],
  bases: number[][],
  minutes: readonly number[],
  room: number,
  settings: FreshSettings,
): Set<string> {
  const delayed = new Set<string>();
  const order = streams.map((s, i) => ({ s, i })).sort((a, b) => (a.s.rates?.perDay ?? Infinity) - (b.s.rates?.perDay ?? Infinity));
  const need = (): number => streams.reduce((a, s, i) => a + s.pollCost * pollsOver(minutes, bases[i]!), 0);
  for (let round = 0; round < 12 && need() > room; round++) {
    for (const { s, i } of order) {
      if (need() <= room) break;
      const next = bases[i]!.map((b) => Math.min(settings.maxMinutes, b * 2));
      if (next.every((b, h) => b === bases[i]![h])) continue;
      bases[i] = next;
      delayed.add(s.tree);
    }
  }
  return delayed;
}

/**
 * The earliest instant from `lastPolled` on at which a poll is due: in each hour, `interval`
 * after the last poll, so a quiet night's long interval gives way when the busy hours begin.
 */
export function nextDue(lastPolled: number | null, intervals: readonly number[], now: number): number {
  if (lastPolled === null) return now;
  let due = Infinity;
  for (let start = Math.floor(lastPolled / HOUR_MS) * HOUR_MS; start < lastPolled + 48 * HOUR_MS && start < due; start += HOUR_MS) {
    const at = Math.max(start, lastPolled + intervals[new Date(start).getUTCHours()]! * 60_000);
    if (at < start + HOUR_MS) due = Math.min(due, at);
  }
  return Number.isFinite(due) ? due : lastPolled + Math.max(...intervals) * 60_000;
}

/**
 * The lag from a change to the poll after it: a change in hour h waits uniformly up to that
 * hour's interval, hours weighted by their changes. The p-quantile of that mixture, in minutes.
 */
export function stalenessOf(intervals: readonly number[], weights: readonly number[]): { p50Minutes: number; p95Minutes: number } | null {
  const total = weights.reduce((a, w) => a + w, 0);
  if (!(total > 0)) return null;
  const share = (x: number): number => weights.reduce((a, w, h) => a + w * Math.min(1, x / intervals[h]!), 0) / total;
  const quantile = (p: number): number => {
    let lo = 0;
    let hi = Math.max(...intervals);
    for (let i = 0; i < 40; i++) {
      const mid = (lo + hi) / 2;
      if (share(mid) >= p) hi = mid;
      else lo = mid;
    }
    return Math.round(hi * 10) / 10;
  };
  return { p50Minutes: quantile(0.5), p95Minutes: quantile(0.95) };
}

function verdictOf(
  s: FreshStream,
  intervals: number[],
  base: readonly number[],
  delayed: boolean,
  day: FreshDay,
  minutes: readonly number[],
): StreamVerdict {
  const changes = s.rates ? changesBetween(s.rates, day.now, day.reset) : 0;
  const polls = pollsOver(minutes, intervals);
  const active = Array.from({ length: 24 }, (_, h) => isActive(s, h));
  let state: FreshState = 'target';
  if (delayed) state = 'budget';
  else if (!active.some(Boolean)) state = 'quiet';
  else if (intervals.some((m, h) => active[h] && m < s.targetMinutes && m < base[h]!)) state = 'fresher';
  const weights = s.rates ? s.rates.perHour : new Array<number>(24).fill(1);
  return {
    tree: s.tree,
    intervals,
    state,
    nextDue: Math.max(day.now, nextDue(s.lastPolledAt, intervals, day.now)),
    polls,
    changes,
    requests: Math.ceil(polls * s.pollCost + changes * s.perChange + (s.queued ?? 0)),
    staleness: stalenessOf(intervals, weights),
  };
}

/**
 * Every stream's intervals and next poll until the reset, within what the day has left (the
 * three rules above). The expected changes are held at `safety` times their cost (the rates are
 * a forecast); `kappa`, the day's κ so far, is kept while its polls still fit.
 */
export function planFreshness(
  streams: readonly FreshStream[],
  day: FreshDay,
  settings: FreshSettings = DEFAULT_FRESH_SETTINGS,
  kappa: number | null = null,
): FreshPlan {
  const minutes = minutesByHour(day.now, Math.max(day.now, day.reset));
  const changeCost = streams.reduce(
    (a, s) => a + (s.rates ? changesBetween(s.rates, day.now, day.reset) : 0) * s.perChange + (s.queued ?? 0),
    0,
  );
  const available = Math.max(0, day.remaining - day.reserved);
  const room = Math.max(0, available - changeCost * settings.safety);
  const bases = streams.map((s) => baseIntervals(s, settings));
  const pollsAt = (k: number): number =>
    streams.reduce((a, s, i) => a + s.pollCost * pollsOver(minutes, tightened(s, bases[i]!, k, settings)), 0);
  const kept = kappa !== null && pollsAt(kappa) <= room ? kappa : null;
  return settle(streams, day, settings, {
    minutes,
    bases,
    room,
    changeCost,
    available,
    kappa: kept ?? fitKappa(streams, bases, minutes, room, settings),
  });
}

interface Fitted {
  minutes: number[];
  bases: number[][];
  room: number;
  changeCost: number;
  available: number;
  kappa: number | null;
}

/** The verdicts at the fitted κ, or at the base intervals stretched by rule 3 when none fits. */
function settle(streams: readonly FreshStream[], day: FreshDay, settings: FreshSettings, f: Fitted): FreshPlan {
  const { minutes, bases, room, changeCost, available, kappa } = f;
  const delayed = kappa === null ? delayCheapest(streams, bases, minutes, room, settings) : new Set<string>();
  const verdicts = streams.map((s, i) => {
    const intervals = kappa === null ? bases[i]! : tightened(s, bases[i]!, kappa, settings);
    return verdictOf(s, intervals, baseIntervals(s, settings), delayed.has(s.tree), day, minutes);
  });
  const demand = verdicts.reduce((a, v) => a + v.requests, 0);
  const polls = streams.reduce((a, s, i) => a + s.pollCost * verdicts[i]!.polls, 0);
  const basePolls = streams.reduce((a, s, i) => a + s.pollCost * pollsOver(minutes, bases[i]!), 0);
  const hour = minutesByHour(day.now, Math.min(day.reset, day.now + HOUR_MS));
  const nextHour = streams.reduce((a, s, i) => {
    const changes = s.rates ? changesBetween(s.rates, day.now, Math.min(day.reset, day.now + HOUR_MS)) : 0;
    return a + s.pollCost * pollsOver(hour, verdicts[i]!.intervals) + changes * s.perChange + (s.queued ?? 0);
  }, 0);
  return { streams: verdicts, demand, baseDemand: Math.ceil(basePolls + changeCost), available, short: polls > room, kappa, nextHour };
}
