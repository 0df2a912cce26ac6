import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import {
  createKeyInProject,
  listKeyRequests,
  listProjectKeys,
  revokeKey,
  rotateKey,
} from '../../domain/keys/service.ts';
import { authOf } from '../auth.ts';
import {
  ApiKeySchema,
  errors,
  IdParams,
  list,
  Nullable,
  PageQuery,
  ProjectParams,
  page,
  pageOf,
  typed,
  Uuid,
} from '../schemas.ts';

/** A key's name and lifetime: shared with the dashboard's team keys, which add `scope`. */
export const KeyFields = {
  name: Type.String({
    minLength: 1,
    maxLength: 100,
    description: 'what the key is for, at most 100 characters',
  }),
  expires_in_days: Type.Optional(
    Nullable(
      Type.Integer({
        enum: [30, 90, 365],
        description: '30, 90 or 365; omitted (or null) means never',
      }),
    ),
  ),
};

const CreateProjectApiKeyRequest = Type.Object(KeyFields, {
  title: 'CreateProjectApiKeyRequest',
  description: 'A project key; a `scope` field here is unknown and ignored',
});

const ApiKeyList = Type.Object(list(ApiKeySchema).properties, { title: 'ApiKeyList' });

const RequestSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('request'),
    key_name: Type.String(),
    project_id: Nullable(Uuid),
    method: Type.String(),
    path: Type.String(),
    status: Type.Integer(),
    latency_ms: Type.Number(),
    created_at: Type.String(),
  },
  { title: 'RequestLogEntry' },
);
const RequestLogPage = Type.Object(page(RequestSchema).properties, { title: 'RequestLogPage' });

/** Account API: a project's keys, rotation, revocation and request history. */
export async function keyRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  // managing keys needs Owner or Admin; with a session the role is checked where the path names the project
  const account = { auth: 'account' as const, role: 'admin' as const };

  app.get(
    '/projects/:project_id/api-keys',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: "List a project's keys (never their secrets)",
        operationId: 'listProjectApiKeys',
        params: ProjectParams,
        response: { 200: ApiKeyList, ...errors(401, 404) },
      },
    },
    async (request) => ({
      data: await listProjectKeys(ctx, authOf(request), request.params.project_id),
    }),
  );

  app.post(
    '/projects/:project_id/api-keys',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Create a project key; the response holds the secret `key`, shown only this once',
        operationId: 'createProjectApiKey',
        params: ProjectParams,
        body: CreateProjectApiKeyRequest,
        response: { 200: ApiKeySchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      // the account API creates project keys only: a `scope` field here is unknown and ignored
      const { name, expires_in_days } = request.body;
      return createKeyInProject(ctx, authOf(request), request.params.project_id, {
        name,
        expires_in_days,
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
        operationId: 'rotateApiKey',
        params: IdParams,
        response: { 200: ApiKeySchema, ...errors(401, 404, 409) },
      },
    },
    async (request) => rotateKey(ctx, authOf(request), request.params.id),
  );

  app.delete(
    '/api-keys/:id',
    {
      config: account,
      schema: {
        tags: ['account API'],
        summary: 'Revoke a key, at once, for the API and SMTP',
        operationId: 'revokeApiKey',
        params: IdParams,
        response: { 204: Type.Null(), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await revokeKey(ctx, authOf(request), request.params.id);
      return reply.code(204).send();
    },
  );

  for (const [path, log, operationId] of [
    ['/api-keys/:id/requests', 'project', 'listApiKeyRequests'],
    ['/api-keys/:id/account-requests', 'account', 'listApiKeyAccountRequests'],
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
          operationId,
          params: IdParams,
          querystring: PageQuery,
          response: { 200: RequestLogPage, ...errors(400, 401, 404) },
        },
      },
      async (request) => listKeyRequests(ctx, authOf(request), request.params.id, log, pageOf(request.query)),
    );
  }
}
