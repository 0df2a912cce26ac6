import { describe, expect, it } from 'vitest';
import { parseIsoDate } from '../../src/domain/core/dates.ts';

/**
 * Every date a request carries is read by parseIsoDate (issue 47, item 7e): JavaScript rolls a day
 * the month does not have over into the next month (2026-02-30 is March 2nd); here it is no date.
 */
describe('parseIsoDate', () => {
  it('takes days of the calendar, leap days included, with or without a time', () => {
    for (const value of [
      '2026-02-28',
      '2028-02-29',
      '2000-02-29',
      '2026-04-30',
      '2026-12-31T23:59:59Z',
      '2026-01-31T00:00:00+05:00',
      '0001-01-01',
    ])
      expect(parseIsoDate(value)?.toISOString(), value).toBeTypeOf('string');
    expect(parseIsoDate('2026-11-01T09:00:00Z')?.toISOString()).toBe('2026-11-01T09:00:00.000Z');
  });

  it('refuses days a month does not have and times past the end of the day, instead of rolling them over', () => {
    for (const value of [
      '2026-02-30',
      '2026-02-29',
      '1900-02-29',
      '2026-04-31',
      '2026-06-31T09:00:00Z',
      '2026-02-30T09:00:00Z',
      '2026-00-10',
      '2026-13-01',
      '2026-01-00',
      '2026-01-32',
      '2026-01-01T24:00:00Z',
      '2026-01-01T23:60:00Z',
      '0000-01-01',
    ]) {
      expect(parseIsoDate(value), value).toBeNull();
      expect(parseIsoDate(value, { timeRequired: true }), value).toBeNull();
    }
  });
});
