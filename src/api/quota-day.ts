import { DateTime } from 'luxon';
import { ConfigError } from '../core/errors.js';

/**
 * The daily quota resets at midnight in a configured zone (A15). Days are compared as
 * yyyy-mm-dd strings in that zone, so a restart on the same local day resumes the count.
 */
function inZone(now: number, zone: string): DateTime {
  const dt = DateTime.fromMillis(now, { zone });
  if (!dt.isValid) {
    throw new ConfigError(`quota_reset_time_zone: "${zone}" is not a known IANA time zone (for example UTC or Europe/Berlin)`);
  }
  return dt;
}

/** The quota day (yyyy-mm-dd in the zone) that `now` falls in. */
export function quotaDay(now: number, zone: string): string {
  return inZone(now, zone).toISODate()!;
}

/** The next midnight in the zone after `now`, as epoch milliseconds. */
export function nextQuotaReset(now: number, zone: string): number {
  return inZone(now, zone).startOf('day').plus({ days: 1 }).toMillis();
}

/** Checks a zone name once, at configuration time, so a typo is a config error not a crash mid-run. */
export function assertTimeZone(zone: string): void {
  inZone(0, zone);
}
