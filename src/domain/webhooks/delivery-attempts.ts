import { randomUUID } from 'node:crypto';
import { type Selectable, sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { enqueue } from '../../db/enqueue.ts';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { isUuid } from '../core/ids.ts';
import { countWebhookAttempt } from '../maintenance/metrics.ts';
import { queueSystemEmail } from '../sending/system-mail.ts';
import { attemptDelivery, presentDelivery } from './endpoints.ts';

const FAILING_DAYS = 5;

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
  countWebhookAttempt((await attemptWithRetries(ctx, endpoint, delivery)).status);
}

type DeliveryRow = Selectable<WebhookDeliveriesTable>;
type EndpointRow = Selectable<WebhookEndpointsTable>;

/**
 * One attempt of a delivery now, and what its outcome changes, committed with its log row: 2xx
 * ends it; a failure schedules the next attempt from POSTHORN_WEBHOOK_SCHEDULE until it runs out
 * (next_retry_at shows when), and an endpoint failing without a success for 5 days is disabled.
 */
async function attemptWithRetries(ctx: DomainContext, endpoint: EndpointRow, delivery: DeliveryRow) {
  const attempt = delivery.attempt + 1;
  const schedule = ctx.config.webhookSchedule;
  return attemptDelivery(
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

/**
 * POST /webhooks/{id}/test: a sample `webhook.test` event, signed and attempted now through the
 * path every delivery takes (retried on the schedule when it fails); the attempt is the answer. A
 * paused endpoint is sent it too: testing is how one finds out whether to resume it.
 */
export async function sendTestEvent(ctx: DomainContext, projectId: string, id: string) {
  const endpoint = await findInProject(ctx.db, 'webhook_endpoints', 'Webhook', projectId, id);
  const payload = {
    type: 'webhook.test',
    created_at: new Date().toISOString(),
    data: { webhook_id: endpoint.id, project_id: projectId, message: 'A test event from Posthorn' },
  };
  const delivery = await ctx.db
    .insertInto('webhook_deliveries')
    .values({
      endpoint_id: endpoint.id,
      project_id: projectId,
      message_id: `msg_${randomUUID().replace(/-/g, '')}`,
      event_type: 'webhook.test',
      payload: JSON.stringify(payload),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  countWebhookAttempt((await attemptWithRetries(ctx, endpoint, delivery)).status);
  // as logged, with the next try a failure was given
  return presentDelivery(
    await ctx.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', delivery.id)
      .executeTakeFirstOrThrow(),
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
  ctx: Pick<DomainContext, 'db'>,
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
