import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { ATTRIBUTION_WINDOW_DAYS, humanEngagement } from '../campaigns/stats.ts';
import type { DomainContext, EventSink } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { GroupCommit } from '../core/group-commit.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import { checkContactLimit, findContact } from './contacts.ts';
import { checkProperties, contactEmail, dateParam, type Properties, type PropertyValue } from './fields.ts';
import { OutboxNudge } from './triggers.ts';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));
export const MAX_EVENTS_PER_CALL = 100;

export interface TrackedEvent {
  projectId: string;
  email: string;
  name: string;
  properties: Properties;
  value: number | null;
  currency: string | null;
  quantity: number | null;
}

export interface TrackResult {
  object: 'event';
  id: string;
  contact_id: string;
  contact_created: boolean;
}

function finite(value: unknown, field: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new ValidationError(`\`${field}\` must be a number`);
  if (Math.abs(value) >= 1e15) throw new ValidationError(`\`${field}\` is too large`);
  return value;
}

/** An event as the API receives it: `email` and `event` are required, the rest optional. */
export interface EventInput {
  email: string;
  event: string;
  properties?: Record<string, PropertyValue>;
  value?: number | null;
  currency?: string | null;
  quantity?: number | null;
}

/**
 * Checks one tracked event: `email` and `event` required, the rest optional. A `currency` must be an
 * ISO 4217 code; a `value` without one is revenue without a currency (projects have no currency of
 * their own), reported apart from every currency.
 */
function checkEvent(projectId: string, b: EventInput, at = ''): TrackedEvent {
  const email = contactEmail(b.email, `${at}email`);
  if (b.event.trim() === '')
    throw new ValidationError(`\`${at}event\` is required: the name of the action, like "purchase"`);
  if (b.event.length > 200) throw new ValidationError(`\`${at}event\` must be at most 200 characters`);
  const value = finite(b.value, `${at}value`);
  const quantity = finite(b.quantity, `${at}quantity`);
  let currency: string | null = null;
  if (b.currency !== undefined && b.currency !== null) {
    if (!CURRENCIES.has(b.currency.toUpperCase()))
      throw new ValidationError(`\`${at}currency\` must be an ISO 4217 currency code such as EUR or USD`);
    currency = b.currency.toUpperCase();
  }
  return {
    projectId,
    email,
    name: b.event.trim(),
    properties: checkProperties(b.properties, `${at}properties`) as Properties,
    value,
    currency,
    quantity,
  };
}

/**
 * Revenue attribution, as one scalar subquery of the insert (no round trip of its own): an event
 * with a value goes to the campaign whose email the contact last clicked (a human click) within
 * ATTRIBUTION_WINDOW_DAYS; an event without a value, or without such a click, to none. The
 * contact's campaign emails come from the partial index `emails_campaign_contact`, their clicks
 * from `email_events_engagement` (migration 0017), both read without touching the tables.
 */
function attributedCampaign(value: RawBuilder<unknown>, contactId: RawBuilder<unknown>) {
  return sql`case when ${value} is not null then (
      select e.campaign_id from emails e join email_events ev on ev.email_id = e.id
       where e.contact_id = ${contactId} and e.campaign_id is not null
         and ${humanEngagement('ev')} and ev.type = 'clicked'
         and ev.created_at > now() - make_interval(days => ${ATTRIBUTION_WINDOW_DAYS})
       order by ev.created_at desc limit 1) end`;
}

/**
 * Writes a group of events in ONE statement (atomic on its own, one round trip): unknown addresses
 * become contacts, the events are inserted with ids drawn from the table's sequence (so each
 * request gets its own back) and attributed to a campaign (`attributedCampaign`), and their
 * announcements are written to the audience outbox. An event whose contact another request
 * created concurrently is not visible to this statement's snapshot: it is written again by the
 * next statement, which sees it.
 */
async function writeEvents(db: Db, events: TrackedEvent[]): Promise<TrackResult[]> {
  const results: TrackResult[] = new Array(events.length);
  let pending = events.map((e, i) => ({ ...e, i }));
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt === 3) throw new Error('events could not be matched to their contacts');
    const input = JSON.stringify(
      pending.map((e) => ({
        i: e.i,
        project_id: e.projectId,
        email: e.email,
        name: e.name,
        properties: e.properties,
        value: e.value,
        currency: e.currency,
        quantity: e.quantity,
      })),
    );
    const { rows } = await sql<{ i: number; id: number; contact_id: string; created: boolean }>`
      with input as (
        select x.*, nextval(pg_get_serial_sequence('events', 'id')) as id
          from json_to_recordset(${input}::json)
            as x(i int, project_id uuid, email text, name text, properties jsonb, value numeric, currency text, quantity numeric)
      ), new_contacts as (
        insert into contacts (project_id, email)
        select distinct project_id, email from input
        on conflict (project_id, email) do nothing
        returning id, project_id, email
      ), known as (
        select id, project_id, email from new_contacts
        union all
        select c.id, c.project_id, c.email
          from contacts c join (select distinct project_id, email from input) d
            on c.project_id = d.project_id and c.email = d.email
      ), matched as (
        select input.*, k.id as contact_id, ${attributedCampaign(sql.ref('input.value'), sql.ref('k.id'))} as campaign_id
          from input join known k on k.project_id = input.project_id and k.email = input.email
      ), inserted as (
        insert into events (id, project_id, contact_id, name, properties, value, currency, quantity, campaign_id)
        overriding system value
        select id, project_id, contact_id, name, properties, value, currency, quantity, campaign_id from matched
      ), announced as (
        insert into audience_outbox (event)
        select json_build_object('type', 'event.tracked', 'project_id', project_id, 'event_ids', json_agg(id::text))
          from matched group by project_id
        union all
        select json_build_object('type', 'contact.created', 'project_id', project_id, 'contact_ids', json_agg(id))
          from new_contacts group by project_id
        returning 1
      )
      select m.i, m.id, m.contact_id, exists (select 1 from new_contacts n where n.id = m.contact_id) as created,
             (select count(*) from announced) as announced
        from matched m`.execute(db);
    for (const r of rows) {
      results[r.i] = {
        object: 'event',
        id: String(r.id),
        contact_id: r.contact_id,
        contact_created: r.created,
      };
    }
    pending = pending.filter((e) => results[e.i] === undefined);
  }
  return results;
}

/** Accepts tracked events; a request is answered once its events committed (requests share commits). */
export class EventTracker implements EventSink<TrackedEvent, TrackResult> {
  private readonly group: GroupCommit<TrackedEvent[], TrackResult[]>;
  private readonly nudge: OutboxNudge;
  constructor(db: Db) {
    this.nudge = new OutboxNudge(db);
    // one write in flight: groups grow with load, and larger groups beat parallel ones here
    this.group = new GroupCommit(
      async (requests) => {
        const results = await writeEvents(db, requests.flat());
        this.nudge.nudge();
        let from = 0;
        return requests.map((events) => {
          from += events.length;
          return results.slice(from - events.length, from);
        });
      },
      { maxWeight: 1000, maxInFlight: 1, weight: (events) => events.length },
    );
  }
  close(): Promise<void> {
    return this.nudge.close();
  }
  track(events: TrackedEvent[]): Promise<TrackResult[]> {
    return events.length === 0 ? Promise.resolve([]) : this.group.submit(events);
  }
}

// the tracker of a context built without one (one per database, like the runtime's)
const fallbackTrackers = new WeakMap<Db, EventTracker>();

function trackerOf(ctx: Pick<DomainContext, 'db' | 'eventTracker'>): EventTracker {
  if (ctx.eventTracker instanceof EventTracker) return ctx.eventTracker;
  let tracker = fallbackTrackers.get(ctx.db);
  if (!tracker) {
    tracker = new EventTracker(ctx.db);
    fallbackTrackers.set(ctx.db, tracker);
  }
  return tracker;
}

/**
 * POST /events: one event, or 1 to MAX_EVENTS_PER_CALL validated whole (a bad one refuses all,
 * naming its index). Events whose unknown addresses would create contacts past the plan's limit
 * are refused (402) before anything is written; the results are answered once committed.
 */
export async function trackEvents(
  ctx: Pick<DomainContext, 'db'>,
  facts: ProjectFacts,
  input: EventInput | EventInput[],
): Promise<TrackResult[]> {
  if (Array.isArray(input) && (input.length === 0 || input.length > MAX_EVENTS_PER_CALL))
    throw new ValidationError(`Send 1 to ${MAX_EVENTS_PER_CALL} events in one call`);
  const events = Array.isArray(input)
    ? input.map((e, i) => checkEvent(facts.id, e, `[${i}].`))
    : [checkEvent(facts.id, input)];
  await checkContactLimit(
    ctx.db,
    facts,
    events.map((e) => e.email),
  );
  return trackerOf(ctx).track(events);
}

export interface EventQuery {
  limit: number;
  offset: number;
  event?: string;
  email?: string;
  created_after?: string;
  created_before?: string;
}

/** GET /events and GET /contacts/{id}/events: newest first, paginated. */
export async function listEvents(
  ctx: DomainContext,
  projectId: string,
  q: EventQuery & { contactId?: string },
) {
  const after = dateParam(q.created_after, 'created_after');
  const before = dateParam(q.created_before, 'created_before');
  const conditions = [sql`e.project_id = ${projectId}`];
  if (q.event !== undefined) conditions.push(sql`e.name = ${q.event}`);
  if (q.contactId !== undefined) conditions.push(sql`e.contact_id = ${q.contactId}`);
  if (q.email !== undefined) {
    const email = q.email.trim().toLowerCase();
    conditions.push(
      sql`e.contact_id in (select id from contacts where project_id = ${projectId} and email = ${email})`,
    );
  }
  if (after) conditions.push(sql`e.created_at >= ${after}`);
  if (before) conditions.push(sql`e.created_at < ${before}`);
  const filter = sql<boolean>`${sql.join(conditions, sql` and `)}`;
  const base = ctx.db
    .selectFrom('events as e')
    .innerJoin('contacts as c', 'c.id', 'e.contact_id')
    .where(filter);
  // the count reads events alone (every event has its contact): no join over millions of rows
  const counted = ctx.db.selectFrom('events as e').where(filter);
  const [rows, total] = await Promise.all([
    base
      .select([
        'e.id',
        'e.name',
        'e.properties',
        'e.value',
        'e.currency',
        'e.quantity',
        'e.campaign_id',
        'e.flow_id',
        'e.created_at',
        'e.contact_id',
        'c.email',
      ])
      .orderBy('e.created_at', 'desc')
      .orderBy('e.id', 'desc')
      .limit(q.limit)
      .offset(q.offset)
      .execute(),
    counted.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return {
    data: rows.map((r) => ({
      id: String(r.id),
      object: 'event' as const,
      event: r.name,
      email: r.email,
      contact_id: r.contact_id,
      properties: r.properties,
      value: r.value,
      currency: r.currency,
      quantity: r.quantity,
      campaign_id: r.campaign_id,
      flow_id: r.flow_id,
      created_at: r.created_at.toISOString(),
    })),
    total: Number(total.n),
    limit: q.limit,
    offset: q.offset,
  };
}

export async function listContactEvents(
  ctx: DomainContext,
  projectId: string,
  idOrEmail: string,
  q: EventQuery,
) {
  const contact = await findContact(ctx, projectId, idOrEmail);
  return listEvents(ctx, projectId, { ...q, contactId: contact.id });
}

const GROUPS = {
  day: sql<string>`to_char(date_trunc('day', e.created_at at time zone 'UTC'), 'YYYY-MM-DD')`,
  event: sql<string>`e.name`,
  campaign: sql<string>`e.campaign_id::text`,
  flow: sql<string>`e.flow_id::text`,
};

/**
 * GET /reports/revenue: the sum of `value` per currency, by day, event, campaign or flow. Values
 * tracked without a currency are summed in rows of their own (`currency: null`), never added to one.
 */
export async function revenueReport(
  ctx: DomainContext,
  projectId: string,
  q: { group_by?: string; from?: string; to?: string; currency?: string },
) {
  const groupBy = (q.group_by ?? 'day') as keyof typeof GROUPS;
  if (!(groupBy in GROUPS)) throw new ValidationError('`group_by` must be day, event, campaign or flow');
  const from = dateParam(q.from, 'from');
  const to = dateParam(q.to, 'to');
  let query = ctx.db
    .selectFrom('events as e')
    .where('e.project_id', '=', projectId)
    .where('e.value', 'is not', null);
  if (from) query = query.where('e.created_at', '>=', from);
  if (to) query = query.where('e.created_at', '<', to);
  if (q.currency) query = query.where('e.currency', '=', q.currency.toUpperCase());
  const key = GROUPS[groupBy];
  const rows = await query
    .select([
      key.as('key'),
      'e.currency',
      sql<number>`sum(e.value)`.as('revenue'),
      sql<number>`count(*)`.as('events'),
      sql<number>`coalesce(sum(e.quantity), 0)`.as('quantity'),
    ])
    .groupBy([key, 'e.currency'])
    .orderBy(key)
    .orderBy('e.currency', (o) => o.nullsLast())
    .execute();
  return {
    object: 'revenue_report' as const,
    group_by: groupBy,
    data: rows.map((r) => ({
      [groupBy]: r.key,
      currency: r.currency,
      revenue: Number(r.revenue),
      events: Number(r.events),
      quantity: Number(r.quantity),
    })),
  };
}
