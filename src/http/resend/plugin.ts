import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DomainContext } from '../../domain/core/context.ts';
import { resendAudienceRoutes } from './audience.ts';
import { resendBroadcastRoutes } from './broadcasts.ts';
import { resendDomainRoutes } from './domains.ts';
import { resendEmailRoutes } from './emails.ts';
import { UNSUPPORTED } from './unsupported.ts';
import { resendWebhookRoutes } from './webhooks.ts';

/**
 * The Resend-compatible door (issue 35), at {public_url}/resend: Resend's paths, fields,
 * pagination and errors over Posthorn's domain code, so an application written for a Resend SDK
 * moves by changing its base URL. A Posthorn key is the Bearer: a project key, or an all-access
 * key (Resend's full access, which also manages API keys). /v1 stays as the spec says; this door
 * is documented in the README, not in /v1/openapi.json.
 */

/** Resend's error names, by status. */
function errorName(status: number, request: FastifyRequest, code: unknown): string {
  if (status === 401) return request.headers.authorization ? 'invalid_api_key' : 'missing_api_key';
  if (status === 403) return 'restricted_api_key';
  if (status === 404) return 'not_found';
  if (status === 405) return 'method_not_allowed';
  if (status === 409) return request.headers['idempotency-key'] ? 'invalid_idempotent_request' : 'conflict';
  if (status === 429)
    return code === 'rate_limited' || code === undefined ? 'rate_limit_exceeded' : 'daily_quota_exceeded';
  if (status === 402) return 'plan_upgrade_required';
  if (status >= 500) return 'application_error';
  return 'validation_error';
}

/** Every error this door answers, in Resend's shape: `{statusCode, name, message}`. */
function resendErrors(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
  if (reply.statusCode < 400 || typeof payload !== 'string') return payload;
  let body: { error?: unknown; code?: unknown };
  try {
    body = JSON.parse(payload);
  } catch {
    return payload;
  }
  if (typeof body?.error !== 'string') return payload;
  reply.header('content-type', 'application/json; charset=utf-8');
  return JSON.stringify({
    statusCode: reply.statusCode,
    name: errorName(reply.statusCode, request, body.code),
    message: body.error,
  });
}

export async function resendRoutes(app: FastifyInstance, deps: { ctx: DomainContext }) {
  app.addHook('onSend', async (request, reply, payload) => resendErrors(request, reply, payload));
  // every other path here is Resend's "not found" (not the dashboard's page, which answers the rest)
  const notFound = (request: FastifyRequest, reply: FastifyReply) =>
    reply.code(404).send({
      error: `The requested endpoint does not exist: ${request.method} ${request.url.split('?')[0]}`,
    });
  app.setNotFoundHandler(notFound);
  app.all('/*', { config: { auth: 'none' }, schema: { hide: true } }, notFound);
  for (const routes of [
    resendEmailRoutes,
    resendDomainRoutes,
    resendAudienceRoutes,
    resendBroadcastRoutes,
    resendWebhookRoutes,
  ])
    await app.register(routes, { ctx: deps.ctx });
  for (const [method, path, equivalent] of UNSUPPORTED)
    app.route({
      method,
      url: path,
      config: { auth: 'project' },
      schema: { hide: true },
      handler: async (_request, reply) =>
        reply.code(405).send({
          error: `${method} ${path} is not available in Posthorn's Resend-compatible API. ${equivalent}`,
        }),
    });
}
