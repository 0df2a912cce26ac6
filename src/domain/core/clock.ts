/**
 * The service's calendar: what day it is for the things counted by day (warm-up plans). It is the
 * machine's time, except in tests and benchmarks that run the server in their own process and move
 * it forward (the feedback simulator's simulated days, issue 33): nothing else reads it, so moving it
 * changes which day's volume applies, never a timestamp written to the database.
 */

const DAY_MS = 86_400_000;
let offsetMs = 0;

/** Now, by the service's calendar. */
export function now(): Date {
  return new Date(Date.now() + offsetMs);
}

/** Moves the calendar forward (tests and benchmarks of simulated days). */
export function moveClock(ms: number): void {
  offsetMs += ms;
}

/** Back to the machine's time. */
export function resetClock(): void {
  offsetMs = 0;
}

/** The UTC day of a moment, as `YYYY-MM-DD`. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** Whole days from one `YYYY-MM-DD` to another. */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

/** `YYYY-MM-DD` plus `n` days. */
export function addDays(day: string, n: number): string {
  return dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS));
}

/** Real milliseconds until the calendar's next day begins (a job waiting for tomorrow's volume). */
export function msUntilNextDay(): number {
  const at = now();
  return Date.parse(`${addDays(dayOf(at), 1)}T00:00:00Z`) - at.getTime();
}
