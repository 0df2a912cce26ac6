import http from 'node:http';
import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  LogController,
} from 'fastify';
import type { DomainContext } from '../domain/context.ts';
import { ValidationError } from '../domain/errors.ts';
import type { RateLimiter } from '../domain/rate-limit.ts';
import type { RequestLogWriter } from '../domain/request-log.ts';
import { authPlugin } from './auth.ts';
import { installErrorHandling } from './errors.ts';
import { documentRoute, hoistNamedSchemas, SECURITY_SCHEMES } from './openapi.ts';
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

/** Deeper JSON than this is refused: no request of this API needs it, and walking it costs stack. */
const MAX_DEPTH = 64;

/**
 * The first problem with the strings of a request part (a NUL, which PostgreSQL text cannot hold; an
 * unpaired UTF-16 surrogate, which is not Unicode and which jsonb refuses; nesting past MAX_DEPTH),
 * with the path of the field, or null. Iterative, so hostile nesting cannot exhaust the stack.
 */
export function badStringIn(root: unknown): { path: string; problem: string } | null {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: root, path: '', depth: 0 }];
  const check = (text: string, path: string) => {
    if (text.includes('\u0000'))
      return { path, problem: 'contains a NUL character (\\u0000), which cannot be stored' };
    if (!text.isWellFormed())
      return { path, problem: 'contains an unpaired UTF-16 surrogate, which is not valid Unicode' };
    return null;
  };
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop() as (typeof stack)[number];
    if (typeof value === 'string') {
      const found = check(value, path);
      if (found) return found;
      continue;
    }
    // a raw upload (a CSV import) is checked where it is read, row by row
    if (!value || typeof value !== 'object' || Buffer.isBuffer(value)) continue;
    if (depth >= MAX_DEPTH) return { path, problem: `is nested more than ${MAX_DEPTH} levels deep` };
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    for (const [k, v] of Object.entries(value).reverse()) {
      const field = path ? `${path}.${k}` : k;
      const found = check(k, field);
      if (found) return found;
      stack.push({ value: v, path: field, depth: depth + 1 });
    }
  }
  return null;
}

/** A request target shortened for an error message: never echo a hostile path whole. */
function shortPath(url: string): string {
  const path = url.split('?')[0];
  return path.length > 80 ? `${path.slice(0, 80)}...` : path;
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
    // the router's own refusals keep the API's error shape and never echo a whole hostile path
    frameworkErrors: (error, request, reply: FastifyReply) => {
      const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      reply.code(tooLong ? 414 : 400).send({
        error: tooLong
          ? `A path parameter of ${request.method} ${shortPath(request.url)} is too long`
          : 'Malformed request path: it is not valid percent-encoded UTF-8',
      });
    },
    // what the HTTP parser refuses before Fastify sees a request (oversized headers, garbage)
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const [status, error] =
        err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'Request headers are too large']
          : err.code === 'HPE_URI_TOO_LONG'
            ? [414, 'The request line is too long']
            : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
              ? [408, 'The request took too long to arrive']
              : [400, 'Malformed HTTP request'];
      const body = JSON.stringify({ error });
      if (socket.writable)
        socket.write(
          `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
        );
      socket.destroy(err);
    },
  });
  app.setValidatorCompiler(validatorCompiler);
  // the API speaks JSON only: anything else is a clear 415, not a confusing validation error
  app.removeContentTypeParser('text/plain');
  // many clients send Content-Type: application/json with no body on POST/DELETE (the Resend SDK does
  // for cancel and delete): that is an empty body, not malformed JSON
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') return done(null, undefined);
    return parseJson(request, body as string, done);
  });
  installErrorHandling(app);
  // strings PostgreSQL cannot store, and hostile nesting: refused up front with the field's name
  app.addHook('preValidation', async (request) => {
    for (const [part, value] of [
      ['Field', request.body],
      ['Query parameter', request.query],
      ['Path parameter', request.params],
    ] as const) {
      const found = badStringIn(value);
      if (found)
        throw new ValidationError(
          `${found.path ? `${part} \`${found.path}\`` : 'The request body'} ${found.problem}`,
        );
    }
  });

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

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Posthorn API',
        version: VERSION,
        license: { name: 'MIT', identifier: 'MIT' },
        description:
          'Self-hostable email sending: transactional and marketing email, contacts, events, lists, segments, templates, campaigns, flows, inbound mail and webhooks. Errors are `{"error": "..."}`.',
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    transformObject: (documents) =>
      hoistNamedSchemas((documents as { openapiObject: Record<string, unknown> }).openapiObject),
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
