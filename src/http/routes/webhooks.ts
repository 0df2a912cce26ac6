import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/context.ts';
import { retryDelivery } from '../../domain/webhooks/dispatch.ts';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
  WEBHOOK_EVENTS,
} from '../../domain/webhooks/endpoints.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { bearerSecurity, errors, list, Nullable, PageQuery, page } from '../schemas.ts';

const WebhookSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('webhook'),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  secret: Type.Optional(Type.String({ description: 'whsec_...: shown at creation and rotation only' })),
});
const DeliverySchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('webhook_delivery'),
  webhook_id: Type.String(),
  message_id: Type.String({ description: 'the webhook-id header, the same for every attempt' }),
  event_type: Type.String(),
  attempt: Type.Integer(),
  status: Type.String({ enum: ['pending', 'succeeded', 'failed'] }),
  status_code: Nullable(Type.Integer()),
  latency_ms: Nullable(Type.Integer()),
  response_excerpt: Nullable(Type.String()),
  error: Nullable(Type.String()),
  next_retry_at: Nullable(Type.String()),
  created_at: Type.String(),
});
const Body = Type.Object({
  url: Type.Optional(Type.Unknown({ description: 'https URL of a public address' })),
  events: Type.Optional(Type.Unknown({ description: `event types: ${WEBHOOK_EVENTS.join(', ')}` })),
  description: Type.Optional(Type.Unknown()),
  enabled: Type.Optional(Type.Unknown()),
});
const Params = Type.Object({ id: Type.String() });
type Json = Record<string, unknown>;

/** Webhook endpoints: signed (Standard Webhooks) deliveries of events to the caller's URL. */
export async function webhookRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const config = { auth: 'project' as const };
  const tags = ['webhooks'];
  const id = (request: { params: unknown }) => (request.params as { id: string }).id;

  app.get(
    '/webhooks',
    {
      config,
      schema: {
        tags,
        summary: 'Every webhook endpoint',
        security: bearerSecurity,
        response: { 200: list(WebhookSchema), ...errors(401) },
      },
    },
    async (request) => listEndpoints(ctx, projectOf(request)),
  );
  app.post(
    '/webhooks',
    {
      config,
      schema: {
        tags,
        summary: 'Create an endpoint; the answer shows its signing secret once',
        description:
          'Deliveries carry the Standard Webhooks headers `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the secret). The URL must be https and resolve to public addresses only.',
        security: bearerSecurity,
        body: Body,
        response: { 200: WebhookSchema, ...errors(400, 401, 402) },
      },
    },
    async (request) => createEndpoint(ctx, await projectFactsOf(request, ctx), request.body as Json),
  );
  app.get(
    '/webhooks/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One endpoint',
        security: bearerSecurity,
        params: Params,
        response: { 200: WebhookSchema, ...errors(401, 404) },
      },
    },
    async (request) => getEndpoint(ctx, projectOf(request), id(request)),
  );
  app.patch(
    '/webhooks/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Change the URL, events, description, or enable/disable',
        security: bearerSecurity,
        params: Params,
        body: Body,
        response: { 200: WebhookSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => updateEndpoint(ctx, projectOf(request), id(request), request.body as Json),
  );
  app.delete(
    '/webhooks/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete an endpoint',
        security: bearerSecurity,
        params: Params,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteEndpoint(ctx, projectOf(request), id(request));
      return reply.code(204).send();
    },
  );
  app.post(
    '/webhooks/:id/secret/rotate',
    {
      config,
      schema: {
        tags,
        summary: 'A new signing secret; the old one keeps signing beside it for 24 hours',
        security: bearerSecurity,
        params: Params,
        response: { 200: WebhookSchema, ...errors(401, 404) },
      },
    },
    async (request) => rotateSecret(ctx, projectOf(request), id(request)),
  );
  app.post(
    '/webhooks/:id/test',
    {
      config,
      schema: {
        tags,
        summary: 'Send a signed sample event (`webhook.test`) now and return the attempt',
        security: bearerSecurity,
        params: Params,
        response: { 200: DeliverySchema, ...errors(401, 404) },
      },
    },
    async (request) => sendTestEvent(ctx, projectOf(request), id(request)),
  );
  app.post(
    '/webhooks/:id/deliveries/:delivery_id/retry',
    {
      config,
      schema: {
        tags,
        summary: 'Send a delivery again now (a new attempt, same webhook-id)',
        security: bearerSecurity,
        params: Type.Object({ id: Type.String(), delivery_id: Type.String() }),
        response: { 200: DeliverySchema, ...errors(401, 404) },
      },
    },
    async (request) => {
      const p = request.params as { id: string; delivery_id: string };
      return retryDelivery(ctx, projectOf(request), p.id, p.delivery_id);
    },
  );
  app.get(
    '/webhooks/:id/deliveries',
    {
      config,
      schema: {
        tags,
        summary: 'Delivery attempts, newest first',
        security: bearerSecurity,
        params: Params,
        querystring: PageQuery,
        response: { 200: page(DeliverySchema), ...errors(400, 401, 404) },
      },
    },
    async (request) =>
      listDeliveries(
        ctx,
        projectOf(request),
        id(request),
        request.query as { limit: number; offset: number },
      ),
  );
}
