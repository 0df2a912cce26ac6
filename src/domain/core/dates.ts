/**
 * An ISO 8601 date (`2026-11-01`) or date-time (`2026-11-01T09:00:00Z`) with a year from 0001 to
 * 9999, as a Date; otherwise null. JavaScript accepts six-digit years that PostgreSQL cannot store,
 * and days a month does not have (2026-02-30 becomes March 2nd; issue 47), so every date a request
 * carries is read by this one rule: a day of the calendar, a time of day from 00:00 to 23:59:59.
 */
export function parseIsoDate(value: unknown, opts: { timeRequired?: boolean } = {}): Date | null {
  if (typeof value !== 'string') return null;
  const shape = opts.timeRequired ? /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/ : /^(?!0000)\d{4}-\d{2}-\d{2}/;
  if (!shape.test(value) || !onTheCalendar(value)) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Whether the text's leading YYYY-MM-DD is a day of the calendar and a time after it (if any) a time of day. */
function onTheCalendar(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(value);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (month < 1 || month > 12 || day < 1) return false;
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) return false;
  if (m[4] === undefined) return true;
  return Number(m[4]) <= 23 && Number(m[5]) <= 59 && Number(m[6] ?? 0) <= 59;
}
