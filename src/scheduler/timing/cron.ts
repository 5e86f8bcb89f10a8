import { CronTime } from 'cron';
import { DateTime } from 'luxon';

/**
 * A cron expression in a time zone, evaluated against an injected clock's instants rather
 * than the cron package's own timers, so tests drive it with fake time.
 */
export class Cron {
  private readonly time: CronTime;

  constructor(
    readonly expression: string,
    readonly timeZone: string,
  ) {
    this.time = new CronTime(expression, timeZone);
  }

  /** The first fire time strictly after `after` (epoch ms). */
  next(after: number): number {
    return this.time.getNextDateFrom(new Date(after), this.timeZone).toMillis();
  }

  /** Fire times in (from, to]. Bounded so a per-second schedule cannot run away. */
  between(from: number, to: number, max = 100_000): number[] {
    const out: number[] = [];
    let t = from;
    while (out.length < max) {
      t = this.next(t);
      if (t > to) break;
      out.push(t);
    }
    return out;
  }

  toString(): string {
    return `${this.expression} (${this.timeZone})`;
  }
}

const FIELD_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0, 59],
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12],
  [0, 7],
];
const NAMES: ReadonlyArray<readonly string[] | null> = [
  null,
  null,
  null,
  null,
  ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
  ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'],
];

/** The values a cron field allows, or null for a form this reader leaves to the cron package. */
function fieldValues(text: string, [min, max]: readonly [number, number], names: readonly string[] | null): Set<number> | null {
  const value = (t: string): number => {
    const i = names ? names.indexOf(t.toUpperCase()) : -1;
    return i >= 0 ? i + min : Number(t);
  };
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^(\*|([0-9A-Za-z]+)(?:-([0-9A-Za-z]+))?)(?:\/(\d+))?$/.exec(part);
    if (!m) return null;
    const step = m[4] === undefined ? 1 : Number(m[4]);
    const from = m[1] === '*' ? min : value(m[2]!);
    const to = m[1] === '*' || (m[3] === undefined && m[4] !== undefined) ? max : value(m[3] ?? m[2]!);
    if (!Number.isInteger(from) || !Number.isInteger(to) || step < 1 || from < min || to > max || from > to) return null;
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

/**
 * How many times a schedule fires in (from, to]: what `new Cron(e, zone).between(from, to).length`
 * counts, read minute by minute from the expression instead of fire by fire through the cron
 * package, which takes about a millisecond a fire (a week of a five-minute schedule is two
 * seconds; of an every-second one, ten minutes). A day and a month both restricted match when
 * either does, as cron reads them. Around a clock change it may differ from the cron package by
 * the fires that package moves out of a skipped hour. Forms it does not read (`L`, `#`, `?`) are
 * counted by the cron package.
 */
export function countFires(expression: string, timeZone: string, from: number, to: number): number {
  const parts = expression.trim().split(/\s+/);
  const fields = parts.length === 5 ? ['0', ...parts] : parts;
  const sets = fields.length === 6 ? fields.map((f, i) => fieldValues(f, FIELD_RANGES[i]!, NAMES[i]!)) : null;
  if (!sets || sets.some((x) => x === null)) return new Cron(expression, timeZone).between(from, to).length;
  const [seconds, minutes, hours, days, months, weekdays] = sets as Array<Set<number>>;
  if (weekdays!.has(7)) weekdays!.add(0);
  const dayRestricted = fields[3] !== '*';
  const weekdayRestricted = fields[5] !== '*';
  let count = 0;
  let offset = 0;
  let offsetUntil = -Infinity;
  // Whole minutes from the one holding `from`; the zone's offset is looked up every quarter hour
  // (offsets change on a quarter hour).
  for (let t = Math.floor(from / 60_000) * 60_000; t <= to; t += 60_000) {
    if (t >= offsetUntil) {
      offset = DateTime.fromMillis(t, { zone: timeZone }).offset * 60_000;
      offsetUntil = t - (t % 900_000) + 900_000;
    }
    const local = new Date(t + offset);
    if (!minutes!.has(local.getUTCMinutes()) || !hours!.has(local.getUTCHours()) || !months!.has(local.getUTCMonth() + 1)) continue;
    const day = days!.has(local.getUTCDate());
    const weekday = weekdays!.has(local.getUTCDay());
    if (dayRestricted && weekdayRestricted ? !(day || weekday) : !(day && weekday)) continue;
    for (const s of seconds!) {
      const at = t + s * 1000;
      if (at > from && at <= to) count++;
    }
  }
  return count;
}
