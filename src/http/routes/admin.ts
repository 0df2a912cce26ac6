import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { AuthenticationError, ForbiddenError } from '../../domain/core/errors.ts';
import { productionReadiness } from '../../domain/operator/readiness/index.ts';
import { routesReport } from '../../domain/operator/routes-report.ts';
import { refuseForeignHost } from '../host-check.ts';
import { refuseMetricsCaller } from '../metrics.ts';
import { errors, Nullable, typed } from '../schemas.ts';

const NodeStatus = Type.Object(
  {
    node: Type.String({ description: 'the worker process: host:pid' }),
    healthy: Type.Boolean(),
    failures: Type.Integer({ description: 'failures in a row that proved the route did not take a message' }),
    ambiguous: Type.Integer({
      description: 'attempts that ended without an answer after the data (retried on it)',
    }),
    taken: Type.Integer({ description: 'messages the route took, since the process started' }),
    not_taken: Type.Integer({
      description: 'failures that moved a message on (no connection, greeting or login refused)',
    }),
    last_error: Nullable(Type.String()),
    changed_at: Nullable(Type.String({ description: 'when it was last marked unhealthy or healthy again' })),
    started_at: Type.String(),
    updated_at: Type.String({ description: 'when the process last wrote of it' }),
  },
  { title: 'RouteNodeStatus' },
);

const RouteStatus = Type.Object(
  {
    name: Type.String(),
    type: Type.String({ description: '`smtp`, `ses` or `mailbox`' }),
    target: Type.String({ description: 'where it leads, without credentials' }),
    tags: Nullable(Type.String({ description: 'the dialect of its provider tags' })),
    rate_per_second: Nullable(Type.Number()),
    rate_per_hour: Nullable(Type.Number()),
    pool_size: Nullable(Type.Integer()),
    healthy: Type.Boolean({ description: 'healthy in every worker process that has written of it' }),
    taken: Type.Integer(),
    not_taken: Type.Integer(),
    nodes: Type.Array(NodeStatus),
  },
  { title: 'RouteStatus' },
);

const RoutesReport = Type.Object(
  {
    file: Nullable(Type.String({ description: 'POSTHORN_ROUTES, or null for the one route `default`' })),
    routes: Type.Array(RouteStatus),
    rules: Type.Array(
      Type.Object({
        match: Type.Record(Type.String(), Type.String()),
        routes: Type.Array(Type.String()),
      }),
    ),
  },
  { title: 'RoutesReport' },
);

const ReadinessCheck = Type.Object(
  {
    id: Type.String({
      description:
        'what was checked, stable for scripts: public_url, smtp_tls, shared_domain_dkim, port_25, relay_<route>, ...',
    }),
    group: Type.Union([Type.Literal('web'), Type.Literal('shared_domain'), Type.Literal('delivery')]),
    title: Type.String(),
    status: Type.Union([
      Type.Literal('pass'),
      Type.Literal('fail'),
      Type.Literal('warn'),
      Type.Literal('skip'),
    ]),
    detail: Type.String({ description: 'what was found' }),
    fix: Nullable(Type.String({ description: 'what to do, in plain words (null when nothing)' })),
  },
  { title: 'ReadinessCheck' },
);

const ReadinessReport = Type.Object(
  {
    ready: Type.Boolean({ description: 'no check failed (warnings and skipped checks aside)' }),
    checked_at: Type.String(),
    checks: Type.Array(ReadinessCheck),
  },
  { title: 'ReadinessReport' },
);

/** Refuses a caller who is not the operator (see adminRoutes), naming the endpoint. */
function refuseNonOperator(request: FastifyRequest, ctx: DomainContext, endpoint: string): void {
  // served to this machine without a token: not to a page that rebound its name to 127.0.0.1
  if (!ctx.config.metricsToken) refuseForeignHost(request, ctx.config, endpoint);
  const refusal = refuseMetricsCaller(
    ctx.config.metricsToken,
    {
      authorization: request.headers.authorization,
      socketAddress: request.socket.remoteAddress,
      forwarded: ['forwarded', 'x-forwarded-for', 'x-real-ip'].some((h) => h in request.headers),
    },
    endpoint,
  );
  if (refusal)
    throw refusal.status === 401 ? new AuthenticationError(refusal.error) : new ForbiddenError(refusal.error);
}

const OPERATOR_ONLY =
  'For the operator: answered to clients on this machine (not through a proxy) that name the Host of POSTHORN_PUBLIC_URL or POSTHORN_APP_URL or a loopback address (any other Host is a 403: a page that rebound its name to this machine), or with `Authorization: Bearer <POSTHORN_METRICS_TOKEN>`.';

/**
 * The operator's endpoints under /v1/admin: served to clients on this machine, or to whoever sends
 * POSTHORN_METRICS_TOKEN as a Bearer token (as GET /metrics), never for an API key.
 */
export async function adminRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get(
    '/admin/routes',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['operations'],
        summary: 'The routes mail leaves by: settings, health and traffic per worker process, and the rules',
        operationId: 'listRoutes',
        description:
          'For the operator: answered to clients on this machine (not through a proxy) that name the Host of POSTHORN_PUBLIC_URL or POSTHORN_APP_URL or a loopback address (any other Host is a 403: a page that rebound its name to this machine), or with `Authorization: Bearer <POSTHORN_METRICS_TOKEN>`. Health and traffic are what each worker process last wrote (every 2 s while mail flows).',
        response: { 200: RoutesReport, ...errors(401, 403) },
      },
    },
    async (request) => {
      refuseNonOperator(request, ctx, 'GET /v1/admin/routes');
      return routesReport(ctx.db, ctx.config);
    },
  );
  app.get(
    '/admin/readiness',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['operations'],
        summary: 'Production readiness: each thing between this server and real delivery, checked now',
        operationId: 'getProductionReadiness',
        description: `${OPERATOR_ONLY} Checks, from where the server stands and through its resolvers (POSTHORN_DNS_SERVERS): the public URL answers and its certificate, the SMTP host's certificate after STARTTLS, the shared domain's names (not .localhost) and its DKIM, SPF, DMARC and MX records, that some route takes mail off the server, each relay's login, outbound port 25 (POSTHORN_PORT25_PROBE) and the reverse DNS of each direct route's source addresses, and the bulk-sender gate. Each check says what it found and what to do. \`posthorn admin doctor\` prints the same.`,
        response: { 200: ReadinessReport, ...errors(401, 403) },
      },
    },
    async (request) => {
      refuseNonOperator(request, ctx, 'GET /v1/admin/readiness');
      return productionReadiness(ctx);
    },
  );
}
