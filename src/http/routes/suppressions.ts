import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/context.ts';
import { addSuppression, listSuppressions, removeSuppression } from '../../domain/suppressions.ts';
import { projectOf } from '../auth.ts';
import { bearerSecurity, errors, Nullable, PageQuery, page } from '../schemas.ts';

const SuppressionSchema = Type.Object({
  object: Type.Literal('suppression'),
  email: Type.String(),
  reason: Type.String({ enum: ['hard_bounce', 'complaint', 'unsubscribe', 'manual'] }),
  source_email_id: Nullable(Type.String()),
  detail: Nullable(Type.String()),
  created_at: Type.String(),
});

/** The project's suppression list. */
export async function suppressionRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const project = { auth: 'project' as const };
  app.get(
    '/suppressions',
    {
      config: project,
      schema: {
        tags: ['suppressions'],
        summary: 'List suppressed addresses, newest first',
        security: bearerSecurity,
        querystring: Type.Object({
          ...PageQuery.properties,
          reason: Type.Optional(Type.String({ enum: ['hard_bounce', 'complaint', 'unsubscribe', 'manual'] })),
        }),
        response: { 200: page(SuppressionSchema), ...errors(400, 401) },
      },
    },
    async (request) => listSuppressions(ctx, projectOf(request), request.query as never),
  );
  app.post(
    '/suppressions',
    {
      config: project,
      schema: {
        tags: ['suppressions'],
        summary: 'Suppress an address (manual: every stream; unsubscribe: marketing and automation)',
        security: bearerSecurity,
        body: Type.Object({
          email: Type.String(),
          reason: Type.Optional(Type.String({ enum: ['manual', 'unsubscribe'] })),
        }),
        response: { 200: SuppressionSchema, ...errors(400, 401) },
      },
    },
    async (request) => addSuppression(ctx, projectOf(request), request.body as { email: string }),
  );
  app.delete(
    '/suppressions/:email',
    {
      config: project,
      schema: {
        tags: ['suppressions'],
        summary: 'Remove an address from the suppression list',
        security: bearerSecurity,
        params: Type.Object({ email: Type.String() }),
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await removeSuppression(ctx, projectOf(request), (request.params as { email: string }).email);
      return reply.code(204).send();
    },
  );
}
