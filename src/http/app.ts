import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { TrustProxy } from '../config.ts';
import type { DomainContext } from '../domain/core/context.ts';
import type { RateLimiter } from '../domain/keys/rate-limit.ts';
import type { RequestLogWriter } from '../domain/keys/request-log.ts';
import type { SmtpPorts } from '../domain/plans/project-facts.ts';
import { authPlugin } from './auth.ts';
import { DOCS_PREFIX, docsPageRoutes } from './docs-page.ts';
import { installErrorHandling } from './errors.ts';
import { createApiMetrics, observeRequests } from './metrics.ts';
import { documentRoute, registerOpenApi } from './openapi.ts';
import {
  acceptEmptyJsonBodies,
  answerClientError,
  answerFrameworkError,
  refuseUnstorableStrings,
} from './request-checks.ts';
import { resendRoutes } from './resend/plugin.ts';
import { accountRoutes } from './routes/accounts.ts';
import { adminRoutes } from './routes/admin.ts';
import { assetRoutes, publicAssetRoutes } from './routes/assets.ts';
import { breakerRoutes } from './routes/breaker.ts';
import { campaignActionRoutes } from './routes/campaign-actions.ts';
import { campaignRoutes } from './routes/campaigns.ts';
import { contactEmailRoutes } from './routes/contact-emails.ts';
import { contactRoutes } from './routes/contacts.ts';
import { contentCheckRoutes } from './routes/content-checks.ts';
import { dashboardRoutes } from './routes/dashboard.ts';
import { domainDmarcRoutes } from './routes/domain-dmarc.ts';
import { domainRoutes } from './routes/domains.ts';
import { emailRoutes } from './routes/emails.ts';
import { eventRoutes } from './routes/events.ts';
import { feedbackRoutes } from './routes/feedback.ts';
import { flowEnrollmentRoutes } from './routes/flow-enrollments.ts';
import { flowRoutes } from './routes/flows.ts';
import { healthRoutes } from './routes/health.ts';
import { inboundRoutes } from './routes/inbound.ts';
import { keyRoutes } from './routes/keys.ts';
import { listRoutes } from './routes/lists.ts';
import { pairingApiRoutes, pairRoutes } from './routes/pair.ts';
import { publicRoutes } from './routes/public.ts';
import { segmentRoutes } from './routes/segments.ts';
import { statusRoutes } from './routes/status.ts';
import { suppressionRoutes } from './routes/suppressions.ts';
import { templateRoutes } from './routes/templates.ts';
import { topicRoutes } from './routes/topics.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { workspaceRoutes } from './routes/workspaces.ts';
import { validatorCompiler } from './validation.ts';
import { webAppRoutes } from './web-app.ts';

export interface AppDeps {
  ctx: DomainContext;
  rateLimiter: RateLimiter;
  requestLog: RequestLogWriter;
  logger?: FastifyBaseLogger;
  /** The SMTP submission ports when this process listens on them (GET /v1/me shows them). */
  smtpPorts?: SmtpPorts;
  /**
   * The dev mailbox is one of this server's routes (no relay configured): only then may the
   * dashboard show it (/api/mailbox, to the callers POSTHORN_DEV_MAILBOX allows).
   */
  devMailbox: boolean;
}

const VERSION = '0.1.0';

/**
 * POSTHORN_TRUST_PROXY as Fastify takes it. A hop count trusts that many addresses from the socket
 * inwards (Fastify itself trusts no one for a bare number, as it cannot check the peer).
 */
function trustedProxies(trust: TrustProxy): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust !== 'number') return trust;
  return (_address, hop) => hop < trust;
}

/** The API's resources under /v1, in the order they register (and appear in the OpenAPI document). */
const V1_ROUTES = [
  accountRoutes,
  statusRoutes,
  workspaceRoutes,
  keyRoutes,
  emailRoutes,
  suppressionRoutes,
  domainRoutes,
  domainDmarcRoutes,
  inboundRoutes,
  contactRoutes,
  contactEmailRoutes,
  eventRoutes,
  listRoutes,
  topicRoutes,
  segmentRoutes,
  templateRoutes,
  assetRoutes,
  campaignRoutes,
  campaignActionRoutes,
  contentCheckRoutes,
  flowRoutes,
  flowEnrollmentRoutes,
  breakerRoutes,
  webhookRoutes,
  pairingApiRoutes,
  adminRoutes,
];

/** Builds the HTTP door: every route, the auth hook, error mapping, OpenAPI and the docs page. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    bodyLimit: 1024 * 1024,
    // X-Forwarded-For only from the configured proxies: otherwise any client picks its own address
    trustProxy: trustedProxies(deps.ctx.config.trustProxy),
    routerOptions: { ignoreTrailingSlash: true },
    ajv: { customOptions: { coerceTypes: false } },
    // one line per request is the request log's job, not pino's
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
  });
  app.setValidatorCompiler(validatorCompiler);
  // the API speaks JSON only: anything else is a clear 415, not a confusing validation error
  app.removeContentTypeParser('text/plain');
  acceptEmptyJsonBodies(app);
  installErrorHandling(app);
  refuseUnstorableStrings(app);
  const metrics = createApiMetrics(deps.ctx.db);
  observeRequests(app, metrics);

  const endpoints: { method: string; path: string; summary: string; auth: string }[] = [];
  app.addHook('onRoute', (route) => {
    documentRoute(route);
    if (route.schema?.hide || !route.schema?.summary) return;
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      endpoints.push({
        method,
        path: route.url,
        summary: String(route.schema.summary),
        auth: route.config?.auth ?? 'none',
      });
    }
  });

  await registerOpenApi(app, VERSION);
  await app.register(authPlugin, deps);

  await app.register(
    async (v1) => {
      v1.get('/', { config: { auth: 'none' }, schema: { hide: true } }, async () => ({
        object: 'index',
        name: 'Posthorn API',
        version: 'v1',
        documentation: DOCS_PREFIX,
        openapi: '/v1/openapi.json',
        endpoints,
      }));
      v1.get('/openapi.json', { config: { auth: 'none' }, schema: { hide: true } }, async () =>
        app.swagger(),
      );
      for (const routes of V1_ROUTES) await v1.register(routes, deps);
    },
    { prefix: '/v1' },
  );
  // liveness, readiness and Prometheus metrics, at the root beside /v1
  await app.register(healthRoutes, { ctx: deps.ctx, metrics });
  // the browser page of `posthorn login` (at {app_url}/pair) and the terms it links (/terms)
  await app.register(pairRoutes, deps);
  // the unsubscribe and tracking links in marketing mail (at {public_url}/u and /t), and
  // providers' feedback (Amazon SES's events by SNS, at {public_url}/feedback/ses)
  await app.register(publicRoutes, deps);
  // the images of projects' media libraries (at {public_url}/assets/...), for mail readers
  await app.register(publicAssetRoutes, deps);
  await app.register(feedbackRoutes, deps);
  await app.register(dashboardRoutes, { ...deps, prefix: '/api' });
  // the Resend-compatible door: Resend's API over the same domain code (src/http/resend)
  await app.register(resendRoutes, { ...deps, prefix: '/resend' });
  // the API's docs page (Scalar) at /v1/docs, loaded on its first request
  await app.register(docsPageRoutes);
  // the dashboard (web/, built to dist/web) at {app_url}: every other path under it is the app's
  await app.register(webAppRoutes, { appUrl: deps.ctx.config.appUrl });
  return app;
}
