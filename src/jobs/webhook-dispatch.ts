import type { Task } from 'graphile-worker';
import type { DomainContext } from '../domain/core/context.ts';
import { dispatchWebhooks } from '../domain/webhooks/dispatch.ts';

/**
 * Fans announced events (email events, suppressed accepts, an inbound message, a domain's new
 * status) out to the subscribed endpoints; the job's id keys each delivery, so a re-run adds none
 * (see domain/webhooks/dispatch.ts).
 */
export function webhookDispatchTask(ctx: DomainContext): Task<'webhook_dispatch'> {
  return async (payload, helpers) => dispatchWebhooks(ctx, payload, `job:${helpers.job.id}`);
}
