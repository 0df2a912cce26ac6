import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/context.ts';
import {
  createKeyInProject,
  findManagedKey,
  listProjectKeys,
  revokeKey,
  rotateKey,
} from '../../domain/keys/service.ts';

import { requireProjectAdmin } from '../../domain/projects.ts';
import { listRequests } from '../../domain/request-log.ts';
import { authOf } from '../auth.ts';
import {
  ApiKeySchema,
  bearerSecurity,
  errors,
  IdParams,
  list,
  PageQuery,
  ProjectParams,
  page,
  Uuid,
} from '../schemas.ts';

const KeyBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  expires_in_days: Type.Optional(
    Type.Union([Type.Integer({ enum: [30, 90, 365] }), Type.Null()], {
      description: '30, 90 or 365; omitted means never',
    }),
  ),
});

const RequestSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('request'),
  key_name: Type.String(),
  project_id: Type.Union([Uuid, Type.Null()]),
  method: Type.String(),
  path: Type.String(),
  status: Type.Integer(),
  latency_ms: Type.Number(),
  created_at: Type.String(),
});

/** Account API: a project's keys, rotation, revocation and request history. */
export async function keyRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const account = { auth: 'account' as const };

  app.get(
    '/projects/:project_id/api-keys',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: "List a project's keys (never their secrets)",
        security: bearerSecurity,
        params: ProjectParams,
        response: { 200: list(ApiKeySchema), ...errors(401, 404) },
      },
    },
    async (request) => {
      const { project_id } = request.params as { project_id: string };
      await requireProjectAdmin(ctx.db, authOf(request).accountId, project_id);
      return { data: await listProjectKeys(ctx, project_id) };
    },
  );

  app.post(
    '/projects/:project_id/api-keys',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Create a project key; the response holds the secret `key`, shown only this once',
        security: bearerSecurity,
        params: ProjectParams,
        body: KeyBody,
        response: { 200: ApiKeySchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { project_id } = request.params as { project_id: string };
      const body = request.body as { name: string; expires_in_days?: number };
      // the account API creates project keys only: a `scope` field here is unknown and ignored
      return createKeyInProject(ctx, authOf(request).accountId, project_id, {
        name: body.name,
        expires_in_days: body.expires_in_days,
      });
    },
  );

  app.post(
    '/api-keys/:id/rotate',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary:
          'Rotate a key: a new secret for the same key (id, name, history kept); the old secret fails at once',
        security: bearerSecurity,
        params: IdParams,
        response: { 200: ApiKeySchema, ...errors(401, 404, 409) },
      },
    },
    async (request) => rotateKey(ctx, authOf(request).accountId, (request.params as { id: string }).id),
  );

  app.delete(
    '/api-keys/:id',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Revoke a key, at once, for the API and SMTP',
        security: bearerSecurity,
        params: IdParams,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await revokeKey(ctx, authOf(request).accountId, (request.params as { id: string }).id);
      return reply.code(204).send();
    },
  );

  for (const [path, log] of [
    ['/api-keys/:id/requests', 'project'],
    ['/api-keys/:id/account-requests', 'account'],
  ] as const) {
    app.get(
      path,
      {
        config: account,
        schema: {
          tags: ['account API'],
          summary:
            log === 'project'
              ? "A key's request history (project API), newest first"
              : "An all-access key's account-API request history, newest first",
          security: bearerSecurity,
          params: IdParams,
          querystring: PageQuery,
          response: { 200: page(RequestSchema), ...errors(400, 401, 404) },
        },
      },
      async (request) => {
        const key = await findManagedKey(
          ctx,
          authOf(request).accountId,
          (request.params as { id: string }).id,
        );
        return listRequests(ctx.db, key.id, log, request.query as { limit: number; offset: number });
      },
    );
  }
}
