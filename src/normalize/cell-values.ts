import type { LogicalType } from './table-layout.js';

/**
 * A value ready for a bulk path: text and JSON as strings, bigint as number or bigint, double as
 * number, boolean, timestamps as epoch milliseconds, or null.
 */
export type CellValue = string | number | bigint | boolean | null;

/** A value, or a record, that does not fit where it goes; the shaper turns it into a rejection or a repair. */
export class Rejection extends Error {}

// 0001-01-01 .. 9999-12-31: what both backends store and print as ISO 8601.
const MIN_TIMESTAMP = -62135596800000;
const MAX_TIMESTAMP = 253402300799999;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const JSON_NUL = /(?<!\\)(?:\\\\)*\\u0000/;
// JSON.stringify writes a lone surrogate as an escape (a paired one as itself): Postgres's jsonb refuses such an escape.
const JSON_LONE_SURROGATE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;
/**
 * An ISO 8601 date or date-time: date, then optionally `T` (or a space), hours and minutes, optional seconds and
 * fraction, and an optional `Z` or UTC offset.
 */
const ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** Checks and converts one value for a column of `type`; throws a Rejection when it does not fit. */
export function cell(value: unknown, type: LogicalType, column: string, rejectNul: boolean): CellValue {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'text':
      if (typeof value === 'string') {
        if (rejectNul && value.includes('\u0000'))
          throw new Rejection(`column ${column}: text contains U+0000, which the warehouse cannot store`);
        if (!value.isWellFormed())
          throw new Rejection(
            `column ${column}: text contains an unpaired UTF-16 surrogate (half of an emoji or other character), which UTF-8 cannot store`,
          );
        return value;
      }
      if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
      throw new Rejection(`column ${column}: expected text, got ${kindOf(value)}`);
    case 'bigint':
      if (typeof value === 'number') {
        if (Number.isSafeInteger(value)) return value;
        if (Number.isInteger(value) && BigInt(value) >= INT64_MIN && BigInt(value) <= INT64_MAX) return BigInt(value);
        throw new Rejection(`column ${column}: expected a 64-bit integer, got ${value}`);
      }
      if (typeof value === 'bigint') {
        if (value >= INT64_MIN && value <= INT64_MAX) return value;
        throw new Rejection(`column ${column}: integer ${value} is out of the 64-bit range`);
      }
      throw new Rejection(`column ${column}: expected an integer, got ${kindOf(value)}`);
    case 'double':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      if (typeof value === 'bigint') return Number(value);
      throw new Rejection(`column ${column}: expected a finite number, got ${kindOf(value)}`);
    case 'boolean':
      if (typeof value === 'boolean') return value;
      throw new Rejection(`column ${column}: expected a boolean, got ${kindOf(value)}`);
    case 'timestamp': {
      let ms: number;
      if (value instanceof Date) ms = value.getTime();
      else if (typeof value === 'string') ms = parseIsoTimestamp(value);
      else throw new Rejection(`column ${column}: expected an ISO 8601 timestamp, got ${kindOf(value)}`);
      if (Number.isNaN(ms))
        throw new Rejection(
          `column ${column}: not an ISO 8601 timestamp: ${JSON.stringify(String(value).slice(0, 64))}`,
        );
      if (ms < MIN_TIMESTAMP || ms > MAX_TIMESTAMP)
        throw new Rejection(
          `column ${column}: timestamp ${JSON.stringify(String(value).slice(0, 64))} is outside years 1-9999`,
        );
      return ms;
    }
    case 'json':
      return stringifyJson(value, column, rejectNul);
  }
}

/** `value` as JSON text that the warehouse can store; throws a Rejection naming `column` when it cannot. */
export function stringifyJson(value: unknown, column: string, rejectNul: boolean): string {
  let text: string | undefined;
  try {
    // Without a replacer V8 takes its fast path; only a value holding a bigint needs the slow one.
    text = JSON.stringify(value);
  } catch {
    try {
      text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    } catch (error) {
      throw new Rejection(
        `column ${column}: value cannot be written as JSON (${error instanceof Error ? error.message : String(error)})`,
      );
    }
  }
  if (text === undefined) return 'null';
  if (rejectNul && text.includes('\\u0000') && JSON_NUL.test(text))
    throw new Rejection(`column ${column}: JSON contains U+0000, which the warehouse cannot store`);
  if (text.includes('\\ud') && JSON_LONE_SURROGATE.test(text)) {
    throw new Rejection(
      `column ${column}: JSON contains an unpaired UTF-16 surrogate (half of an emoji or other character), which the warehouse cannot store`,
    );
  }
  return text;
}

/**
 * `_extra` as JSON. A string the warehouse cannot store (an unpaired surrogate, U+0000 on
 * Postgres) is kept with its JSON escape written out (`\\ud83d` stands for the lone surrogate),
 * so the value as received can still be read back.
 */
export function extraJson(extra: Record<string, unknown>, rejectNul: boolean): string {
  try {
    return stringifyJson(extra, '_extra', rejectNul);
  } catch (error) {
    if (!(error instanceof Rejection)) throw error;
    const text = JSON.stringify(extra, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    return text.replace(/(?<!\\)((?:\\\\)*)\\u(d[89a-f][0-9a-f]{2}|0000)/gi, '$1\\\\u$2');
  }
}

/**
 * Epoch milliseconds of an ISO 8601 date or date-time (see ISO_TIMESTAMP), NaN for anything else, including
 * impossible dates (February 30) that `Date.parse` would roll over and the free-form text it guesses at. A
 * date-time without an offset is UTC, as a date alone is, whatever the machine's time zone.
 */
export function parseIsoTimestamp(text: string): number {
  const match = ISO_TIMESTAMP.exec(text);
  if (!match) return Number.NaN;
  const [, year, month, day, hours = '0', minutes = '0', seconds = '0', fraction = '', offset = 'Z'] = match;
  const parts = [
    Number(year),
    Number(month) - 1,
    Number(day),
    Number(hours),
    Number(minutes),
    Number(seconds),
  ] as const;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  date.setUTCFullYear(parts[0], parts[1], parts[2]);
  date.setUTCHours(parts[3], parts[4], parts[5], Number(fraction.slice(0, 3).padEnd(3, '0')));
  const fields = [
    date.getUTCFullYear(),
    date.getUTCMonth(),
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
  ];
  if (fields.some((field, i) => field !== parts[i])) return Number.NaN;
  return date.getTime() - offsetMinutes(offset) * 60_000;
}

/** Minutes east of UTC of `Z`, `±hh`, `±hhmm` or `±hh:mm`; NaN when out of range. */
function offsetMinutes(offset: string): number {
  if (offset === 'Z' || offset === 'z') return 0;
  const digits = offset.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2) || '0');
  if (hours > 23 || minutes > 59) return Number.NaN;
  return (offset[0] === '-' ? -1 : 1) * (hours * 60 + minutes);
}

/** How a value is named in a rejection's reason. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.slice(0, 40))})`;
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
