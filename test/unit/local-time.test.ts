import { describe, expect, it } from 'vitest';
import {
  clockOf,
  contactZone,
  isZone,
  minutesOf,
  nextLocal,
  quietUntil,
} from '../../src/domain/core/local-time.ts';

/** Wall clocks in IANA zones (issue 50: campaigns at each recipient's local time, quiet hours). */

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('local time', () => {
  it('finds the next moment a local time comes round, in each zone', () => {
    const now = at('2026-12-07T12:00:00Z');
    // 09:00 in Tokyo (UTC+9) today was 00:00 UTC: tomorrow's
    expect(iso(nextLocal(now, 'Asia/Tokyo', 9 * 60))).toBe('2026-12-08T00:00:00.000Z');
    // 09:00 in New York (UTC-5 in December) is 14:00 UTC today
    expect(iso(nextLocal(now, 'America/New_York', 9 * 60))).toBe('2026-12-07T14:00:00.000Z');
    expect(iso(nextLocal(now, 'Europe/Berlin', 13 * 60))).toBe('2026-12-07T12:00:00.000Z');
    expect(iso(nextLocal(now, 'Asia/Kolkata', 18 * 60 + 30))).toBe('2026-12-07T13:00:00.000Z');
    expect(iso(nextLocal(now, 'UTC', 11 * 60 + 59))).toBe('2026-12-08T11:59:00.000Z');
  });

  it('follows daylight saving: 09:00 in Berlin is 07:00 UTC in summer, 08:00 in winter', () => {
    expect(iso(nextLocal(at('2026-07-01T00:00:00Z'), 'Europe/Berlin', 9 * 60))).toBe(
      '2026-07-01T07:00:00.000Z',
    );
    // the night the clocks go back (25 October 2026): the next 09:00 is already winter time
    expect(iso(nextLocal(at('2026-10-25T00:30:00Z'), 'Europe/Berlin', 9 * 60))).toBe(
      '2026-10-25T08:00:00.000Z',
    );
  });

  it('holds quiet hours that span midnight until they end, and lets other times pass', () => {
    const quiet = { from: 21 * 60, to: 8 * 60 };
    // 22:30 in Berlin (21:30 UTC): quiet until 08:00 Berlin, 07:00 UTC the next day
    expect(iso(quietUntil(at('2026-12-07T21:30:00Z'), 'Europe/Berlin', quiet) as number)).toBe(
      '2026-12-08T07:00:00.000Z',
    );
    // 06:00 in Berlin: quiet until 08:00 the same day
    expect(iso(quietUntil(at('2026-12-08T05:00:00Z'), 'Europe/Berlin', quiet) as number)).toBe(
      '2026-12-08T07:00:00.000Z',
    );
    expect(quietUntil(at('2026-12-08T12:00:00Z'), 'Europe/Berlin', quiet)).toBeNull();
    expect(quietUntil(at('2026-12-08T12:00:00Z'), 'Europe/Berlin', { from: 12 * 60, to: 14 * 60 })).toBe(
      at('2026-12-08T13:00:00Z'),
    );
    expect(quietUntil(at('2026-12-08T12:00:00Z'), 'Europe/Berlin', null)).toBeNull();
  });

  it('reads zones and clock times, refusing what is not one', () => {
    expect(isZone('Europe/Berlin')).toBe(true);
    expect(isZone('Mars/Olympus')).toBe(false);
    expect(contactZone({ timezone: 'Mars/Olympus' }, 'Asia/Tokyo')).toBe('Asia/Tokyo');
    expect(contactZone({ timezone: 'America/Chicago' }, 'Asia/Tokyo')).toBe('America/Chicago');
    expect(minutesOf('09:30')).toBe(570);
    for (const bad of ['9:30', '24:00', '12:60', 930, null]) expect(minutesOf(bad)).toBeNull();
    expect(clockOf(570)).toBe('09:30');
  });
});
