import type { ColumnType } from '../catalog/types.js';

/**
 * One converter per column type, from whatever the API sent to what the warehouse stores.
 * They never throw: a value that cannot be kept becomes null and the converter leaves a
 * message in the `Note` it is handed, which the normalizer turns into a warning naming
 * the table, record and field. A converter leaves the note alone when all is well, so
 * one note object serves a whole record without allocating per value.
 */

export type SqlValue = string | number | boolean | null;

/** Where a converter explains a value it dropped or doubts. */
export interface Note {
  message: string | null;
}

export type Converter = (value: unknown, note: Note) => SqlValue;

const PLAIN_DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;
const INTEGRAL_DECIMAL = /^[+-]?\d+(?:\.0*)?$/;
const HOURS_MINUTES = /^([+-]?)(\d+):(\d{1,2})(?::(\d{1,2}))?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const PERCENTAGE = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*%$/;
// Offsets come as +0530, +05:30, -0800, Z, or not at all; seconds and fractions are optional.
const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return value.toString();
  try {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 40 ? `${text.slice(0, 40)}…` : text;
  } catch {
    return typeof value;
  }
}

function blank(text: string): boolean {
  return text.length === 0 || text.trim().length === 0;
}

/** JSON text of any value; bigints (which JSON.stringify rejects) become their digits. */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch {
    return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'null';
  }
}

/** Ids are text exactly as sent; a JSON number becomes its decimal digits. */
export const toId: Converter = (value, note) => {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') {
    if (Number.isInteger(value)) {
      if (Number.isSafeInteger(value)) return String(value);
      note.message = `id ${describe(value)} arrived as a number beyond 2^53; its last digits may not be the ones sent`;
      return BigInt(value).toString();
    }
    if (!Number.isFinite(value)) {
      note.message = `id ${String(value)} is not a number that can be kept`;
      return null;
    }
    note.message = `id ${describe(value)} is not a whole number; kept as its JSON text`;
    return JSON.stringify(value);
  }
  if (typeof value === 'bigint') return value.toString();
  note.message = `id ${describe(value)} is not a string or number; kept as its JSON text`;
  return jsonText(value);
};

export const toText: Converter = (value, note) => {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  note.message = `expected text, got ${Array.isArray(value) ? 'an array' : 'an object'}; kept as JSON text`;
  return jsonText(value);
};

export const toInteger: Converter = (value, note) => {
  if (typeof value === 'number') {
    if (Number.isInteger(value)) return value;
    note.message = `${describe(value)} is not a whole number`;
    return null;
  }
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    if (blank(value)) return null;
    const text = value.trim();
    if (INTEGRAL_DECIMAL.test(text)) {
      const n = Number(text);
      if (Number.isSafeInteger(n)) return n;
    }
    note.message = `${describe(value)} is not a whole number`;
    return null;
  }
  if (typeof value === 'bigint' && value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)) {
    return Number(value);
  }
  note.message = `${describe(value)} is not a whole number`;
  return null;
};

export const toNumber: Converter = (value, note) => {
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return value;
    note.message = `${String(value)} is not a finite number`;
    return null;
  }
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    if (blank(value)) return null;
    const text = value.trim();
    if (PLAIN_DECIMAL.test(text)) return Number(text);
    note.message = `${describe(value)} is not a number`;
    return null;
  }
  if (typeof value === 'bigint') return Number(value);
  note.message = `${describe(value)} is not a number`;
  return null;
};

/** Hours as a number; the API also sends "hh:mm" text ("12:30" is 12.5, "0:05" is 5/60). */
export const toHours: Converter = (value, note) => {
  if (typeof value === 'string') {
    if (blank(value)) return null;
    const text = value.trim();
    const m = HOURS_MINUTES.exec(text);
    if (m) {
      const minutes = Number(m[3]);
      const seconds = m[4] === undefined ? 0 : Number(m[4]);
      if (minutes < 60 && seconds < 60) {
        const hours = Number(m[2]) + minutes / 60 + seconds / 3600;
        return m[1] === '-' ? -hours : hours;
      }
    } else if (PLAIN_DECIMAL.test(text)) {
      return Number(text);
    }
    note.message = `${describe(value)} is neither hours nor hh:mm`;
    return null;
  }
  return toNumber(value, note);
};

export const toBoolean: Converter = (value, note) => {
  if (typeof value === 'boolean') return value;
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    if (blank(value)) return null;
    const text = value.trim().toLowerCase();
    if (text === 'true' || text === '1') return true;
    if (text === 'false' || text === '0') return false;
  } else if (value === 1 || value === 0) {
    return value === 1;
  }
  note.message = `${describe(value)} is not a boolean`;
  return null;
};

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function validDate(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

/** yyyy-mm-dd, kept as text in that form. */
export const toDate: Converter = (value, note) => {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    if (blank(value)) return null;
    const m = DATE.exec(value);
    if (m && validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return value;
    // A timestamp where a date belongs still names the day it was written on.
    const head = DATE.exec(value.slice(0, 10));
    if (head && validDate(Number(head[1]), Number(head[2]), Number(head[3])) && parseInstant(value) !== null) {
      note.message = `${describe(value)} is a timestamp where a date was expected; kept its date`;
      return value.slice(0, 10);
    }
  }
  note.message = `${describe(value)} is not a yyyy-mm-dd date`;
  return null;
};

/**
 * Set by parseInstantText when the text carried no offset (read as UTC); a flag rather than a
 * returned object so the hot path allocates nothing.
 */
let lastHadNoOffset = false;

function digits(text: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * The shape every API timestamp has (`2026-11-20T10:15:30+0530`, fraction and colon
 * optional, or Z) read without a regex: two of these per record add up at 20,000 records
 * a second. Anything else returns NaN and goes the regex's way.
 */
function fastInstant(text: string): number {
  const length = text.length;
  if (length < 20 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 84) return Number.NaN;
  if (text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return Number.NaN;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (
    year < 100 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > 28 ||
    hour < 0 ||
    hour > 23 ||
    minute < 0 ||
    minute > 59 ||
    second < 0 ||
    second > 59
  ) {
    return Number.NaN;
  }
  let at = 19;
  let millis = 0;
  if (text.charCodeAt(at) === 46) {
    at++;
    const start = at;
    let scale = 100;
    while (at < length) {
      const d = text.charCodeAt(at) - 48;
      if (d < 0 || d > 9) break;
      millis += d * scale;
      scale /= 10;
      at++;
    }
    if (at === start) return Number.NaN;
    millis = Math.floor(millis);
  }
  let offset = 0;
  const sign = text.charCodeAt(at);
  if (sign === 90 && at + 1 === length) {
    offset = 0;
  } else if ((sign === 43 || sign === 45) && (at + 5 === length || (at + 6 === length && text.charCodeAt(at + 3) === 58))) {
    const oh = digits(text, at + 1, 2);
    const om = digits(text, length - 2, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return Number.NaN;
    offset = (sign === 45 ? -1 : 1) * (oh * 60 + om);
  } else {
    return Number.NaN;
  }
  return Date.UTC(year, month - 1, day, hour, minute, second, millis) - offset * 60_000;
}

function parseInstantText(text: string): number | null {
  const fast = fastInstant(text);
  if (!Number.isNaN(fast)) {
    lastHadNoOffset = false;
    return fast;
  }
  const m = INSTANT.exec(text.trim());
  if (!m) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = m[4] === undefined ? 0 : Number(m[4]);
  const minute = m[5] === undefined ? 0 : Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (!validDate(year, month, day) || hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  lastHadNoOffset = m[8] === undefined && m[9] === undefined;
  if (m[9] !== undefined) {
    const oh = Number(m[10]);
    const om = m[11] === undefined ? 0 : Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const local = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  // Date.UTC maps years 0-99 onto 1900-1999.
  const fixed = year < 100 ? new Date(local).setUTCFullYear(year) : local;
  return fixed - offsetMinutes * 60_000;
}

/**
 * The instant a timestamp names, in epoch milliseconds, or null when it is not one.
 * Offsets may be +0530, +05:30, -0800 or Z; text without an offset is read as UTC.
 * Cursors compare these numbers, never the text.
 */
export function parseInstant(text: string): number | null {
  return parseInstantText(text);
}

/** 1000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: years of four digits, as `isoUtc`'s arithmetic writes them. */
const FOUR_DIGIT_YEARS = [Date.UTC(1000, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999)] as const;

/** The char code of the digit of `n` at `unit` (1000, 100, 10 or 1). */
const digit = (n: number, unit: number): number => 48 + (Math.floor(n / unit) % 10);

/**
 * Epoch ms as `Date.prototype.toISOString` writes them (`2026-11-20T04:45:30.000Z`), by
 * arithmetic: a `Date` and its formatting cost about two and a half times as much, and every
 * timestamp of every record written goes through here. The text is made in one piece from its
 * char codes: joined from parts, it would be a tree of strings for the collector to follow.
 * Years outside 1000-9999, and fractions of a ms, take `toISOString`.
 */
export function isoUtc(ms: number): string {
  if (!(Number.isInteger(ms) && ms >= FOUR_DIGIT_YEARS[0] && ms <= FOUR_DIGIT_YEARS[1])) return new Date(ms).toISOString();
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  // Days since 1970-01-01 to a civil date, over 400-year eras of March-based years (H. Hinnant, "chrono-compatible date algorithms").
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const leapDays = Math.floor(dayOfEra / 1460) - Math.floor(dayOfEra / 36_524) + Math.floor(dayOfEra / 146_096);
  const yearOfEra = Math.floor((dayOfEra - leapDays) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1000);
  const milli = rest - second * 1000;
  // yyyy-mm-ddThh:mm:ss.sssZ, the separators as char codes (45 '-', 84 'T', 58 ':', 46 '.', 90 'Z').
  // prettier-ignore
  return String.fromCharCode(
    digit(year, 1000), digit(year, 100), digit(year, 10), digit(year, 1), 45, digit(month, 10), digit(month, 1), 45,
    digit(day, 10), digit(day, 1), 84, digit(hour, 10), digit(hour, 1), 58, digit(minute, 10), digit(minute, 1), 58,
    digit(second, 10), digit(second, 1), 46, digit(milli, 100), digit(milli, 10), digit(milli, 1), 90,
  );
}

/** An instant as ISO-8601 UTC text ending in Z (`2026-11-20T04:45:30.000Z`). */
export const toTimestamp: Converter = (value, note) => {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    if (blank(value)) return null;
    const ms = parseInstantText(value);
    if (ms !== null && Number.isFinite(ms)) {
      if (lastHadNoOffset) note.message = `${describe(value)} has no UTC offset; read as UTC`;
      return isoUtc(ms);
    }
  }
  note.message = `${describe(value)} is not a timestamp`;
  return null;
};

/** Any value as JSON text; null stays null. */
export const toJson: Converter = (value) => (value === null || value === undefined ? null : jsonText(value));

export const CONVERTERS: Readonly<Record<ColumnType, Converter>> = {
  id: toId,
  text: toText,
  integer: toInteger,
  number: toNumber,
  hours: toHours,
  boolean: toBoolean,
  date: toDate,
  timestamp: toTimestamp,
  json: toJson,
};

/** One value through its type's converter, with the warning if any (for callers outside the normalizer and tests). */
export function convertValue(type: ColumnType, value: unknown): { value: SqlValue; warning: string | null } {
  const note: Note = { message: null };
  const converted = CONVERTERS[type](value, note);
  return { value: converted, warning: note.message };
}

export interface Discount {
  /** The discount as sent, as text ("12.5%", "25"). */
  text: string | null;
  amount: number | null;
  percentage: number | null;
}

/**
 * A discount is an amount or a percentage written as text. The text is kept, and the one
 * it is parsed into the matching number: 25 or "25.00" is an amount, "12.5%" a percentage.
 */
export function parseDiscount(value: unknown, note: Note): Discount {
  if (value === null || value === undefined) return { text: null, amount: null, percentage: null };
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return { text: String(value), amount: value, percentage: null };
    note.message = `discount ${String(value)} is not a finite number`;
    return { text: null, amount: null, percentage: null };
  }
  const converted = toText(value, note);
  const text = converted === null ? null : String(converted);
  if (text === null || blank(text)) return { text: null, amount: null, percentage: null };
  const trimmed = text.trim();
  const pct = PERCENTAGE.exec(trimmed);
  if (pct) return { text, amount: null, percentage: Number(pct[1]) };
  if (PLAIN_DECIMAL.test(trimmed)) return { text, amount: Number(trimmed), percentage: null };
  note.message ??= `discount ${describe(value)} is neither an amount nor a percentage; kept as text only`;
  return { text, amount: null, percentage: null };
}
