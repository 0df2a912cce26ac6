import type { Tx } from '../../db/database.ts';
import { enqueue } from '../../db/enqueue.ts';
import { presentContact } from '../audience/contacts.ts';
import type { AudienceEvent } from '../audience/triggers.ts';
import type { DomainContext } from '../core/context.ts';
import { presentEmail } from '../emails/read.ts';
import { getInbound } from '../inbound/messages.ts';
import { presentDomain } from '../sending-domains/domains.ts';
import { tripsOf } from '../shaping/breaker-api.ts';
import { fanOut, type WebhookEvent } from './fan-out.ts';
import { projectsWithWebhooks } from './subscribed.ts';

const EMAIL_EVENT_TYPES: Record<string, string> = {
  sent: 'email.sent',
  delivered: 'email.delivered',
  deferred: 'email.deferred',
  bounced: 'email.bounced',
  complained: 'email.complained',
  failed: 'email.failed',
  suppressed: 'email.suppressed',
  opened: 'email.opened',
  clicked: 'email.clicked',
  unsubscribed: 'email.unsubscribed',
};

/** Inside the transaction that writes email events: a dispatch job for those with a webhook type. */
export async function announceEmailEvents(
  tx: Tx,
  events: { id: number; project_id: string; type: string }[],
) {
  const relevant = events.filter((e) => EMAIL_EVENT_TYPES[e.type]);
  const projects = await projectsWithWebhooks(
    tx,
    relevant.map((e) => e.project_id),
  );
  const ids = relevant.filter((e) => projects.has(e.project_id)).map((e) => e.id);
  if (ids.length > 0) await enqueue(tx, [{ task: 'webhook_dispatch', payload: { email_event_ids: ids } }]);
}

async function emailEvents(ctx: Pick<DomainContext, 'db'>, ids: number[]): Promise<WebhookEvent[]> {
  const rows = await ctx.db
    .selectFrom('email_events as ev')
    .innerJoin('emails as e', 'e.id', 'ev.email_id')
    .selectAll('e')
    .select([
      'ev.id as event_id',
      'ev.type as event_type',
      'ev.recipient as event_recipient',
      'ev.detail as event_detail',
      'ev.created_at as event_at',
    ])
    .where('ev.id', 'in', ids)
    .orderBy('ev.id')
    .execute();
  return rows.map((r) => ({
    type: EMAIL_EVENT_TYPES[r.event_type],
    key: String(r.event_id),
    projectId: r.project_id,
    createdAt: r.event_at,
    data: {
      ...presentEmail(r),
      event: { type: r.event_type, recipient: r.event_recipient, ...r.event_detail },
    },
  }));
}

async function contactEvents(ctx: Pick<DomainContext, 'db'>, event: AudienceEvent): Promise<WebhookEvent[]> {
  if (event.type === 'contact.topic_changed') return topicEvents(ctx, event);
  const type =
    event.type === 'contact.subscription_changed'
      ? event.subscribed === false && !event.list_id
        ? 'contact.unsubscribed'
        : null
      : ['contact.created', 'contact.updated', 'contact.deleted'].includes(event.type)
        ? event.type
        : null;
  if (!type || !event.contact_ids?.length) return [];
  if (type === 'contact.deleted') {
    return event.contact_ids.map((id) => ({
      type,
      key: id,
      projectId: event.project_id,
      createdAt: new Date(),
      data: { id, object: 'contact', deleted: true },
    }));
  }
  const rows = await ctx.db
    .selectFrom('contacts')
    .selectAll()
    .where('project_id', '=', event.project_id)
    .where('id', 'in', event.contact_ids.slice(0, 10_000))
    .execute();
  return rows.map((row) => ({
    type,
    key: row.id,
    projectId: event.project_id,
    createdAt: new Date(),
    data: presentContact(row),
  }));
}

/** A contact's choice of a topic: `contact.topic_subscribed` or `contact.topic_unsubscribed`, with the topic. */
async function topicEvents(ctx: Pick<DomainContext, 'db'>, event: AudienceEvent): Promise<WebhookEvent[]> {
  if (!event.topic_id || !event.contact_ids?.length) return [];
  const topic = await ctx.db
    .selectFrom('topics')
    .select(['id', 'name'])
    .where('id', '=', event.topic_id)
    .where('project_id', '=', event.project_id)
    .executeTakeFirst();
  if (!topic) return [];
  const rows = await ctx.db
    .selectFrom('contacts')
    .selectAll()
    .where('project_id', '=', event.project_id)
    .where('id', 'in', event.contact_ids.slice(0, 10_000))
    .execute();
  const type = event.subscribed ? 'contact.topic_subscribed' : 'contact.topic_unsubscribed';
  return rows.map((row) => ({
    type,
    key: `${row.id}:${topic.id}`,
    projectId: event.project_id,
    createdAt: new Date(),
    data: { ...presentContact(row), topic: { id: topic.id, object: 'topic', name: topic.name } },
  }));
}

/** The audience_event subscriber: contact events become webhook events for projects with endpoints. */
export function audienceWebhookSubscriber(ctx: DomainContext) {
  return async (event: AudienceEvent, occurrence: string) => {
    if (!event.type.startsWith('contact.')) return;
    if (!(await projectsWithWebhooks(ctx.db, [event.project_id])).has(event.project_id)) return;
    await fanOut(ctx, await contactEvents(ctx, event), occurrence);
  };
}

export interface DispatchPayload {
  email_event_ids?: number[];
  /** Emails stored as suppressed at acceptance: their `suppressed` events. */
  suppressed_email_ids?: string[];
  inbound_id?: string;
  domain_id?: string;
  domain_event?: string;
  /** The circuit breaker's decisions (shaping/breaker.ts): `breaker.tripped`. */
  breaker_trip_ids?: string[];
  /** What DMARC reports showed (dmarc/alerts.ts): `dmarc.unknown_source`, `dmarc.alignment_dropped`. */
  dmarc_alert_ids?: string[];
}

/** A DMARC alert as webhooks show it: the domain, and what the reports showed. */
async function dmarcAlertEvents(ctx: Pick<DomainContext, 'db'>, ids: string[]): Promise<WebhookEvent[]> {
  const rows = await ctx.db
    .selectFrom('dmarc_alerts as a')
    .innerJoin('domains as d', 'd.id', 'a.domain_id')
    .select(['a.id', 'a.kind', 'a.detail', 'a.created_at', 'd.id as domain_id', 'd.name', 'd.project_id'])
    .where('a.id', 'in', ids)
    .execute();
  return rows.map((r) => ({
    type: `dmarc.${r.kind}`,
    key: r.id,
    projectId: r.project_id,
    createdAt: r.created_at,
    data: {
      id: r.id,
      object: 'dmarc_alert',
      kind: r.kind,
      domain_id: r.domain_id,
      domain: r.name,
      ...r.detail,
      created_at: r.created_at.toISOString(),
    },
  }));
}

/** A breaker decision as webhooks and the API show it. */
async function breakerEvents(ctx: Pick<DomainContext, 'db'>, ids: string[]): Promise<WebhookEvent[]> {
  const rows = await tripsOf(ctx, ids);
  return rows.map((r) => ({
    type: 'breaker.tripped',
    key: r.id,
    projectId: r.project_id,
    createdAt: r.created_at,
    data: {
      id: r.id,
      object: 'breaker_trip',
      scope: r.scope,
      [`${r.scope}_id`]: r.key,
      level: r.level,
      metric: r.metric,
      rate: Number(r.rate),
      threshold: Number(r.threshold),
      messages: Number(r.messages),
      reason: r.reason,
      created_at: r.created_at.toISOString(),
    },
  }));
}

/** The webhook_dispatch job: turns announced events into deliveries. */
export async function dispatchWebhooks(ctx: DomainContext, payload: DispatchPayload, occurrence: string) {
  if (payload.breaker_trip_ids?.length)
    await fanOut(ctx, await breakerEvents(ctx, payload.breaker_trip_ids), occurrence);
  if (payload.dmarc_alert_ids?.length)
    await fanOut(ctx, await dmarcAlertEvents(ctx, payload.dmarc_alert_ids), occurrence);
  if (payload.email_event_ids?.length)
    await fanOut(ctx, await emailEvents(ctx, payload.email_event_ids), occurrence);
  if (payload.suppressed_email_ids?.length) {
    const rows = await ctx.db
      .selectFrom('email_events')
      .select('id')
      .where('email_id', 'in', payload.suppressed_email_ids)
      .where('type', '=', 'suppressed')
      .execute();
    if (rows.length > 0)
      await fanOut(
        ctx,
        await emailEvents(
          ctx,
          rows.map((r) => Number(r.id)),
        ),
        occurrence,
      );
  }
  if (payload.inbound_id) {
    const row = await ctx.db
      .selectFrom('inbound_messages')
      .select(['project_id', 'created_at'])
      .where('id', '=', payload.inbound_id)
      .executeTakeFirst();
    if (row) {
      const data = await getInbound(ctx, row.project_id, payload.inbound_id);
      await fanOut(
        ctx,
        [
          {
            type: 'email.received',
            key: payload.inbound_id,
            projectId: row.project_id,
            createdAt: row.created_at,
            data,
          },
        ],
        occurrence,
      );
    }
  }
  if (payload.domain_id && payload.domain_event) {
    const row = await ctx.db
      .selectFrom('domains')
      .selectAll()
      .where('id', '=', payload.domain_id)
      .executeTakeFirst();
    if (row) {
      const data = await presentDomain(ctx, row);
      await fanOut(
        ctx,
        [{ type: payload.domain_event, key: row.id, projectId: row.project_id, createdAt: new Date(), data }],
        occurrence,
      );
    }
  }
}
