import { DateTime } from 'luxon';
import { ConfigError } from '../core/errors.js';
import { headerValue, type HeaderSource } from './backoff.js';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
/** The longest `X-Rate-Limit-Reset` read as the daily reset: a day, and an hour for a clock change. */
const LONGEST_RESET_MS = 25 * 3_600_000;

/**
 * When the daily quota resets (A15). By configuration, at midnight in `quota_reset_time_zone`
 * (UTC by default); where the server sends `X-Rate-Limit-Reset`, at the instant it names.
 * Days are keyed by yyyy-mm-dd strings in the zone, so a restart on the same day resumes the
 * count, and every process on a warehouse keys a day alike.
 */
function inZone(now: number, zone: string): DateTime {
  const dt = DateTime.fromMillis(now, { zone });
  if (!dt.isValid) {
    throw new ConfigError(`quota_reset_time_zone: "${zone}" is not a known IANA time zone (for example UTC or Europe/Berlin)`);
  }
  return dt;
}

/** The date (yyyy-mm-dd in the zone) that `now` falls on: the quota day's key when it resets at the zone's midnight. */
export function quotaDay(now: number, zone: string): string {
  return inZone(now, zone).toISODate()!;
}

/** The next midnight in the zone after `now`, as epoch milliseconds. */
export function nextQuotaReset(now: number, zone: string): number {
  return inZone(now, zone).startOf('day').plus({ days: 1 }).toMillis();
}

/**
 * When the quota day that `now` falls in began (epoch ms): a server's day began a whole day
 * before its reset; a zone's, at its midnight (23 or 25 hours before its end on a clock change).
 */
export function quotaDayStart(now: number, zone: string, day: QuotaDay): number {
  return day.fromServer ? day.resetsAt - DAY_MS : inZone(now, zone).startOf('day').toMillis();
}

/** Checks a zone name once, at configuration time, so a typo is a config error not a crash mid-run. */
export function assertTimeZone(zone: string): void {
  inZone(0, zone);
}

/** The quota day a request at some instant is counted in. */
export interface QuotaDay {
  /** Its key in `_svcsync_usage` (yyyy-mm-dd). */
  key: string;
  /** When it ends and the count starts again (epoch ms). */
  resetsAt: number;
  /** The reset is the server's (`X-Rate-Limit-Reset`), not midnight in the configured zone. */
  fromServer: boolean;
}

/**
 * The quota day at `now`. Without a reset instant from the server, the day ends at midnight in
 * `zone` and its key is the date there. With one (the reset of any day the server told), days
 * end at that instant plus whole days, and the key is the date in `zone` of the day's middle
 * (twelve hours before its end). That key is the zone's own date when the server resets at the
 * zone's midnight, so a configuration that was right keeps its rows; and it does not move when
 * the told instant moves by minutes (latency, rounding), so processes that heard the header at
 * different moments still count in one row. The day rolls when `now` passes its end.
 */
export function quotaDayAt(now: number, zone: string, serverReset: number | null): QuotaDay {
  if (serverReset === null) return { key: quotaDay(now, zone), resetsAt: nextQuotaReset(now, zone), fromServer: false };
  const resetsAt = serverReset + (Math.floor((now - serverReset) / DAY_MS) + 1) * DAY_MS;
  return { key: quotaDay(resetsAt - DAY_MS / 2, zone), resetsAt, fromServer: true };
}

/** Two reset instants this close name the same reset (the header counts whole seconds after a trip over the network). */
export function sameReset(a: number, b: number): boolean {
  return Math.abs(a - b) <= 2 * MINUTE_MS;
}

/**
 * The daily reset instant an answer tells in `X-Rate-Limit-Reset` (seconds from now, A17), to
 * the nearest minute, or null. Not read: a value that is not a number of seconds, more than a
 * day and an hour away, or no longer than the per-minute window (a count to the end of the
 * minute, not of the day); nor any of the answer's rate-limit headers when its
 * `X-Rate-Limit-Limit` is no larger than the per-minute limit (they describe the minute).
 */
export function serverQuotaReset(headers: HeaderSource, now: number, window: { perMinute: number; windowMs: number }): number | null {
  const text = headerValue(headers, 'x-rate-limit-reset')?.trim();
  if (!text || !/^\d+(\.\d+)?$/.test(text)) return null;
  const limit = headerValue(headers, 'x-rate-limit-limit')?.trim();
  if (limit && /^\d+$/.test(limit) && Number(limit) <= window.perMinute) return null;
  const ms = Number(text) * 1000;
  if (ms <= window.windowMs || ms > LONGEST_RESET_MS) return null;
  return Math.round((now + ms) / MINUTE_MS) * MINUTE_MS;
}

/** How a day's end reads in a message: the server's instant, or midnight in the zone. */
export function describeReset(day: Pick<QuotaDay, 'fromServer' | 'resetsAt'>, zone: string): string {
  return day.fromServer ? `at ${new Date(day.resetsAt).toISOString()} (the server's X-Rate-Limit-Reset)` : `at midnight ${zone}`;
}
