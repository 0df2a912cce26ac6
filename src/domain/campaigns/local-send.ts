import { type RawBuilder, sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { now } from '../core/clock.ts';
import { contactZone, type QuietHours, quietUntil } from '../core/local-time.ts';
import { localTimeOf } from '../plans/local-time-settings.ts';

/**
 * When each recipient's message may be written: a campaign at a local time (`local_time`, minutes
 * after midnight) sends each recipient's at the next such time in the recipient's zone after the
 * start (`properties.timezone` when PostgreSQL knows the zone, else the project's), and the
 * project's quiet hours hold a recipient whose time falls inside them until they end. The snapshot
 * writes every recipient's `send_after` in its one INSERT ... SELECT: computed once per zone
 * PostgreSQL knows (its own IANA data, `pg_timezone_names`) and joined by the contact's zone name
 * (case-insensitive, like the runtime's), so a million rows cost one hash join and nothing per
 * recipient in Node; the writer takes only those whose time has come.
 */

export interface Timing {
  /** The start, by the service's clock (core/clock.ts). */
  start: Date;
  zone: string;
  localTime: number | null;
  quiet: QuietHours | null;
}

/** Whether the campaign's recipients need a `send_after` at all (else null, as before). */
export const isTimed = (t: Timing) => t.localTime !== null || t.quiet !== null;

const inQuiet = (minutes: number, q: QuietHours) =>
  q.from < q.to ? minutes >= q.from && minutes < q.to : minutes >= q.from || minutes < q.to;

/**
 * The `send_after` of a recipient in `zone` (a SQL text): at local time, the next `local_time` at
 * or after the start, moved to the end of the quiet hours when it falls inside them; without one,
 * the start, or the end of the quiet hours the start falls in.
 */
function sendAfterIn(t: Timing, zone: RawBuilder<unknown>): RawBuilder<Date> {
  const minute = sql`interval '1 minute'`;
  const local = sql`(${t.start}::timestamptz at time zone ${zone})`;
  const d = sql`${local}::date`;
  if (t.localTime !== null) {
    const held = t.quiet !== null && inQuiet(t.localTime, t.quiet);
    const at = held ? (t.quiet as QuietHours).to : t.localTime;
    // quiet hours ending the next day (21:00 to 08:00 and a local time of 22:00): the next morning
    const shift = held && at < t.localTime ? 1 : 0;
    return sql<Date>`(((${d} + case when (${d} + ${t.localTime}::int * ${minute}) at time zone ${zone} < ${t.start}::timestamptz
                                then 1 else 0 end + ${shift}::int) + ${at}::int * ${minute}) at time zone ${zone})`;
  }
  const q = t.quiet as QuietHours;
  const m = sql`(extract(hour from ${local}) * 60 + extract(minute from ${local}))::int`;
  const inside =
    q.from < q.to
      ? sql`${m} >= ${q.from}::int and ${m} < ${q.to}::int`
      : sql`(${m} >= ${q.from}::int or ${m} < ${q.to}::int)`;
  return sql<Date>`case when ${inside}
      then ((${d} + case when ${m} >= ${q.to}::int then 1 else 0 end) + ${q.to}::int * ${minute}) at time zone ${zone}
      else ${t.start}::timestamptz end`;
}

/**
 * Every zone PostgreSQL knows (by its name in lower case) with the `send_after` of a recipient in
 * it, computed once per zone rather than once per recipient; for the statement's WITH.
 */
export const zonesCte = (t: Timing) =>
  sql`zones as materialized (select distinct on (lower(z.name)) lower(z.name) as name, ${sendAfterIn(t, sql`z.name`)} as send_after
        from pg_timezone_names z order by lower(z.name), z.name)`;

/** The `send_after` of a recipient whose zone is the project's (UTC if PostgreSQL does not know it). */
export async function projectSendAfter(db: Db | Tx, t: Timing): Promise<Date> {
  const zone = sql`coalesce((select z.name from pg_timezone_names z where lower(z.name) = lower(${t.zone}::text) limit 1), 'UTC')`;
  const { rows } = await sql<{ at: Date }>`select ${sendAfterIn(t, zone)} as at`.execute(db);
  return rows[0].at;
}

/**
 * The audience rows (`id`, `email`, `tz`: the contact's `properties.timezone`) with their
 * `send_after`: their zone's (a name PostgreSQL does not know takes the project's, so no row can
 * fail the statement). Needs `zonesCte` in the statement's WITH.
 */
export function timedAudience(audience: RawBuilder<unknown>, fallback: Date) {
  return sql`(select a.id, a.email, coalesce(z.send_after, ${fallback}::timestamptz) as send_after
                from (${audience}) a left join zones z on z.name = lower(a.tz)) a`;
}

/** The real instant (for a job's run_at) of a moment on the service's clock. */
export function realTimeOf(at: Date): Date {
  return new Date(Date.now() + (at.getTime() - now().getTime()));
}

/**
 * The next moment a pending recipient of the campaign waits for (only test recipients while an
 * A/B test is written), or null when none waits.
 */
export async function nextWaiting(tx: Db | Tx, campaignId: string, testing: boolean): Promise<Date | null> {
  const { rows } = await sql<{ at: Date | null }>`
    select min(r.send_after) as at from campaign_recipients r
     where r.campaign_id = ${campaignId} and r.status = 'pending' and r.send_after > ${now()}::timestamptz
       ${testing ? sql`and r.variant is not null` : sql``}`.execute(tx);
  return rows[0]?.at ?? null;
}

/** The condition of a recipient whose time has come (no `send_after`, or one passed). */
export const dueNow = () => sql<boolean>`(r.send_after is null or r.send_after <= ${now()}::timestamptz)`;

/**
 * Whether any pending recipient of the campaign waits for a time (read on the partial index of
 * those, empty for a campaign with neither a local time nor quiet hours). Only then does the
 * writer's pick filter on `send_after`: that filter on every batch of an untimed campaign doubled
 * PostgreSQL's work per message in bench:campaign (1,319 msg/s against 1,536 without it).
 */
export async function hasTimedPending(tx: Tx, campaignId: string): Promise<boolean> {
  const { rows } = await sql<{ timed: boolean }>`select exists (
      select 1 from campaign_recipients r
       where r.campaign_id = ${campaignId} and r.status = 'pending' and r.send_after is not null) as timed`.execute(
    tx,
  );
  return rows[0].timed;
}

/** The most instants `waiting` lists (local times land on at most a few dozen UTC offsets). */
const WAITING_SHOWN = 100;

/** What a sending or paused campaign's recipients wait for: each instant still ahead with how many. */
export async function waitingOf(db: Db | Tx, campaignId: string): Promise<{ at: string; count: number }[]> {
  const { rows } = await sql<{ at: Date; count: number }>`
    select r.send_after as at, count(*)::int as count from campaign_recipients r
     where r.campaign_id = ${campaignId} and r.status = 'pending' and r.send_after > ${now()}::timestamptz
     group by r.send_after order by r.send_after limit ${WAITING_SHOWN}`.execute(db);
  return rows.map((r) => ({ at: new Date(r.at).toISOString(), count: r.count }));
}

/**
 * The project's quiet hours judged again as each batch is written: a throttled or warming-up
 * campaign may still be writing hours after its snapshot, when some recipients' local time has
 * moved into them. Those of `picked` (in `properties.timezone`, else the project's zone) get a
 * `send_after` at the end of their quiet hours and stay pending: the pick skips them from then on
 * and the campaign's job wakes for them (`nextWaiting`). Returns their contact ids.
 */
export async function holdForQuietHours(
  tx: Tx,
  projectId: string,
  campaignId: string,
  picked: { contact_id: string; properties: Record<string, unknown> }[],
): Promise<Set<string>> {
  if (picked.length === 0) return new Set();
  const settings = await localTimeOf(tx, projectId);
  if (!settings.quiet_hours) return new Set();
  const at = now().getTime();
  const held = new Map<string, Date>();
  for (const p of picked) {
    const until = quietUntil(at, contactZone(p.properties, settings.time_zone), settings.quiet_hours);
    if (until !== null) held.set(p.contact_id, new Date(until));
  }
  if (held.size > 0)
    await sql`update campaign_recipients r set send_after = u.at
                from unnest(${[...held.keys()]}::uuid[], ${[...held.values()]}::timestamptz[]) as u(contact_id, at)
               where r.campaign_id = ${campaignId} and r.contact_id = u.contact_id`.execute(tx);
  return new Set(held.keys());
}
