import { describe, expect, it } from 'vitest';
import { parseNaturalTime } from '../../src/domain/core/natural-time.ts';
import { checkScheduledAt } from '../../src/domain/emails/validate.ts';

/** `scheduled_at` as a person writes it (issue 35: Resend takes "in 1 hour"; so do /v1 and /resend). */

const now = new Date('2026-11-27T10:15:00Z');
const at = (text: string) => parseNaturalTime(text, now)?.toISOString() ?? null;

describe('a time as a person says it', () => {
  it.each([
    ['in 1 hour', '2026-11-27T11:15:00.000Z'],
    ['in an hour', '2026-11-27T11:15:00.000Z'],
    ['in 30 minutes', '2026-11-27T10:45:00.000Z'],
    ['in 2 days', '2026-11-29T10:15:00.000Z'],
    ['In 1 Week', '2026-12-04T10:15:00.000Z'],
    ['in 90 min', '2026-11-27T11:45:00.000Z'],
    ['tomorrow', '2026-11-28T09:00:00.000Z'],
    ['tomorrow at 9am', '2026-11-28T09:00:00.000Z'],
    ['tomorrow at 5:30 pm', '2026-11-28T17:30:00.000Z'],
    ['today at 17:45', '2026-11-27T17:45:00.000Z'],
    ['now', '2026-11-27T10:15:00.000Z'],
  ])('%s is %s (UTC)', (text, iso) => expect(at(text)).toBe(iso));

  it.each([
    'in 1 fortnight',
    'tomorrow at 25:00',
    'today at 13pm',
    'next tuesday',
    'in -1 hour',
    'soon',
  ])('reads nothing from %s', (text) => expect(at(text)).toBeNull());

  it('is taken by scheduled_at beside ISO 8601, with the same 30-day bound and a clear refusal', () => {
    expect(checkScheduledAt('in 2 hours', now)?.toISOString()).toBe('2026-11-27T12:15:00.000Z');
    expect(checkScheduledAt('2026-11-28T08:00:00Z', now)?.toISOString()).toBe('2026-11-28T08:00:00.000Z');
    expect(() => checkScheduledAt('in 40 days', now)).toThrow(/at most 30 days ahead/);
    expect(() => checkScheduledAt('next tuesday', now)).toThrow(
      /ISO 8601 date-time .* or a time such as "in 1 hour"/,
    );
  });
});
