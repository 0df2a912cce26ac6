import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/context.ts';
import { createKeyInProject } from '../../domain/keys/service.ts';
import { finishLogin, startLogin } from '../../domain/sessions.ts';
import { authOf } from '../auth.ts';
import { ApiKeySchema, errors } from '../schemas.ts';

/** The dashboard's own API under {app_url}/api: emailed-code login and key creation. A team is a project. */
export async function dashboardRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  app.post(
    '/auth/login',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['dashboard'],
        summary: 'Email a login code (the answer is the same whether or not the email has an account)',
        body: Type.Object({ email: Type.String() }),
        response: {
          200: Type.Object({
            sent: Type.Boolean(),
            email: Type.String(),
            expires_in_minutes: Type.Integer(),
          }),
          ...errors(400),
        },
      },
    },
    async (request) => startLogin(ctx, request.body as { email: string }),
  );

  app.post(
    '/auth/login/verify',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['dashboard'],
        summary: 'Exchange the emailed login code for a dashboard session token',
        body: Type.Object({ email: Type.String(), code: Type.String() }),
        response: {
          200: Type.Object({
            object: Type.Literal('session'),
            token: Type.String(),
            account_id: Type.String(),
            expires_at: Type.String(),
          }),
          ...errors(400),
        },
      },
    },
    async (request) => finishLogin(ctx, request.body as { email: string; code: string }),
  );

  app.post(
    '/teams/:team_id/api-keys',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['dashboard'],
        summary: 'Create a key in a team (project) you administer; the secret is shown only this once',
        description: 'Bearer: a dashboard session token. `scope` defaults to `project`.',
        security: [{ bearerAuth: [] }],
        params: Type.Object({ team_id: Type.String() }),
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 100 }),
          expires_in_days: Type.Optional(Type.Union([Type.Integer({ enum: [30, 90, 365] }), Type.Null()])),
          scope: Type.Optional(Type.String({ enum: ['project', 'all_access'] })),
        }),
        response: { 200: ApiKeySchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { team_id } = request.params as { team_id: string };
      return createKeyInProject(
        ctx,
        authOf(request).accountId,
        team_id,
        request.body as { name: string },
        'Team',
      );
    },
  );
}
