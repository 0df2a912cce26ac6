import swagger from '@fastify/swagger';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import type { AuthMode } from './auth.ts';

export const SECURITY_SCHEMES = {
  bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `ph_...`' },
  sessionAuth: {
    type: 'http',
    scheme: 'bearer',
    description: 'A dashboard session token from `POST /api/auth/login/verify`',
  },
} as const;

const SECURITY_OF: Record<AuthMode, { [scheme: string]: string[] }[]> = {
  none: [],
  project: [{ bearerAuth: [] }],
  key: [{ bearerAuth: [] }],
  account: [{ bearerAuth: [] }],
  session: [{ sessionAuth: [] }],
};

/**
 * The document's rules for one route, applied as it is added: its security follows its auth mode
 * (an open route says `security: []`), and a documented route must have a summary and an operationId,
 * so a route added without them fails at startup instead of producing a poor generated client.
 */
export function documentRoute(route: RouteOptions): void {
  const schema = route.schema as Record<string, unknown> | undefined;
  if (!schema || schema.hide || [route.method].flat().every((m) => m === 'HEAD')) return;
  const where = `${[route.method].flat().join(',')} ${route.url}`;
  schema.security = SECURITY_OF[route.config?.auth ?? 'none'];
  if (!schema.summary) throw new Error(`Route ${where} has no summary for the OpenAPI document`);
  if (!schema.operationId) throw new Error(`Route ${where} has no operationId for the OpenAPI document`);
}

type Json = { [key: string]: unknown };

/** The header that chooses the project of a project-API call (README, "Auth"). */
const PROJECT_HEADER = {
  type: 'string',
  format: 'uuid',
  description:
    'The project to act in, for an all-access key or a dashboard session that reaches several projects (GET /v1/projects lists them); without it, the only one is chosen, and with several the 400 lists them. A project key acts in its own project and needs none.',
};

/**
 * The document's view of a route (the route itself and its validation are left as they are): a
 * project-API operation declares the optional `X-Project-Id` header, so a client generated from the
 * document can choose the project with an all-access key.
 */
export function documentProjectHeader({
  schema,
  url,
  route,
}: {
  schema: FastifySchema;
  url: string;
  route: RouteOptions;
}): { schema: FastifySchema; url: string } {
  if (!schema || route.config?.auth !== 'project') return { schema, url };
  const headers = (schema.headers ?? {}) as Json;
  return {
    url,
    schema: {
      ...schema,
      headers: {
        ...headers,
        type: 'object',
        properties: { ...((headers.properties as Json) ?? {}), 'X-Project-Id': PROJECT_HEADER },
      },
    },
  };
}

/**
 * Turns every schema with a `title` into a named component (`#/components/schemas/<title>`) and
 * refers to it, so generated clients get named types (`Email`, `Contact`) instead of anonymous ones.
 * Two different schemas with one title are a programming error, reported at the first read.
 */
export function hoistNamedSchemas<T extends Json>(document: T): T {
  const named: Record<string, Json> = {};
  const seen = new Map<string, string>();
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit);
    if (!value || typeof value !== 'object') return value;
    const out: Json = {};
    for (const [k, v] of Object.entries(value as Json)) out[k] = visit(v);
    const title = out.title;
    if (typeof title === 'string' && (out.type !== undefined || out.anyOf || out.oneOf)) {
      const { title: _t, ...body } = out;
      const text = JSON.stringify(body);
      const before = seen.get(title);
      if (before !== undefined && before !== text)
        throw new Error(`Two different schemas are named ${title} in the OpenAPI document`);
      seen.set(title, text);
      named[title] = { ...body, title };
      return { $ref: `#/components/schemas/${title}` };
    }
    return out;
  };
  const doc = visit(document) as Json;
  const components = (doc.components ?? {}) as Json;
  doc.components = { ...components, schemas: { ...((components.schemas as Json) ?? {}), ...named } };
  return doc as T;
}

/** The schema mark of a route whose body may be left out (the route defaults it to `{}`: `bodyMayBeOmitted`). */
export const OPTIONAL_BODY = 'x-optional-body';

/**
 * @fastify/swagger documents every body as required (Fastify wants one when a route has a body
 * schema); a route marked OPTIONAL_BODY takes a request without one, so its document says so.
 */
export function optionalBodies<T extends Json>(document: T): T {
  for (const methods of Object.values((document.paths ?? {}) as Record<string, Record<string, Json>>))
    for (const operation of Object.values(methods)) {
      if (!operation?.[OPTIONAL_BODY]) continue;
      delete operation[OPTIONAL_BODY];
      if (operation.requestBody) (operation.requestBody as Json).required = false;
    }
  return document;
}

/** Registers @fastify/swagger: the OpenAPI 3.1 document at GET /v1/openapi.json, from the route schemas. */
export async function registerOpenApi(app: FastifyInstance, version: string) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Posthorn API',
        version,
        license: { name: 'MIT', identifier: 'MIT' },
        description:
          'Self-hostable email sending: transactional and marketing email, contacts, events, lists, segments, templates, campaigns, flows, inbound mail and webhooks. Errors are `{"error": "..."}`.',
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    transform: documentProjectHeader,
    transformObject: (documents) =>
      optionalBodies(
        hoistNamedSchemas((documents as { openapiObject: Record<string, unknown> }).openapiObject),
      ),
  });
}
