import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { DomainContext } from '../domain/context.ts';
import { ValidationError } from '../domain/errors.ts';
import type { RateLimiter } from '../domain/rate-limit.ts';
import type { RequestLogWriter } from '../domain/request-log.ts';
import { authPlugin } from './auth.ts';
import { installErrorHandling } from './errors.ts';
import { accountRoutes } from './routes/accounts.ts';
import { contactRoutes } from './routes/contacts.ts';
import { dashboardRoutes } from './routes/dashboard.ts';
import { domainRoutes } from './routes/domains.ts';
import { emailRoutes } from './routes/emails.ts';
import { eventRoutes } from './routes/events.ts';
import { inboundRoutes } from './routes/inbound.ts';
import { keyRoutes } from './routes/keys.ts';
import { listRoutes } from './routes/lists.ts';
import { pairingApiRoutes, pairRoutes } from './routes/pair.ts';
import { segmentRoutes } from './routes/segments.ts';
import { statusRoutes } from './routes/status.ts';
import { suppressionRoutes } from './routes/suppressions.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { workspaceRoutes } from './routes/workspaces.ts';
import { validatorCompiler } from './validation.ts';

export interface AppDeps {
  ctx: DomainContext;
  rateLimiter: RateLimiter;
  requestLog: RequestLogWriter;
  logger?: FastifyBaseLogger;
}

const VERSION = '0.1.0';

/** The path of the first string (or key) holding a NUL character, or null. */
function nulPath(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  // a raw upload (a CSV import) is checked where it is read, row by row
  if (Buffer.isBuffer(value)) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const field = path ? `${path}.${k}` : k;
      if (k.includes('\u0000')) return field;
      const found = nulPath(v, field);
      if (found !== null) return found;
    }
  }
  return null;
}

/** Builds the HTTP door: every route, the auth hook, error mapping, OpenAPI and the docs page. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    bodyLimit: 1024 * 1024,
    trustProxy: true,
    routerOptions: { ignoreTrailingSlash: true },
    ajv: { customOptions: { coerceTypes: false } },
    // one line per request is the request log's job, not pino's
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.setValidatorCompiler(validatorCompiler);
  // the API speaks JSON only: anything else is a clear 415, not a confusing validation error
  app.removeContentTypeParser('text/plain');
  installErrorHandling(app);
  // PostgreSQL text cannot hold NUL: refuse it up front with the field's name instead of failing later
  app.addHook('preValidation', async (request) => {
    for (const [part, value] of [
      ['Field', request.body],
      ['Query parameter', request.query],
      ['Path parameter', request.params],
    ] as const) {
      const path = nulPath(value);
      if (path !== null) {
        throw new ValidationError(
          `${part} \`${path || 'body'}\` contains a NUL character (\\u0000), which cannot be stored`,
        );
      }
    }
  });

  const endpoints: { method: string; path: string; summary: string; auth: string }[] = [];
  app.addHook('onRoute', (route) => {
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

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Posthorn API',
        version: VERSION,
        description:
          'Self-hostable email sending: transactional and marketing email, contacts, events, lists, segments, templates, campaigns, flows, inbound mail and webhooks. Errors are `{"error": "..."}`.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `ph_...`' },
        },
      },
    },
  });
  await app.register(authPlugin, deps);

  await app.register(
    async (v1) => {
      v1.get('/', { config: { auth: 'none' }, schema: { hide: true } }, async () => ({
        object: 'index',
        name: 'Posthorn API',
        version: 'v1',
        documentation: '/v1/docs',
        openapi: '/v1/openapi.json',
        endpoints,
      }));
      v1.get('/openapi.json', { config: { auth: 'none' }, schema: { hide: true } }, async () =>
        app.swagger(),
      );
      await v1.register(accountRoutes, deps);
      await v1.register(statusRoutes, deps);
      await v1.register(workspaceRoutes, deps);
      await v1.register(keyRoutes, deps);
      await v1.register(emailRoutes, deps);
      await v1.register(suppressionRoutes, deps);
      await v1.register(domainRoutes, deps);
      await v1.register(inboundRoutes, deps);
      await v1.register(contactRoutes, deps);
      await v1.register(eventRoutes, deps);
      await v1.register(listRoutes, deps);
      await v1.register(segmentRoutes, deps);
      await v1.register(webhookRoutes, deps);
      await v1.register(pairingApiRoutes, deps);
    },
    { prefix: '/v1' },
  );
  // the browser page of `posthorn login` (at {app_url}/pair)
  await app.register(pairRoutes, deps);
  await app.register(dashboardRoutes, { ...deps, prefix: '/api' });
  await app.register(scalar, {
    routePrefix: '/v1/docs',
    configuration: { url: '/v1/openapi.json', title: 'Posthorn API' },
  });
  return app;
}
