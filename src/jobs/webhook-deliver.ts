import type { Task } from 'graphile-worker';
import type { DomainContext } from '../domain/core/context.ts';
import { deliverWebhook } from '../domain/webhooks/delivery-attempts.ts';

/** Makes one attempt at one webhook delivery and, when it fails, queues the next (see domain/webhooks/delivery-attempts.ts). */
export function webhookDeliverTask(ctx: DomainContext): Task<'webhook_deliver'> {
  return async (payload) => deliverWebhook(ctx, payload.delivery_id);
}
