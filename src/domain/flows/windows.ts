import type { WaitWindow } from './definition.ts';

/**
 * Time-of-day windows in a contact's time zone, for `wait` steps with a `window`: the next moment
 * inside [from_hour, to_hour) on the allowed week days, computed with the platform's time zone
 * data (Intl), so daylight-saving changes are handled by the zone's own rules.
 */

const MAX_ZONES = 500;
const formatters = new Map<string, Intl.DateTimeFormat | null>();

/** The formatter of an IANA zone, or null when the name is not a zone this runtime knows. */
function formatterOf(zone: string): Intl.DateTimeFormat | null {
  let found = formatters.get(zone);
  if (found !== undefined) return found;
  try {
    found = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    });
  } catch {
    found = null;
  }
  if (formatters.size >= MAX_ZONES) formatters.delete(formatters.keys().next().value as string);
  formatters.set(zone, found);
  return found;
}

/** The zone a contact's `properties.timezone` names when it is a valid IANA zone, else UTC. */
export function contactZone(properties: Record<string, unknown>): string {
  const zone = properties.timezone;
  return typeof zone === 'string' && zone.length <= 64 && formatterOf(zone) ? zone : 'UTC';
}

interface LocalTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: number;
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

function localTime(zone: string, at: number): LocalTime {
  const parts = (formatterOf(zone) as Intl.DateTimeFormat).formatToParts(new Date(at));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '0';
  return {
    year: Number(part('year')),
    month: Number(part('month')),
    day: Number(part('day')),
    hour: Number(part('hour')) % 24,
    minute: Number(part('minute')),
    second: Number(part('second')),
    weekday: WEEKDAYS.indexOf(part('weekday')),
  };
}

/** The zone's offset from UTC at an instant, in milliseconds (local wall clock minus UTC). */
function offsetAt(zone: string, at: number): number {
  const t = localTime(zone, at);
  const wall = Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
  return wall - Math.floor(at / 1000) * 1000;
}

/** The instant a local wall-clock hour starts in the zone (a skipped hour maps just after the gap). */
function zonedHour(zone: string, year: number, month: number, day: number, hour: number): number {
  const wall = Date.UTC(year, month - 1, day, hour);
  // the offset near the answer, found from a first guess (they differ only around a DST change)
  return wall - offsetAt(zone, wall - offsetAt(zone, wall));
}

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
