import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { checkReadiness } from '../../domain/maintenance/readiness.ts';
import { foreignHostReason } from '../host-check.ts';
import { type ApiMetrics, refuseMetricsCaller } from '../metrics.ts';

const tags = ['operations'];
const open = { auth: 'none' as const };

const Checks = Type.Object(
  {
    database: Type.String({ description: '`ok`, or why the database did not answer' }),
    migrations: Type.String({
      description:
        '`ok` when the applied migrations are exactly the files of this version, else what differs',
    }),
  },
  { title: 'ReadinessChecks' },
);

/**
 * The operations endpoints at the root of the API's port, beside /v1, for load balancers, process
 * supervisors and Prometheus: GET /healthz (the process answers), GET /readyz (it can serve: the
 * database answers and its schema is this version's), GET /metrics (Prometheus text format).
 */
export async function healthRoutes(app: FastifyInstance, opts: { ctx: DomainContext; metrics: ApiMetrics }) {
  const { ctx, metrics } = opts;

  app.get(
    '/healthz',
    {
      config: open,
      schema: {
        tags,
        summary: 'Liveness: the process answers (the database is not consulted)',
        operationId: 'getHealth',
        response: {
          200: Type.Object({ status: Type.Literal('ok') }, { title: 'Health' }),
        },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: open,
      schema: {
        tags,
        summary: 'Readiness: the database answers within 2 s and its migrations are current',
        operationId: 'getReadiness',
        response: {
          200: Type.Object({ status: Type.Literal('ready'), checks: Checks }, { title: 'Readiness' }),
          503: Type.Object(
            { error: Type.String(), checks: Checks },
            { title: 'NotReady', description: 'not ready: `checks` says which check failed' },
          ),
        },
      },
    },
    async (_request, reply) => {
      const readiness = await checkReadiness(ctx.pool);
      if (readiness.ready) return { status: 'ready' as const, checks: readiness.checks };
      const failed = Object.entries(readiness.checks)
        .filter(([, value]) => value !== 'ok')
        .map(([name, value]) => `${name}: ${value}`);
      return reply.code(503).send({ error: `Not ready: ${failed.join('; ')}`, checks: readiness.checks });
    },
  );

  // not in the OpenAPI document: Prometheus text, read by a scraper rather than an API client
  app.get('/metrics', { config: open, schema: { hide: true } }, async (request, reply) => {
    // served to this machine without a token: not to a page that rebound its name to 127.0.0.1 (as /v1/admin)
    const foreign = ctx.config.metricsToken ? null : foreignHostReason(request, ctx.config, 'GET /metrics');
    if (foreign) return reply.code(403).send({ error: foreign });
    const refusal = refuseMetricsCaller(ctx.config.metricsToken, {
      authorization: request.headers.authorization,
      socketAddress: request.socket.remoteAddress,
      forwarded: ['forwarded', 'x-forwarded-for', 'x-real-ip'].some((h) => h in request.headers),
    });
    if (refusal) return reply.code(refusal.status).send({ error: refusal.error });
    const { contentType, text } = await metrics.render();
    return reply.type(contentType).header('cache-control', 'no-store').send(text);
  });
}
