import type { FastifyInstance } from 'fastify';
import { type Selectable, sql } from 'kysely';
import { Type } from 'typebox';
import type { WebhookEndpointsTable } from '../../db/schema.ts';
import { hasRole } from '../../domain/accounts/roles.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { keysetPage } from '../../domain/core/keyset.ts';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpointWithSecret,
  rotateSecret,
  updateEndpoint,
  type WebhookEventType,
} from '../../domain/webhooks/endpoints.ts';
import { authOf, projectFactsOf, projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { roleOf } from './counterparts.ts';
import { posthornEvents, resendEvents, UNSUPPORTED_EVENTS } from './present.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';

/**
 * Webhooks with Resend's event names (email.delivery_delayed, domain.updated) over Posthorn's
 * endpoints; deliveries are signed as Standard Webhooks, which Resend's `webhooks.verify` checks.
 */

const project = { auth: 'project' as const };

function eventsOf(given: string[]): WebhookEventType[] {
  const missing = given.filter((e) => UNSUPPORTED_EVENTS[e]);
  if (missing.length > 0)
    throw new ValidationError(
      `\`events\`: ${missing.map((e) => `${e} is not available (${UNSUPPORTED_EVENTS[e]})`).join('; ')}`,
    );
  return posthornEvents(given) as WebhookEventType[];
}

type Endpoint = { id: string; url: string; events: string[]; enabled: boolean; created_at: string };
const summary = (e: Endpoint) => ({
  id: e.id,
  endpoint: e.url,
  events: resendEvents(e.events),
  status: e.enabled ? 'enabled' : 'disabled',
  created_at: e.created_at,
});

export async function resendWebhookRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const Body = {
    endpoint: Type.Optional(Type.String()),
    events: Type.Optional(Type.Array(Type.String())),
    status: Type.Optional(Type.String()),
  };
  app.post(
    '/webhooks',
    {
      config: project,
      schema: {
        hide: true,
        body: Type.Object(
          { endpoint: Type.String(), events: Type.Array(Type.String()) },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) => {
      const created = await createEndpoint(ctx, await projectFactsOf(request, ctx), {
        url: request.body.endpoint,
        events: eventsOf(request.body.events),
        dialect: 'resend',
      });
      return reply.code(201).send({ object: 'webhook', id: created.id, signing_secret: created.secret });
    },
  );
  app.get(
    '/webhooks',
    { config: project, schema: { hide: true, querystring: CursorQuery } },
    async (request) => {
      const page = await keysetPage<Selectable<WebhookEndpointsTable>>(
        ctx.db,
        'webhook_endpoints',
        sql<boolean>`project_id = ${projectOf(request)}`,
        request.query,
      );
      return listOf(
        page.rows.map((r) => summary({ ...r, created_at: r.created_at.toISOString() })),
        page.has_more,
      );
    },
  );
  // Resend shows the signing secret on every read; /v1 only to who may rotate it (issue 47, item 4)
  const secretRole = roleOf(instance, 'POST /v1/webhooks/:id/secret/rotate');
  app.get('/webhooks/:id', { config: project, schema: { hide: true, params: IdParams } }, async (request) => {
    const found = await getEndpointWithSecret(ctx, projectOf(request), request.params.id);
    const role = authOf(request).role;
    const mayRead = role === null || hasRole(role, secretRole);
    return { object: 'webhook', ...summary(found), ...(mayRead ? { signing_secret: found.secret } : {}) };
  });
  app.patch(
    '/webhooks/:id',
    {
      config: project,
      schema: { hide: true, params: IdParams, body: Type.Object(Body, { additionalProperties: true }) },
    },
    async (request) => {
      const { endpoint, events, status } = request.body;
      if (status !== undefined && status !== 'enabled' && status !== 'disabled')
        throw new ValidationError('`status` must be enabled or disabled');
      const updated = await updateEndpoint(ctx, projectOf(request), request.params.id, {
        ...(endpoint !== undefined ? { url: endpoint } : {}),
        ...(events !== undefined ? { events: eventsOf(events) } : {}),
        ...(status !== undefined ? { enabled: status === 'enabled' } : {}),
      });
      return { object: 'webhook', id: updated.id };
    },
  );
  // the old secret keeps signing beside the new one for 24 hours, as on /v1
  app.post(
    '/webhooks/:id/signing-secret/rotate',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      const rotated = await rotateSecret(ctx, projectOf(request), request.params.id);
      return { object: 'webhook', id: rotated.id, signing_secret: rotated.secret };
    },
  );
  app.delete(
    '/webhooks/:id',
    { config: project, schema: { hide: true, params: IdParams } },
    async (request) => {
      await deleteEndpoint(ctx, projectOf(request), request.params.id);
      return { object: 'webhook', id: request.params.id, deleted: true };
    },
  );
}
