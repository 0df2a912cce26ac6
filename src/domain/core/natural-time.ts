/**
 * A moment written as a person says it, as Resend's `scheduled_at` takes it (issue 35): "in 1 hour",
 * "in 30 minutes", "in 2 days", "tomorrow", "tomorrow at 9am", "today at 17:30". Times of day are
 * UTC. Null when the text is none of these (the caller then expects an ISO 8601 date-time).
 */

const UNITS: Record<string, number> = {
  s: 1_000,
  sec: 1_000,
  second: 1_000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hour: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
};

/** "9am", "9:30 pm", "17:30": hours and minutes, or null. */
function timeOfDay(text: string): [number, number] | null {
  const m = /^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/.exec(text);
  if (!m) return null;
  let hours = Number(m[1]);
  const minutes = Number(m[2] ?? 0);
  if (m[3]) {
    if (hours < 1 || hours > 12) return null;
    hours = (hours % 12) + (m[3] === 'pm' ? 12 : 0);
  } else if (m[2] === undefined) return null;
  if (hours > 23 || minutes > 59) return null;
  return [hours, minutes];
}

export function parseNaturalTime(value: string, now: Date): Date | null {
  const text = value.trim().toLowerCase().replace(/\s+/g, ' ');
  if (text === 'now') return new Date(now);
  const relative = /^in (\d{1,5}|an?|one) ([a-z]+?)s?$/.exec(text);
  if (relative) {
    const unit = UNITS[relative[2]];
    if (!unit) return null;
    const n = /^\d/.test(relative[1]) ? Number(relative[1]) : 1;
    return new Date(now.getTime() + n * unit);
  }
  const day = /^(today|tomorrow)(?:,? (?:at )?(.+))?$/.exec(text);
  if (!day) return null;
  const at = day[2] === undefined ? [9, 0] : timeOfDay(day[2]);
  if (!at) return null;
  const date = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), at[0], at[1]));
  if (day[1] === 'tomorrow') date.setUTCDate(date.getUTCDate() + 1);
  return date;
}
