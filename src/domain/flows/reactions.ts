import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Group } from '../audience/segment-language.ts';
import { compileDefinition } from '../audience/segment-sql.ts';
import type { AudienceEvent } from '../audience/triggers.ts';
import type { DomainContext } from '../core/context.ts';
import { eventGroup, withEvents } from './conditions.ts';
import type { EventWhere } from './definition.ts';
import { nudgeAdvance } from './engine.ts';
import { enroll, type Subject, subjectOf, triggeredBy } from './enroll.ts';

/**
 * What an audience announcement does to enrollments that exist: a tracked event wakes the
 * enrollments waiting for it (the event edge of wait_for_event), a change that makes a flow's goal
 * true ends the contact's enrollment there as a conversion, and an unsubscribe from marketing ends
 * every active enrollment of the contact. Each is one set-based statement (per waiting condition or
 * goal), and each is idempotent: a job that runs again finds nothing left to change.
 */

/** The history entry of an exit that happens between steps, at the step the enrollment was at. */
const exitEntry = (type: string, outcome: string, at: Date) =>
  sql`jsonb_build_array(jsonb_build_object('step_id', fe.step_id, 'type', ${type}::text,
        'at', ${at.toISOString()}::text, 'outcome', ${outcome}::text))`;

/** Contacts who left marketing leave their flows (`exited`, reason `unsubscribed`). */
export async function exitUnsubscribed(db: Db, projectId: string, contactIds: string[], now: Date) {
  if (contactIds.length === 0) return;
  await sql`
    update flow_enrollments fe
       set status = 'exited', exit_reason = 'unsubscribed', step_id = null, wake_at = null, waiting_for = null,
           finished_at = now(), updated_at = now(), history = fe.history || ${exitEntry('unsubscribe', 'unsubscribed', now)}
      from contacts c
     where c.id = fe.contact_id and not c.subscribed
       and fe.project_id = ${projectId} and fe.contact_id = any(${contactIds}::uuid[]) and fe.status = 'active'`.execute(
    db,
  );
}

/**
 * Tracked events wake the enrollments waiting for them: for each distinct (event, where) waited
 * for, one UPDATE sets wake_at now and marks the wait matched, for the enrollments whose contact
 * has a matching event among these, tracked since the wait began. The engine then takes them along
 * the event edge (its nudge commits with the change).
 */
export async function matchWaits(db: Db, projectId: string, subject: Subject) {
  const { eventIds, contactIds } = subject;
  if (eventIds.length === 0) return;
  const { rows } = await sql<{ id: string; waiting_for: { event: string; where: EventWhere[] } }>`
    select fe.id, fe.waiting_for from flow_enrollments fe
     where fe.contact_id = any(${contactIds}::uuid[]) and fe.status = 'active' and fe.project_id = ${projectId}
       and fe.waiting_for ->> 'kind' = 'event' and fe.waiting_for ->> 'event' = any(${[...subject.eventNames]}::text[])
       and not (fe.waiting_for ? 'matched')`.execute(db);
  if (rows.length === 0) return;
  const groups = new Map<string, { event: string; where: EventWhere[]; ids: string[] }>();
  for (const r of rows) {
    const key = JSON.stringify([r.waiting_for.event, r.waiting_for.where ?? []]);
    const group = groups.get(key) ?? {
      event: r.waiting_for.event,
      where: r.waiting_for.where ?? [],
      ids: [],
    };
    group.ids.push(r.id);
    groups.set(key, group);
  }
  await db.transaction().execute(async (tx) => {
    let woken = 0;
    for (const g of groups.values()) {
      const narrowed = sql`select ev.* from events ev
        where ev.project_id = ${projectId} and ev.id = any(${eventIds}::bigint[])
          and exists (select 1 from flow_enrollments x where x.id = any(${g.ids}::uuid[])
                        and x.contact_id = ev.contact_id and ev.created_at >= (x.waiting_for ->> 'since')::timestamptz)`;
      const { rows: updated } = await withEvents(
        narrowed,
        sql`update flow_enrollments fe
               set wake_at = now(), waiting_for = fe.waiting_for || '{"matched": true}'::jsonb, updated_at = now()
              from contacts
             where contacts.id = fe.contact_id and fe.id = any(${g.ids}::uuid[]) and fe.status = 'active'
               and fe.waiting_for ->> 'kind' = 'event' and not (fe.waiting_for ? 'matched')
               and ${compileDefinition(projectId, eventGroup(g.event, g.where))}
            returning fe.id`,
      ).execute(tx);
      woken += updated.length;
    }
    if (woken > 0) await nudgeAdvance(tx);
  });
}

/**
 * Goals: for each flow version with a goal that these contacts have active enrollments on, one
 * UPDATE ends the enrollments whose contact now meets it (`exited`, reason `goal`, converted_at
 * set: a conversion). Event facts count only events since the contact entered the flow.
 */
export async function reachGoals(db: Db, projectId: string, contactIds: string[], now: Date) {
  if (contactIds.length === 0) return;
  const { rows } = await sql<{ flow_id: string; version: number; goal: Group }>`
    select distinct fe.flow_id, fe.version, v.definition -> 'goal' as goal
      from flow_enrollments fe join flow_versions v on v.flow_id = fe.flow_id and v.version = fe.version
     where fe.contact_id = any(${contactIds}::uuid[]) and fe.status = 'active' and fe.project_id = ${projectId}
       and jsonb_typeof(v.definition -> 'goal') = 'object'`.execute(db);
  for (const { flow_id, version, goal } of rows) {
    const narrowed = sql`select ev.* from events ev
      where ev.project_id = ${projectId} and ev.contact_id = any(${contactIds}::uuid[])
        and exists (select 1 from flow_enrollments x where x.flow_id = ${flow_id} and x.contact_id = ev.contact_id
                      and x.status = 'active' and ev.created_at >= x.created_at)`;
    await withEvents(
      narrowed,
      sql`update flow_enrollments fe
             set status = 'exited', exit_reason = 'goal', converted_at = now(), step_id = null, wake_at = null,
                 waiting_for = null, finished_at = now(), updated_at = now(),
                 history = fe.history || ${exitEntry('goal', 'converted', now)}
            from contacts
           where contacts.id = fe.contact_id and fe.flow_id = ${flow_id} and fe.version = ${version}
             and fe.status = 'active' and fe.contact_id = any(${contactIds}::uuid[])
             and ${compileDefinition(projectId, goal)}`,
    ).execute(db);
  }
}

/**
 * The flows' `audience_event` subscriber: an unsubscribe ends the contact's enrollments; a tracked
 * event wakes the waits it matches; a change reaches goals; then the announcement's triggers enrol
 * (after the goals, so the event that enrols a contact does not also convert it). Idempotent, as a
 * job may run again after a crash.
 */
export function flowAudienceSubscriber(ctx: Pick<DomainContext, 'db'>) {
  return async (event: AudienceEvent, _occurrence: string) => {
    const now = new Date();
    const { db } = ctx;
    if (event.type === 'contact.deleted') return;
    if (event.type === 'contact.subscription_changed') {
      if (event.subscribed === false && !event.list_id)
        await exitUnsubscribed(db, event.project_id, event.contact_ids ?? [], now);
      return;
    }
    const subject = await subjectOf(db, event);
    if (subject.contactIds.length === 0) return;
    if (event.type === 'event.tracked') await matchWaits(db, event.project_id, subject);
    if (event.type !== 'contact.created') await reachGoals(db, event.project_id, subject.contactIds, now);
    await enroll(db, await triggeredBy(db, event, subject));
  };
}
