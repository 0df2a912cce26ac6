/**
 * Wall clocks in IANA time zones, computed with the platform's time zone data (Intl), so
 * daylight-saving changes follow each zone's own rules: a contact's zone (`properties.timezone`,
 * else the project's), the next moment a local time comes round, and quiet hours.
 */

const MAX_ZONES = 500;
const formatters = new Map<string, Intl.DateTimeFormat | null>();

/** The formatter of an IANA zone, or null when the name is not a zone this runtime knows. */
export function formatterOf(zone: string): Intl.DateTimeFormat | null {
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

/** The zone a contact's `properties.timezone` names when it is a valid IANA zone, else `fallback` (the project's). */
export function contactZone(properties: Record<string, unknown>, fallback = 'UTC'): string {
  const zone = properties.timezone;
  return typeof zone === 'string' && zone.length <= 64 && formatterOf(zone) ? zone : fallback;
}

export interface LocalTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: number;
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

export function localTime(zone: string, at: number): LocalTime {
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
export function zonedHour(zone: string, year: number, month: number, day: number, hour: number): number {
  const wall = Date.UTC(year, month - 1, day, hour);
  // the offset near the answer, found from a first guess (they differ only around a DST change)
  return wall - offsetAt(zone, wall - offsetAt(zone, wall));
}

/** Whether `zone` is an IANA zone this runtime knows. */
export function isZone(zone: unknown): zone is string {
  return typeof zone === 'string' && zone.length <= 64 && formatterOf(zone) !== null;
}

/** `HH:MM` (24-hour) as minutes after midnight, or null when it is not one. */
export function minutesOf(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(value);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

/** Minutes after midnight as `HH:MM`. */
export function clockOf(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

/** The instant the local wall clock reads `minutes` on the day `k` days after `t`'s (a skipped time maps after the gap). */
function zonedMinute(zone: string, t: LocalTime, k: number, minutes: number): number {
  const date = new Date(Date.UTC(t.year, t.month - 1, t.day + k));
  const hour = zonedHour(
    zone,
    date.getUTCFullYear(),
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    Math.floor(minutes / 60),
  );
  return hour + (minutes % 60) * 60_000;
}

/** The first instant at or after `at` when the zone's wall clock reads `minutes` after midnight. */
export function nextLocal(at: number, zone: string, minutes: number): number {
  const t = localTime(zone, at);
  for (let k = 0; k <= 2; k++) {
    const instant = zonedMinute(zone, t, k, minutes);
    if (instant >= at) return instant;
  }
  return at + 86_400_000;
}

/** Quiet hours: no marketing from `from` until `to` (minutes after midnight, local; `from` > `to` spans midnight). */
export interface QuietHours {
  from: number;
  to: number;
}

/** When the quiet hours around `at` end in the zone (the instant to wait for), or null when `at` is outside them. */
export function quietUntil(at: number, zone: string, quiet: QuietHours | null): number | null {
  if (!quiet || quiet.from === quiet.to) return null;
  const t = localTime(zone, at);
  const now = t.hour * 60 + t.minute;
  const inside =
    quiet.from < quiet.to ? now >= quiet.from && now < quiet.to : now >= quiet.from || now < quiet.to;
  return inside ? nextLocal(at, zone, quiet.to) : null;
}
