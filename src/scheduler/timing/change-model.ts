/**
 * How fast one stream of one organization changes, learned from the change times its records
 * already carry in the warehouse (the cursor column: `last_modified_time`, `event_time`, …).
 * Pure: the instants come in, rates go out.
 *
 * A record keeps only its latest change time, so a record changed twice in the window counts
 * once (docs/assumptions.md): the rates are a floor, which the freshness decisions correct
 * with what each poll finds (`recent` in freshness.ts).
 */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** Changes per hour in each UTC hour of the day (0–23), and per day in all. */
export interface ChangeRates {
  perHour: readonly number[];
  perDay: number;
}

export const NO_CHANGES: ChangeRates = { perHour: new Array<number>(24).fill(0), perDay: 0 };

export interface LearnOptions {
  /** How far back changes count (default 14 days). */
  windowDays?: number;
  /** A change this many days old weighs half as much as one now (default 2 days): a busier week shows within a day or two. */
  halfLifeDays?: number;
}

/**
 * Changes per hour of the day from the change instants (epoch ms) of the last `windowDays`.
 * Each instant weighs 2^(-age / halfLife); the weights are normalized so that a steady rate
 * reads as itself whatever the half-life (the weighted count divided by the weighted days).
 * Each hour reads at least what the last 24 hours saw in it: a stream that turns busy is
 * polled as busy the next hour, not after the half-life has caught up, while one that turns
 * quiet slows down over days.
 */
export function changeRates(instants: Iterable<number>, now: number, options: LearnOptions = {}): ChangeRates {
  const windowDays = options.windowDays ?? 14;
  const halfLife = (options.halfLifeDays ?? 2) * DAY_MS;
  const from = now - windowDays * DAY_MS;
  const weighted = new Array<number>(24).fill(0);
  const lastDay = new Array<number>(24).fill(0);
  for (const at of instants) {
    if (!(at > from && at <= now)) continue;
    const hour = new Date(at).getUTCHours();
    weighted[hour]! += 2 ** (-(now - at) / halfLife);
    if (now - at < DAY_MS) lastDay[hour]! += 1;
  }
  // The weighted length of the window in days: ∫ 2^(-t/h) dt over it, so a constant rate of r a day sums to r × this.
  const days = ((halfLife / Math.LN2) * (1 - 2 ** (-(windowDays * DAY_MS) / halfLife))) / DAY_MS;
  const recent = smoothed(lastDay);
  const perHour = smoothed(weighted).map((w, h) => Math.max(w / days, recent[h]!));
  return { perHour, perDay: perHour.reduce((a, n) => a + n, 0) };
}

/** Weights of the hours around each hour (−2 … +2): a day's dozen changes say when the busy hours are, not which single hour. */
const KERNEL = [1, 2, 3, 2, 1].map((k) => k / 9);

/** Each hour's count spread over its neighbours (circular: 23:00 neighbours 00:00); the day's total is kept. */
function smoothed(counts: readonly number[]): number[] {
  return counts.map((_, h) => KERNEL.reduce((a, k, i) => a + k * counts[(h + i - 2 + 24) % 24]!, 0));
}

/** Changes expected between two instants (epoch ms), hour by hour of the day. */
export function changesBetween(rates: ChangeRates, from: number, to: number): number {
  let total = 0;
  for (let t = from; t < to;) {
    const hourEnd = Math.min(to, Math.floor(t / HOUR_MS) * HOUR_MS + HOUR_MS);
    total += (rates.perHour[new Date(t).getUTCHours()]! * (hourEnd - t)) / HOUR_MS;
    t = hourEnd;
  }
  return total;
}
