/**
 * An ISO 8601 date (`2026-11-01`) or date-time (`2026-11-01T09:00:00Z`) with a year from 0001 to
 * 9999, as a Date; otherwise null. JavaScript accepts six-digit years that PostgreSQL cannot store,
 * so every date a request carries is read by this one rule.
 */
export function parseIsoDate(value: unknown, opts: { timeRequired?: boolean } = {}): Date | null {
  if (typeof value !== 'string') return null;
  const shape = opts.timeRequired ? /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/ : /^(?!0000)\d{4}-\d{2}-\d{2}/;
  if (!shape.test(value)) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}
