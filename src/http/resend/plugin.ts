import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DomainContext } from '../../domain/core/context.ts';
import { shortPath } from '../request-checks.ts';
import { resendAttachmentRoutes } from './attachments.ts';
import { resendAudienceRoutes } from './audience.ts';
import { resendAutomationRoutes } from './automations.ts';
import { resendBroadcastRoutes } from './broadcasts.ts';
import { resendContactImportRoutes } from './contact-imports.ts';
import { resendContactPropertyRoutes } from './contact-properties.ts';
import { adoptCounterpartRoles } from './counterparts.ts';
import { resendDomainRoutes } from './domains.ts';
import { resendDownloadRoutes } from './downloads.ts';
import { resendEmailRoutes } from './emails.ts';
import { installResendRefusals, resendError } from './errors.ts';
import { resendEventRoutes } from './events.ts';
import { resendLogRoutes } from './logs.ts';
import { resendReceivingRoutes } from './receiving.ts';
import { resendSuppressionRoutes } from './suppressions.ts';
import { resendTemplateRoutes } from './templates.ts';
import { resendTopicRoutes } from './topics.ts';
import { UNSUPPORTED } from './unsupported.ts';
import { resendUsageRoutes } from './usage.ts';
import { resendWebhookEventRoutes } from './webhook-events.ts';
import { resendWebhookRoutes } from './webhooks.ts';

/**
 * The Resend-compatible door (issue 35), at {public_url}/resend: Resend's paths, fields,
 * pagination and errors over Posthorn's domain code, so an application written for a Resend SDK
 * moves by changing its base URL. A Posthorn key is the Bearer: a project key, or an all-access
 * key (Resend's full access, which also manages API keys), which acts in its account's default
 * project unless `X-Project-Id` names another. Each operation takes the role of its /v1
 * counterpart (counterparts.ts). /v1 stays as the spec says; this door is documented in the
 * README, not in /v1/openapi.json.
 */

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
  return JSON.stringify(resendError(reply.statusCode, request, body.error, body.code));
}

/** What the door does not answer: 405, naming Posthorn's equivalent, before any body is read. */
function unsupported(method: string, path: string, equivalent: string) {
  return async (_request: FastifyRequest, reply: FastifyReply) =>
    reply.code(405).send({
      error: `${method} ${path} is not available in Posthorn's Resend-compatible API. ${equivalent}`,
    });
}

export async function resendRoutes(app: FastifyInstance, deps: { ctx: DomainContext }) {
  app.addHook('onSend', async (request, reply, payload) => resendErrors(request, reply, payload));
  // Resend's own names and statuses (a missing field is 422, ...), then the app's handler
  installResendRefusals(app);
  // every operation takes its /v1 counterpart's role, and an all-access key its default project
  adoptCounterpartRoles(app);
  // every other path here is Resend's "not found" (not the dashboard's page, which answers the rest)
  const notFound = (request: FastifyRequest, reply: FastifyReply) =>
    reply.code(404).send({
      error: `The requested endpoint does not exist: ${request.method} ${shortPath(request.url)}`,
    });
  app.setNotFoundHandler(notFound);
  app.all('/*', { config: { auth: 'none' }, schema: { hide: true } }, notFound);
  for (const routes of [
    // received emails first: /emails/receiving is theirs, not /emails/:id's (issue 51)
    resendReceivingRoutes,
    resendEmailRoutes,
    // a sent email's attachments, and the links (no key) to received and sent mail's parts
    resendAttachmentRoutes,
    resendDownloadRoutes,
    resendDomainRoutes,
    resendAudienceRoutes,
    resendBroadcastRoutes,
    resendWebhookRoutes,
    // events, automations and runs, logs, suppressions, webhook events (issue 51)
    resendEventRoutes,
    resendAutomationRoutes,
    resendLogRoutes,
    resendSuppressionRoutes,
    resendWebhookEventRoutes,
    // templates, topics and contact topics, contact properties and imports, usage (issue 51)
    resendTemplateRoutes,
    resendTopicRoutes,
    resendContactPropertyRoutes,
    resendContactImportRoutes,
    resendUsageRoutes,
  ])
    await app.register(routes, { ctx: deps.ctx });
  for (const [method, path, equivalent] of UNSUPPORTED)
    app.route({
      method,
      url: path,
      config: { auth: 'project', unsupported: true },
      schema: { hide: true },
      // answered once the key is checked and before the body is parsed: a multipart upload
      // (contacts.imports.create) is a 405 too, not a 415
      onRequest: unsupported(method, path, equivalent),
      handler: unsupported(method, path, equivalent),
    });
}
