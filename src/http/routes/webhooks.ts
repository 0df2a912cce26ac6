import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { retryDelivery, sendTestEvent } from '../../domain/webhooks/delivery-attempts.ts';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
  WEBHOOK_EVENTS,
} from '../../domain/webhooks/endpoints.ts';
import { webhookUrlRules } from '../../domain/webhooks/policy.ts';
import { projectFactsOf, projectOf } from '../auth.ts';
import { errors, list, Nullable, PageQuery, page, pageOf, typed } from '../schemas.ts';

const WebhookSchema = Type.Object(
  {
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
  },
  { title: 'Webhook' },
);
const WebhookList = Type.Object(list(WebhookSchema).properties, { title: 'WebhookList' });
const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('webhook_delivery'),
    webhook_id: Type.String(),
    message_id: Type.String({ description: 'the webhook-id header, the same for every attempt' }),
    event_type: Type.String(),
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'the request: the JSON body POSTed, with the headers webhook-id (message_id), webhook-timestamp and webhook-signature',
    }),
    attempt: Type.Integer(),
    status: Type.String({ enum: ['pending', 'succeeded', 'failed'] }),
    status_code: Nullable(Type.Integer()),
    latency_ms: Nullable(Type.Integer()),
    response_excerpt: Nullable(Type.String()),
    error: Nullable(Type.String()),
    next_retry_at: Nullable(Type.String()),
    created_at: Type.String(),
  },
  { title: 'WebhookDelivery' },
);
const WebhookDeliveryPage = Type.Object(page(DeliverySchema).properties, { title: 'WebhookDeliveryPage' });

const UrlRules = Type.Object(
  {
    object: Type.Literal('webhook_url_rules'),
    local_server: Type.Boolean({
      description:
        "the server's public URL (POSTHORN_PUBLIC_URL) is this machine: localhost, a .localhost name or a loopback address",
    }),
    loopback_allowed: Type.Boolean({
      description:
        'endpoints may point to this machine (localhost, 127.0.0.0/8, ::1), over http or https: on a local server, or with POSTHORN_WEBHOOK_ALLOW_PRIVATE=1',
    }),
    private_allowed: Type.Boolean({
      description: 'POSTHORN_WEBHOOK_ALLOW_PRIVATE=1: plain http and any private address (development only)',
    }),
  },
  { title: 'WebhookUrlRules' },
);
const Url = Type.String({
  maxLength: 2000,
  description:
    'where deliveries are POSTed: an https URL without user name or password, whose host resolves to public addresses only; on a server whose public URL is local, also this machine (localhost, 127.0.0.0/8, ::1) over http or https (GET /v1/webhooks/url-rules)',
});
const Events = Type.Array(Type.Enum(WEBHOOK_EVENTS, { type: 'string' }), {
  minItems: 1,
  maxItems: WEBHOOK_EVENTS.length,
  description: 'the event types to deliver (duplicates are dropped)',
});
const Description = Nullable(
  Type.String({ maxLength: 1000, description: 'a note for people, at most 1,000 characters; null for none' }),
);
const CreateWebhookRequest = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description) },
  { title: 'CreateWebhookRequest' },
);
const UpdateWebhookRequest = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Description),
    enabled: Type.Optional(
      Type.Boolean({
        description: 'false pauses deliveries; true resumes them and clears `disabled_reason`',
      }),
    ),
  },
  { title: 'UpdateWebhookRequest', description: 'only the fields sent change' },
);
const WebhookParams = Type.Object({ id: Type.String({ description: 'webhook id' }) });
const DeliveryParams = Type.Object({
  ...WebhookParams.properties,
  delivery_id: Type.String({ description: 'delivery id' }),
});

/** Webhook endpoints: signed (Standard Webhooks) deliveries of events to the caller's URL. */
export async function webhookRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  // creating, changing, testing and retrying webhooks needs Owner or Admin when a session acts
  const manage = { ...config, role: 'admin' as const };
  const tags = ['webhooks'];

  app.get(
    '/webhooks',
    {
      config,
      schema: {
        tags,
        summary: 'Every webhook endpoint',
        operationId: 'listWebhooks',
        response: { 200: WebhookList, ...errors(401) },
      },
    },
    async (request) => listEndpoints(ctx, projectOf(request)),
  );
  app.post(
    '/webhooks',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Create an endpoint; the answer shows its signing secret once',
        operationId: 'createWebhook',
        description:
          'Deliveries carry the Standard Webhooks headers `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the secret). The URL must be https and resolve to public addresses only, except on a server whose public URL is local, where it may also point to this machine over http (GET /v1/webhooks/url-rules).',
        body: CreateWebhookRequest,
        response: { 200: WebhookSchema, ...errors(400, 401, 402) },
      },
    },
    async (request) => createEndpoint(ctx, await projectFactsOf(request, ctx), request.body),
  );
  app.get(
    '/webhooks/url-rules',
    {
      config,
      schema: {
        tags,
        summary: 'Where this server lets an endpoint URL point',
        operationId: 'getWebhookUrlRules',
        description:
          'https to public addresses in production. A server whose public URL is local (localhost, a .localhost name, a loopback address) also takes endpoints on this machine, over plain http too, to try webhooks with a local receiver; POSTHORN_WEBHOOK_ALLOW_PRIVATE=1 allows plain http and every private address.',
        response: { 200: UrlRules, ...errors(401) },
      },
    },
    async () => webhookUrlRules(ctx),
  );
  app.get(
    '/webhooks/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One endpoint',
        operationId: 'getWebhook',
        params: WebhookParams,
        response: { 200: WebhookSchema, ...errors(401, 404) },
      },
    },
    async (request) => getEndpoint(ctx, projectOf(request), request.params.id),
  );
  app.patch(
    '/webhooks/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Change the URL, events, description, or enable/disable',
        operationId: 'updateWebhook',
        params: WebhookParams,
        body: UpdateWebhookRequest,
        response: { 200: WebhookSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => updateEndpoint(ctx, projectOf(request), request.params.id, request.body),
  );
  app.delete(
    '/webhooks/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Delete an endpoint',
        operationId: 'deleteWebhook',
        params: WebhookParams,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteEndpoint(ctx, projectOf(request), request.params.id);
      return reply.code(204).send();
    },
  );
  app.post(
    '/webhooks/:id/secret/rotate',
    {
      config: manage,
      schema: {
        tags,
        summary: 'A new signing secret; the old one keeps signing beside it for 24 hours',
        operationId: 'rotateWebhookSecret',
        params: WebhookParams,
        response: { 200: WebhookSchema, ...errors(401, 404) },
      },
    },
    async (request) => rotateSecret(ctx, projectOf(request), request.params.id),
  );
  app.post(
    '/webhooks/:id/test',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Send a signed sample event (`webhook.test`) now and return the attempt',
        description:
          'Attempted at once through the path of every delivery: logged with the deliveries, and when it fails, tried again on the schedule of POSTHORN_WEBHOOK_SCHEDULE (`next_retry_at` says when). A paused endpoint is sent it too.',
        operationId: 'sendWebhookTestEvent',
        params: WebhookParams,
        response: { 200: DeliverySchema, ...errors(401, 404) },
      },
    },
    async (request) => sendTestEvent(ctx, projectOf(request), request.params.id),
  );
  app.post(
    '/webhooks/:id/deliveries/:delivery_id/retry',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Send a delivery again now (a new attempt, same webhook-id)',
        operationId: 'retryWebhookDelivery',
        params: DeliveryParams,
        response: { 200: DeliverySchema, ...errors(401, 404) },
      },
    },
    async (request) => retryDelivery(ctx, projectOf(request), request.params.id, request.params.delivery_id),
  );
  app.get(
    '/webhooks/:id/deliveries',
    {
      config,
      schema: {
        tags,
        summary: 'Delivery attempts, newest first',
        operationId: 'listWebhookDeliveries',
        params: WebhookParams,
        querystring: PageQuery,
        response: { 200: WebhookDeliveryPage, ...errors(400, 401, 404) },
      },
    },
    async (request) => listDeliveries(ctx, projectOf(request), request.params.id, pageOf(request.query)),
  );
}
