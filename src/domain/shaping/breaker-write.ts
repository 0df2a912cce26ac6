import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { enqueue } from '../../db/enqueue.ts';
import { domainOf } from '../../mail/address.ts';
import { holdCampaign } from '../campaigns/hold.ts';
import { ConflictError, ForbiddenError, ValidationError } from '../core/errors.ts';
import { type Scope, type Trip, type Unwritten, WINDOW_DAYS } from './breaker.ts';

// What the circuit breaker (breaker.ts) writes: its counts, its decisions and the pauses they make,
// and the resumes that close them.

/** A domain's or project's window has run out: its counts start afresh. */
const windowOver = sql`b.scope in ('domain', 'project') and b.window_start < now() - make_interval(days => ${WINDOW_DAYS})`;

/**
 * Inside the transaction that records a batch's answers: the counts added, the trips recorded
 * (a trip already open is not recorded twice), and each stopped campaign paused with its reason,
 * its writer waited for and what delivery has not claimed taken back. Answers the campaigns paused.
 */
export async function writeBreaker(
  tx: Tx,
  unwritten: Unwritten[],
  trips: Trip[],
  sharedFrom: string,
): Promise<string[]> {
  if (unwritten.length > 0)
    await sql`insert into breaker_counts as b (scope, key, project_id, sent, hard_bounced, complained)
      select sc, k, p, s, h, c
        from unnest(${unwritten.map((u) => u.scope)}::text[], ${unwritten.map((u) => u.key)}::uuid[],
                    ${unwritten.map((u) => u.projectId)}::uuid[], ${unwritten.map((u) => u.tally.sent)}::bigint[],
                    ${unwritten.map((u) => u.tally.bounced)}::bigint[],
                    ${unwritten.map((u) => u.tally.complained)}::bigint[]) as u(sc, k, p, s, h, c)
      on conflict (scope, key) do update
        set sent = case when ${windowOver} then excluded.sent else b.sent + excluded.sent end,
            hard_bounced = case when ${windowOver} then excluded.hard_bounced else b.hard_bounced + excluded.hard_bounced end,
            complained = case when ${windowOver} then excluded.complained else b.complained + excluded.complained end,
            window_start = case when ${windowOver} then now() else b.window_start end`.execute(tx);
  const paused: string[] = [];
  const recordedIds: string[] = [];
  for (const trip of trips) {
    const recorded = await tx
      .insertInto('breaker_trips')
      .values({
        project_id: trip.projectId,
        scope: trip.scope,
        key: trip.key,
        level: trip.level,
        metric: trip.metric,
        rate: trip.rate,
        threshold: trip.threshold,
        messages: trip.messages,
        reason: trip.reason,
      })
      .onConflict((oc) =>
        oc.columns(['scope', 'key', 'level', 'metric']).where('resumed_at', 'is', null).doNothing(),
      )
      .returning('id')
      .executeTakeFirst();
    if (recorded) recordedIds.push(recorded.id);
    if (!recorded || trip.level !== 'stop') continue;
    if (await pause(tx, trip, sharedFrom)) paused.push(trip.key);
  }
  // each decision is a `breaker.tripped` webhook event
  if (recordedIds.length > 0)
    await enqueue(tx, [{ task: 'webhook_dispatch', payload: { breaker_trip_ids: recordedIds } }]);
  return paused;
}

/** Why a campaign or flow the breaker paused is paused (its `paused_reason` or `status_reason`). */
export const BREAKER_PAUSE = 'Paused by the circuit breaker: ';

/**
 * A stopped campaign paused (its writer waited for, what delivery has not claimed taken back), or
 * a stopped flow paused (its enrollments wait where they are); false when it was not running.
 */
async function pause(tx: Tx, trip: Trip, sharedFrom: string): Promise<boolean> {
  const reason = `${BREAKER_PAUSE}${trip.reason}`;
  if (trip.scope === 'domain' || trip.scope === 'project') return pauseAll(tx, trip, sharedFrom);
  if (trip.scope === 'flow') {
    const flow = await tx
      .updateTable('flows')
      .set({ status: 'paused', status_reason: reason, updated_at: new Date() })
      .where('id', '=', trip.key)
      .where('status', '=', 'active')
      .returning('id')
      .executeTakeFirst();
    return flow !== undefined;
  }
  const campaign = await tx
    .updateTable('campaigns')
    .set({ status: 'paused', paused_reason: reason, updated_at: new Date() })
    .where('id', '=', trip.key)
    .where('status', '=', 'sending')
    .returning('id')
    .executeTakeFirst();
  if (!campaign) return false;
  await holdCampaign(tx, campaign.id, sharedFrom);
  return true;
}

/** Who resumes what the breaker paused, and why. */
export interface Resumer {
  /** `key <id>` or `account <id>`. */
  who: string;
  /** A project admin (or an owner, or a key): only they may resume what the breaker paused. */
  admin: boolean;
  reason?: string;
}

/** What the breaker paused goes on only by an admin who says why (403, 400 otherwise). */
export function checkBreakerResume(pausedReason: string, by: Resumer, how: string) {
  if (!by.admin)
    throw new ForbiddenError(`${pausedReason}. Only a project admin may ${how} it, with a reason.`);
  if (!by.reason?.trim())
    throw new ValidationError(
      `${pausedReason}. ${how[0].toUpperCase()}${how.slice(1)} it with a \`reason\` (what was fixed, or why it should go on), which is recorded.`,
    );
}

/**
 * The breaker's open decisions about a campaign or flow closed with who resumed it and why, and
 * its counts started afresh: it is judged on what it meets from now on.
 */
export async function closeTrips(tx: Tx, scope: Scope, key: string, by: Resumer) {
  await tx
    .updateTable('breaker_trips')
    .set({ resumed_at: new Date(), resumed_by: by.who, resume_reason: by.reason?.trim() ?? null })
    .where('scope', '=', scope)
    .where('key', '=', key)
    .where('resumed_at', 'is', null)
    .execute();
  await tx.deleteFrom('breaker_counts').where('scope', '=', scope).where('key', '=', key).execute();
}

/**
 * A stopped domain or project: every campaign sending from it paused (held back as a pause by hand
 * is) and every active flow sending from it paused, each with the reason; what is already written
 * of others is held at delivery while the stop stands (deliver.ts).
 */
async function pauseAll(tx: Tx, trip: Trip, sharedFrom: string): Promise<boolean> {
  const domain =
    trip.scope === 'domain'
      ? ((await tx.selectFrom('domains').select('name').where('id', '=', trip.key).executeTakeFirst())
          ?.name ?? null)
      : null;
  const what = domain === null ? 'all marketing of this project' : `all marketing from ${domain}`;
  const why = `${BREAKER_PAUSE}${what}: ${trip.reason}`;
  const fromDomain = (column: string) =>
    domain === null ? sql`true` : sql`lower(split_part(${sql.ref(column)}, '@', 2)) = ${domain}`;
  const { rows: campaigns } = await sql<{ id: string }>`
    update campaigns set status = 'paused', paused_reason = ${why}, updated_at = now()
     where project_id = ${trip.projectId} and status = 'sending' and ${fromDomain('from_address')}
     returning id`.execute(tx);
  for (const c of campaigns) await holdCampaign(tx, c.id, sharedFrom);
  await sql`
    update flows set status = 'paused', status_reason = ${why}, updated_at = now()
     where project_id = ${trip.projectId} and status = 'active' and ${fromDomain('from_address')}`.execute(
    tx,
  );
  return true;
}

/** The open stops of a sending domain (by its address) and of its project: what holds all their marketing. */
export async function widerStops(db: Db | Tx, projectId: string, fromAddress: string | null) {
  const domain = fromAddress ? domainOf(fromAddress).toLowerCase() : null;
  return db
    .selectFrom('breaker_trips as t')
    .select(['t.id', 't.scope', 't.key', 't.reason'])
    .where('t.project_id', '=', projectId)
    .where('t.level', '=', 'stop')
    .where('t.resumed_at', 'is', null)
    .where((eb) =>
      eb.or([
        eb.and([eb('t.scope', '=', 'project'), eb('t.key', '=', projectId)]),
        eb.and([
          eb('t.scope', '=', 'domain'),
          eb(
            't.key',
            'in',
            eb
              .selectFrom('domains')
              .select('id')
              .where('project_id', '=', projectId)
              .where('name', '=', domain ?? ''),
          ),
        ]),
      ]),
    )
    .execute();
}

/** What a stop of a domain or project says when something would send under it. */
export function widerStopText(stop: { scope: string; reason: string }) {
  return `${stop.scope === 'project' ? 'All marketing of this project' : 'Marketing from this domain'} is paused by the circuit breaker: ${stop.reason}`;
}

/**
 * Before mail of a campaign or flow starts or goes on: a stop of its domain or project refuses
 * (409), unless a project admin goes on with a reason, which closes those stops (recorded).
 */
export async function passWiderStops(
  db: Db,
  projectId: string,
  fromAddress: string | null,
  by: Resumer | null,
  how: string | null,
) {
  const stops = await widerStops(db, projectId, fromAddress);
  if (stops.length === 0) return;
  if (!how || !by?.reason?.trim())
    throw new ConflictError(
      `${widerStopText(stops[0])}. A project admin resumes it with POST /v1/breaker/resume and a \`reason\`${how ? `, or may ${how} with a \`reason\`` : ''}`,
    );
  checkBreakerResume(widerStopText(stops[0]), by, how);
  await db.transaction().execute(async (tx) => {
    for (const stop of stops) await closeTrips(tx, stop.scope as Scope, stop.key, by);
  });
}
