import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { clockOf, isZone, minutesOf, type QuietHours } from '../core/local-time.ts';

/**
 * A project's time zone and quiet hours (GET/PATCH /v1/me/local-time): the zone of contacts whose
 * `properties.timezone` names none, and the local hours in which its marketing and automation mail
 * waits (campaigns at each recipient's local time, flow sends). Transactional mail never waits.
 */

export interface LocalTimeSettings {
  time_zone: string;
  quiet_hours: QuietHours | null;
}

/** The project's settings as the sending code reads them. */
export async function localTimeOf(
  db: Pick<DomainContext, 'db'>['db'],
  projectId: string,
): Promise<LocalTimeSettings> {
  const row = await db
    .selectFrom('projects')
    .select(['time_zone', 'quiet_from', 'quiet_to'])
    .where('id', '=', projectId)
    .executeTakeFirstOrThrow();
  return {
    time_zone: row.time_zone,
    quiet_hours:
      row.quiet_from === null || row.quiet_to === null ? null : { from: row.quiet_from, to: row.quiet_to },
  };
}

function present(settings: LocalTimeSettings) {
  return {
    object: 'local_time' as const,
    time_zone: settings.time_zone,
    quiet_hours: settings.quiet_hours
      ? { from: clockOf(settings.quiet_hours.from), to: clockOf(settings.quiet_hours.to) }
      : null,
  };
}

export async function getLocalTime(ctx: Pick<DomainContext, 'db'>, projectId: string) {
  return present(await localTimeOf(ctx.db, projectId));
}

/** PATCH: `time_zone` (an IANA zone) and `quiet_hours` ({from, to} as HH:MM, or null for none). */
export async function setLocalTime(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  input: { time_zone?: unknown; quiet_hours?: unknown },
) {
  const current = await localTimeOf(ctx.db, projectId);
  let zone = current.time_zone;
  if (input.time_zone !== undefined) {
    if (!isZone(input.time_zone))
      throw new ValidationError(
        '`time_zone` must be an IANA time zone, such as Europe/Berlin or America/New_York',
      );
    zone = input.time_zone;
  }
  let quiet = current.quiet_hours;
  if (input.quiet_hours === null) quiet = null;
  else if (input.quiet_hours !== undefined) {
    const q = input.quiet_hours as { from?: unknown; to?: unknown };
    const from = minutesOf(q?.from);
    const to = minutesOf(q?.to);
    if (from === null || to === null)
      throw new ValidationError(
        '`quiet_hours` needs `from` and `to` as 24-hour times, such as "21:00" and "08:00"',
      );
    if (from === to) throw new ValidationError('`quiet_hours` must end at another time than it starts');
    quiet = { from, to };
  }
  await ctx.db
    .updateTable('projects')
    .set({ time_zone: zone, quiet_from: quiet?.from ?? null, quiet_to: quiet?.to ?? null })
    .where('id', '=', projectId)
    .execute();
  return present({ time_zone: zone, quiet_hours: quiet });
}
