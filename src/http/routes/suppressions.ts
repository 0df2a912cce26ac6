import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import {
  addSuppression,
  listSuppressions,
  MANUAL_SUPPRESSION_REASONS,
  removeSuppression,
  SUPPRESSION_REASONS,
} from '../../domain/emails/suppressions.ts';
import { projectOf } from '../auth.ts';
import { errors, Nullable, PageQuery, page, pageOf, typed } from '../schemas.ts';

const SuppressionSchema = Type.Object(
  {
    object: Type.Literal('suppression'),
    email: Type.String({ description: 'the suppressed address, lower-cased' }),
    reason: Type.Enum(SUPPRESSION_REASONS, { type: 'string' }),
    source_email_id: Nullable(Type.String({ description: 'the email whose bounce or complaint added it' })),
    detail: Nullable(Type.String()),
    created_at: Type.String(),
  },
  { title: 'Suppression' },
);
const SuppressionPage = Type.Object(page(SuppressionSchema).properties, { title: 'SuppressionPage' });
const CreateSuppressionRequest = Type.Object(
  {
    email: Type.String({
      description: 'the address to suppress (at most 254 characters); stored lower-cased',
    }),
    reason: Type.Optional(
      Type.Enum(MANUAL_SUPPRESSION_REASONS, {
        type: 'string',
        default: 'manual',
        description: '`manual` blocks every stream; `unsubscribe` blocks marketing and automation only',
      }),
    ),
  },
  { title: 'CreateSuppressionRequest' },
);

/** The project's suppression list. */
export async function suppressionRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const project = { auth: 'project' as const };
  app.get(
    '/suppressions',
    {
      config: project,
      schema: {
        tags: ['suppressions'],
        summary: 'List suppressed addresses, newest first',
        operationId: 'listSuppressions',
        querystring: Type.Object({
          ...PageQuery.properties,
          reason: Type.Optional(
            Type.Enum(SUPPRESSION_REASONS, { type: 'string', description: 'only entries of this reason' }),
          ),
        }),
        response: { 200: SuppressionPage, ...errors(400, 401) },
      },
    },
    async (request) => listSuppressions(ctx, projectOf(request), pageOf(request.query)),
  );
  app.post(
    '/suppressions',
    {
      config: project,
      schema: {
        tags: ['suppressions'],
        summary: 'Suppress an address (manual: every stream; unsubscribe: marketing and automation)',
        operationId: 'createSuppression',
        body: CreateSuppressionRequest,
        response: { 200: SuppressionSchema, ...errors(400, 401) },
      },
    },
    async (request) => addSuppression(ctx, projectOf(request), request.body),
  );
  app.delete(
    '/suppressions/:email',
    {
      config: project,
      schema: {
        tags: ['suppressions'],
        summary: 'Remove an address from the suppression list',
        operationId: 'deleteSuppression',
        params: Type.Object({ email: Type.String({ description: 'the suppressed address (any case)' }) }),
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await removeSuppression(ctx, projectOf(request), request.params.email);
      return reply.code(204).send();
    },
  );
}
