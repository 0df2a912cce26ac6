import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { retryDelivery } from '../../domain/webhooks/delivery-attempts.ts';
import {
  type DeliveredMessage,
  deliveredMessage,
  deliveredMessages,
  messageAttempts,
} from '../../domain/webhooks/delivery-log.ts';
import { projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { resendEvents } from './present.ts';
import { CursorQuery, listOf } from './schemas.ts';
import { inResendFields, WEBHOOK_EVENT_STATUS } from './vocabulary.ts';

/**
 * A webhook's events and their attempts (issue 51) over Posthorn's delivery log
 * (domain/webhooks/delivery-log.ts): an event is one message to the endpoint, its attempts the
 * log's rows for it; `replay` is the log's retry (one more attempt now, the same `webhook-id`).
 */

const project = { auth: 'project' as const };
const EventParams = Type.Object({ id: Type.String(), event_id: Type.String() });

/** Where a message stands: delivered, waiting for its first try, being retried, or given up. */
function status(m: DeliveredMessage) {
  const { latest } = m;
  if (latest.status === 'pending') return latest.attempt > 0 ? 'attempting' : 'pending';
  if (latest.status === 'failed' && latest.next_retry_at) return 'attempting';
  return WEBHOOK_EVENT_STATUS[latest.status] ?? 'failed';
}

const typeOf = (m: DeliveredMessage) =>
  typeof m.payload.type === 'string' ? m.payload.type : resendEvents([m.event_type])[0];

const summary = (m: DeliveredMessage) => ({
  id: m.id,
  ...inResendFields('webhook_event', { event_type: typeOf(m) }),
  created_at: m.created_at.toISOString(),
  status: status(m),
});

export async function resendWebhookEventRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get(
    '/webhooks/:id/events',
    {
      config: project,
      schema: { hide: true, params: Type.Object({ id: Type.String() }), querystring: CursorQuery },
    },
    async (request) => {
      const { limit = 20, after, before } = request.query;
      const page = await deliveredMessages(ctx, projectOf(request), request.params.id, {
        limit,
        after,
        before,
      });
      return listOf(page.rows.map(summary), page.has_more);
    },
  );
  app.get(
    '/webhooks/:id/events/:event_id',
    { config: project, schema: { hide: true, params: EventParams } },
    async (request) => {
      const m = await deliveredMessage(ctx, projectOf(request), request.params.id, request.params.event_id);
      return {
        object: 'webhook_event',
        ...summary(m),
        ...inResendFields('webhook_event', { next_retry_at: m.latest.next_retry_at?.toISOString() ?? null }),
        payload: m.payload,
      };
    },
  );
  app.post(
    '/webhooks/:id/events/:event_id/replay',
    { config: project, schema: { hide: true, params: EventParams } },
    async (request) => {
      const { id, event_id } = request.params;
      const m = await deliveredMessage(ctx, projectOf(request), id, event_id);
      await retryDelivery(ctx, projectOf(request), id, m.latest.id);
      return { object: 'webhook_event', id: m.id };
    },
  );
  app.get(
    '/webhooks/:id/events/:event_id/attempts',
    { config: project, schema: { hide: true, params: EventParams, querystring: CursorQuery } },
    async (request) => {
      const { limit = 20, after, before } = request.query;
      const { id, event_id } = request.params;
      const page = await messageAttempts(ctx, projectOf(request), id, event_id, { limit, after, before });
      return listOf(
        page.rows.map((a) =>
          inResendFields('webhook_attempt', {
            id: a.id,
            status_code: a.status_code ?? 0,
            response_excerpt: a.response_excerpt ?? a.error ?? '',
            updated_at: a.updated_at.toISOString(),
          }),
        ),
        page.has_more,
      );
    },
  );
}
