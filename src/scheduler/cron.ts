import { CronTime } from 'cron';

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
