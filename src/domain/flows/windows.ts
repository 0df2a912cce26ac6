import { localTime, zonedHour } from '../core/local-time.ts';

/** A contact's zone, as the wait steps read it (core/local-time.ts). */
export { contactZone } from '../core/local-time.ts';

import type { WaitWindow } from './definition.ts';

/**
 * Time-of-day windows in a contact's time zone, for `wait` steps with a `window`: the next moment
 * inside [from_hour, to_hour) on the allowed week days (the zone arithmetic is core/local-time.ts).
 */

/**
 * The first moment at or after `now` inside the window, in the zone: `now` itself when it is inside
 * already. Looks at most eight days ahead (every allowed day recurs within a week).
 */
export function nextInWindow(now: Date, window: WaitWindow, zone: string): Date {
  const days = window.days ?? [0, 1, 2, 3, 4, 5, 6];
  const t = localTime(zone, now.getTime());
  if (days.includes(t.weekday) && t.hour >= window.from_hour && t.hour < window.to_hour) return now;
  for (let k = 0; k <= 8; k++) {
    const date = new Date(Date.UTC(t.year, t.month - 1, t.day + k));
    if (!days.includes(date.getUTCDay())) continue;
    const start = zonedHour(
      zone,
      date.getUTCFullYear(),
      date.getUTCMonth() + 1,
      date.getUTCDate(),
      window.from_hour,
    );
    if (start > now.getTime()) return new Date(start);
  }
  // unreachable with a valid window; a day later is a safe answer
  return new Date(now.getTime() + 86_400_000);
}
