import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { enqueue, type JobSpec } from '../../jobs/enqueue.ts';
import { presentContact } from '../audience/contacts.ts';
import type { AudienceEvent } from '../audience/triggers.ts';
import type { DomainContext } from '../context.ts';
import { presentDomain } from '../domains.ts';
import { presentEmail } from '../emails/read.ts';
import { NotFoundError } from '../errors.ts';
import { isUuid } from '../ids.ts';
import { getInbound } from '../inbound/messages.ts';
import { queueSystemEmail } from '../system-mail.ts';
import { attemptDelivery, presentDelivery } from './endpoints.ts';

/**
 * A webhook event before fan-out: its type, project, time, the `data` object, and `key`, which
 * tells it apart from the other events of the same job (the email event's or the subject's id).
 */
export interface WebhookEvent {
  type: string;
  key: string;
  projectId: string;
  createdAt: Date;
  data: Record<string, unknown>;
}

const EMAIL_EVENT_TYPES: Record<string, string> = {
  sent: 'email.sent',
  delivered: 'email.delivered',
  deferred: 'email.deferred',
  bounced: 'email.bounced',
  complained: 'email.complained',
  failed: 'email.failed',
  suppressed: 'email.suppressed',
};
const FAILING_DAYS = 5;

/** Projects among these with at least one enabled endpoint (most have none: skip the work). */
export async function projectsWithWebhooks(db: Db | Tx, projectIds: string[]): Promise<Set<string>> {
  if (projectIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select('project_id')
    .distinct()
    .where('project_id', 'in', [...new Set(projectIds)])
    .where('enabled', '=', true)
    .execute();
  return new Set(rows.map((r) => r.project_id));
}

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

async function emailEvents(ctx: DomainContext, ids: number[]): Promise<WebhookEvent[]> {
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

async function contactEvents(ctx: DomainContext, event: AudienceEvent): Promise<WebhookEvent[]> {
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

/** The audience_event subscriber: contact events become webhook events for projects with endpoints. */
export function audienceWebhookSubscriber(ctx: DomainContext) {
  return async (event: AudienceEvent, occurrence: string) => {
    if (!event.type.startsWith('contact.')) return;
    if (!(await projectsWithWebhooks(ctx.db, [event.project_id])).has(event.project_id)) return;
    await fanOut(ctx, await contactEvents(ctx, event), occurrence);
  };
}

/**
 * Fans events out to the endpoints subscribed to them: one delivery row (with a stable
 * `webhook-id`) and one delivery job each, committed together. `occurrence` names the job doing it
 * (stable when that job runs again): the delivery's key and webhook-id derive from it, the event's
 * key and the endpoint, so a second run adds no delivery and sends nothing twice.
 */
export async function fanOut(
  ctx: DomainContext,
  events: WebhookEvent[],
  occurrence: string,
): Promise<number> {
  if (events.length === 0) return 0;
  const endpoints = await ctx.db
    .selectFrom('webhook_endpoints')
    .select(['id', 'project_id', 'events'])
    .where('project_id', 'in', [...new Set(events.map((e) => e.projectId))])
    .where('enabled', '=', true)
    .execute();
  const deliveries = events.flatMap((e) =>
    endpoints
      .filter((ep) => ep.project_id === e.projectId && ep.events.includes(e.type))
      .map((ep) => {
        const fanoutKey = createHash('sha256')
          .update(`${occurrence}\n${e.type}\n${e.key}\n${ep.id}`)
          .digest('hex');
        return {
          endpoint_id: ep.id,
          project_id: e.projectId,
          message_id: `msg_${fanoutKey.slice(0, 32)}`,
          fanout_key: fanoutKey,
          event_type: e.type,
          payload: JSON.stringify({ type: e.type, created_at: e.createdAt.toISOString(), data: e.data }),
        };
      }),
  );
  if (deliveries.length === 0) return 0;
  const delay = ctx.config.webhookSchedule[0] ?? 0;
  return ctx.db.transaction().execute(async (tx) => {
    const ids: string[] = [];
    // in chunks: a statement takes at most 65,535 parameters (6 a row here)
    for (let i = 0; i < deliveries.length; i += 5_000) {
      const rows = await tx
        .insertInto('webhook_deliveries')
        .values(deliveries.slice(i, i + 5_000))
        .onConflict((oc) => oc.column('fanout_key').doNothing())
        .returning('id')
        .execute();
      ids.push(...rows.map((r) => r.id));
    }
    // only what this run added gets a delivery job: a second run finds the rows and adds none
    const jobs: JobSpec[] = ids.map((id) => ({
      task: 'webhook_deliver',
      payload: { delivery_id: id },
      runAt: delay > 0 ? new Date(Date.now() + delay * 1000) : null,
      maxAttempts: 3,
    }));
    await enqueue(tx, jobs);
    return ids.length;
  });
}

export interface DispatchPayload {
  email_event_ids?: number[];
  /** Emails stored as suppressed at acceptance: their `suppressed` events. */
  suppressed_email_ids?: string[];
  inbound_id?: string;
  domain_id?: string;
  domain_event?: string;
}

/** The webhook_dispatch job: turns announced events into deliveries. */
export async function dispatchWebhooks(ctx: DomainContext, payload: DispatchPayload, occurrence: string) {
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

/**
 * The webhook_deliver job: one attempt. 2xx ends it; otherwise the next attempt is scheduled
 * from POSTHORN_WEBHOOK_SCHEDULE until it runs out. An endpoint that has failed without a success
 * for 5 days is disabled and the account owner is told by email.
 */
export async function deliverWebhook(ctx: DomainContext, deliveryId: string) {
  const delivery = await ctx.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', deliveryId)
    .executeTakeFirst();
  if (delivery?.status !== 'pending') return;
  const endpoint = await ctx.db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', delivery.endpoint_id)
    .executeTakeFirst();
  if (!endpoint?.enabled) {
    await ctx.db
      .updateTable('webhook_deliveries')
      .set({
        status: 'failed',
        error: 'the endpoint is disabled',
        next_retry_at: null,
        updated_at: new Date(),
      })
      .where('id', '=', delivery.id)
      .execute();
    return;
  }
  const attempt = delivery.attempt + 1;
  const schedule = ctx.config.webhookSchedule;
  await attemptDelivery(
    ctx,
    endpoint,
    { id: delivery.id, messageId: delivery.message_id, attempt, payload: delivery.payload },
    async (tx, result) => {
      if (result.status === 'succeeded') {
        // the common case writes nothing more
        if (endpoint.failing_since)
          await tx
            .updateTable('webhook_endpoints')
            .set({ failing_since: null })
            .where('id', '=', endpoint.id)
            .execute();
        return;
      }
      const failingSince = endpoint.failing_since ?? new Date();
      if (!endpoint.failing_since)
        await tx
          .updateTable('webhook_endpoints')
          .set({ failing_since: failingSince })
          .where('id', '=', endpoint.id)
          .execute();
      if (Date.now() - failingSince.getTime() > FAILING_DAYS * 86_400_000) {
        await disableEndpoint(tx, ctx, endpoint.id, endpoint.project_id, endpoint.url);
        return;
      }
      if (attempt < schedule.length) {
        const retryAt = new Date(Date.now() + schedule[attempt] * 1000);
        await tx
          .updateTable('webhook_deliveries')
          .set({ next_retry_at: retryAt })
          .where('id', '=', delivery.id)
          .execute();
        await queueAttempt(tx, delivery, attempt, retryAt);
      }
    },
  );
}

/** Logs the next attempt of a delivery (same webhook-id and payload) and schedules it. */
async function queueAttempt(
  tx: Tx,
  delivery: {
    endpoint_id: string;
    project_id: string;
    message_id: string;
    event_type: string;
    payload: Record<string, unknown>;
  },
  attemptsSoFar: number,
  runAt: Date | null,
): Promise<string> {
  const next = await tx
    .insertInto('webhook_deliveries')
    .values({
      endpoint_id: delivery.endpoint_id,
      project_id: delivery.project_id,
      message_id: delivery.message_id,
      event_type: delivery.event_type,
      payload: JSON.stringify(delivery.payload),
      attempt: attemptsSoFar,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await enqueue(tx, [{ task: 'webhook_deliver', payload: { delivery_id: next.id }, runAt, maxAttempts: 3 }]);
  return next.id;
}

/** POST /webhooks/{id}/deliveries/{delivery_id}/retry: one more attempt now, logged as a new row. */
export async function retryDelivery(
  ctx: DomainContext,
  projectId: string,
  endpointId: string,
  deliveryId: string,
) {
  if (!isUuid(endpointId) || !isUuid(deliveryId)) throw new NotFoundError('Webhook delivery');
  const delivery = await ctx.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', deliveryId)
    .where('endpoint_id', '=', endpointId)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  if (!delivery) throw new NotFoundError('Webhook delivery');
  const latest = await ctx.db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.max('attempt').as('n'))
    .where('message_id', '=', delivery.message_id)
    .executeTakeFirstOrThrow();
  const id = await ctx.db
    .transaction()
    .execute((tx) => queueAttempt(tx, delivery, Number(latest.n ?? 0), null));
  const row = await ctx.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return presentDelivery(row);
}

async function disableEndpoint(
  tx: Tx,
  ctx: DomainContext,
  endpointId: string,
  projectId: string,
  url: string,
) {
  await tx
    .updateTable('webhook_endpoints')
    .set({ enabled: false, disabled_reason: `failing for ${FAILING_DAYS} days`, updated_at: new Date() })
    .where('id', '=', endpointId)
    .execute();
  const owner = await sql<{ email: string }>`
    select a.email from projects p join workspaces w on w.id = p.workspace_id join accounts a on a.id = w.owner_account_id
     where p.id = ${projectId}`.execute(tx);
  if (owner.rows[0]) {
    await queueSystemEmail(tx, ctx, {
      to: owner.rows[0].email,
      subject: 'Posthorn: a webhook endpoint was disabled',
      text: `Deliveries to ${url} have failed for ${FAILING_DAYS} days, so the endpoint (${endpointId}) was disabled.\n\nFix the receiver, then turn it on again with PATCH /v1/webhooks/${endpointId} {"enabled": true}.\n`,
    });
  }
}
