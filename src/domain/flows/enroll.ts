import { type RawBuilder, sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { findContact } from '../audience/contacts.ts';
import type { Group } from '../audience/segment-language.ts';
import { compileDefinition } from '../audience/segment-sql.ts';
import type { AudienceEvent } from '../audience/triggers.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError } from '../core/errors.ts';
import { eventGroup, withEvents } from './conditions.ts';
import type { FlowDefinition, Reentry } from './definition.ts';
import { nudgeAdvance } from './engine.ts';
import { activationHint, findFlow } from './flows.ts';

/**
 * Enrolling: a trigger that matches a contact creates an enrollment at the flow's current version,
 * at its first step, due now. Set-based: one INSERT ... SELECT per matching flow over the contacts
 * of an audience announcement (up to 10,000 of them), honouring the re-entry policy (once: no
 * earlier enrollment in the flow; always: none active; cooldown: none created within it) and
 * enrolling only contacts subscribed to marketing. Each flow's enrolling holds a transaction-level
 * lock on the flow, so two announcements about one contact cannot both pass the policy. The
 * enrollments and a nudge of the engine commit together.
 *
 * `segment_entered` is approximated: a contact "enters" when an announcement about it (created,
 * updated, list joined, event tracked) finds the segment's condition true, and the re-entry policy
 * decides whether that makes a new enrollment (membership is computed on read, never stored, so
 * there is no "before" to compare with).
 */

export interface ActiveFlow {
  id: string;
  project_id: string;
  version: number;
  definition: FlowDefinition;
}

/** The project's active flows with their current definitions (read fresh: a draft's version may be rewritten). */
async function activeFlows(db: Db, projectId: string): Promise<ActiveFlow[]> {
  const { rows } = await sql<ActiveFlow>`
    select f.id, f.project_id, f.version, v.definition from flows f
      join flow_versions v on v.flow_id = f.id and v.version = f.version
     where f.project_id = ${projectId} and f.status = 'active'
     order by f.id`.execute(db);
  return rows;
}

function reentryAllows(flowId: string, reentry: Reentry): RawBuilder<boolean> {
  const earlier = sql`select 1 from flow_enrollments x where x.flow_id = ${flowId} and x.contact_id = contacts.id`;
  if (reentry.policy === 'once') return sql<boolean>`not exists (${earlier})`;
  if (reentry.policy === 'always') return sql<boolean>`not exists (${earlier} and x.status = 'active')`;
  return sql<boolean>`not exists (${earlier}
    and x.created_at > now() - make_interval(secs => ${reentry.cooldown_seconds}))`;
}

/** What a trigger matched: the contacts to look at and the condition they must meet. */
export interface Match {
  flow: ActiveFlow;
  contactIds: string[];
  where: RawBuilder<boolean>;
  /** The events rows the condition's event facts read (event triggers). */
  events?: RawBuilder<unknown>;
}

/** Inserts the enrollments a match allows, holding the flow's lock; returns the new ids with their contacts. */
async function insertEnrollments(tx: Tx, m: Match): Promise<{ id: string; contact_id: string }[]> {
  const { flow } = m;
  await sql`select pg_advisory_xact_lock(hashtextextended(${`flow:${flow.id}`}, 0))`.execute(tx);
  const insert = sql`insert into flow_enrollments (id, project_id, flow_id, version, contact_id, step_id, wake_at)
    select gen_random_uuid(), ${flow.project_id}, ${flow.id}, ${flow.version}, contacts.id,
           ${flow.definition.steps[0].id}, now()
      from contacts
     where contacts.project_id = ${flow.project_id} and contacts.id = any(${m.contactIds}::uuid[])
       and contacts.subscribed and ${m.where} and ${reentryAllows(flow.id, flow.definition.reentry)}
    returning id, contact_id`;
  const { rows } = await (m.events ? withEvents(m.events, insert) : insert).execute(tx);
  return rows as { id: string; contact_id: string }[];
}

/** Writes the matches' enrollments and the nudge in one transaction; returns how many were made. */
export async function enroll(db: Db, matches: Match[]): Promise<number> {
  const wanted = matches.filter((m) => m.contactIds.length > 0 && m.flow.definition.steps.length > 0);
  if (wanted.length === 0) return 0;
  return db.transaction().execute(async (tx) => {
    let made = 0;
    for (const m of wanted) made += (await insertEnrollments(tx, m)).length;
    if (made > 0) await nudgeAdvance(tx);
    return made;
  });
}

const TRUE = sql<boolean>`true`;

/** The segment conditions of the flows triggered by entering a segment (a deleted segment matches none). */
async function segmentConditions(db: Db, projectId: string, flows: ActiveFlow[]) {
  const ids = flows.flatMap((f) =>
    f.definition.trigger.type === 'segment_entered' ? [f.definition.trigger.segment_id] : [],
  );
  if (ids.length === 0) return new Map<string, Group>();
  const rows = await db
    .selectFrom('segments')
    .select(['id', 'definition'])
    .where('project_id', '=', projectId)
    .where('id', 'in', ids)
    .execute();
  return new Map(rows.map((r) => [r.id, r.definition as Group]));
}

/** What an announcement is about: its contacts, and for tracked events their ids and names. */
export interface Subject {
  contactIds: string[];
  eventIds: number[];
  eventNames: Set<string>;
}

/** The announcement's contacts (for tracked events, read from the events with their names). */
export async function subjectOf(db: Db, event: AudienceEvent): Promise<Subject> {
  const eventIds = (event.event_ids ?? []).map(Number).filter(Number.isSafeInteger);
  if (event.type !== 'event.tracked' || eventIds.length === 0)
    return { contactIds: event.contact_ids ?? [], eventIds: [], eventNames: new Set() };
  const { rows } = await sql<{ contact_id: string; name: string }>`
    select distinct contact_id, name from events
     where project_id = ${event.project_id} and id = any(${eventIds}::bigint[])`.execute(db);
  return {
    contactIds: [...new Set(rows.map((r) => r.contact_id))],
    eventIds,
    eventNames: new Set(rows.map((r) => r.name)),
  };
}

/**
 * The flows an announcement triggers, with the contacts and condition of each: contact created,
 * contact updated (its condition, if any), list joined (that list), event tracked (its name and
 * property conditions, on the announced events only), and segment entered (on any of them).
 */
export async function triggeredBy(db: Db, event: AudienceEvent, subject: Subject): Promise<Match[]> {
  const { contactIds, eventIds } = subject;
  if (contactIds.length === 0) return [];
  const flows = await activeFlows(db, event.project_id);
  if (flows.length === 0) return [];
  const segments = await segmentConditions(db, event.project_id, flows);
  const matches: Match[] = [];
  for (const flow of flows) {
    const t = flow.definition.trigger;
    const base = { flow, contactIds };
    if (t.type === 'segment_entered') {
      const condition = segments.get(t.segment_id);
      if (condition && event.type !== 'contact.subscription_changed')
        matches.push({ ...base, where: compileDefinition(event.project_id, condition) });
    } else if (t.type === 'contact_created' && event.type === 'contact.created')
      matches.push({ ...base, where: TRUE });
    else if (t.type === 'contact_updated' && event.type === 'contact.updated')
      matches.push({ ...base, where: t.condition ? compileDefinition(event.project_id, t.condition) : TRUE });
    else if (t.type === 'list_joined' && event.type === 'list.joined' && event.list_id === t.list_id)
      matches.push({ ...base, where: TRUE });
    else if (t.type === 'event' && subject.eventNames.has(t.event))
      matches.push({
        ...base,
        where: compileDefinition(event.project_id, eventGroup(t.event, t.where)),
        events: sql`select * from events where project_id = ${event.project_id} and id = any(${eventIds}::bigint[])`,
      });
  }
  return matches;
}

/**
 * POST /flows/{id}/enrollments: enrols one contact of the project by hand (any trigger; the flow
 * must be active, the contact subscribed, and the re-entry policy must allow it: 409 otherwise).
 * Returns the new enrollment's id.
 */
export async function enrollManually(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  flowId: string,
  email: string,
): Promise<string> {
  const flowRow = await findFlow(ctx, projectId, flowId);
  const contact = await findContact(ctx, projectId, email);
  const [flow] = (await activeFlows(ctx.db, projectId)).filter((f) => f.id === flowRow.id);
  if (!flow)
    throw new ConflictError(
      `Flow "${flowRow.name}" is ${flowRow.status}: only an active flow enrols contacts${activationHint(flowRow)}`,
    );
  if (!contact.subscribed)
    throw new ConflictError(
      `Contact ${contact.email} is unsubscribed from marketing: a flow cannot enrol it`,
    );
  const made = await ctx.db.transaction().execute(async (tx) => {
    const rows = await insertEnrollments(tx, { flow, contactIds: [contact.id], where: TRUE });
    if (rows.length > 0) await nudgeAdvance(tx);
    return rows;
  });
  if (made.length === 0) {
    const policy = flow.definition.reentry;
    throw new ConflictError(
      `Contact ${contact.email} cannot enter flow "${flowRow.name}" again now (re-entry policy ${policy.policy}${
        policy.policy === 'cooldown' ? ` of ${policy.cooldown_seconds} s` : ''
      })`,
    );
  }
  return made[0].id;
}
