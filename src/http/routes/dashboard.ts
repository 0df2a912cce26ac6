import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { finishLogin, startLogin } from '../../domain/accounts/sessions.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { createKeyInProject } from '../../domain/keys/service.ts';
import { authOf } from '../auth.ts';
import { ApiKeySchema, errors, typed } from '../schemas.ts';
import { KeyFields } from './keys.ts';

const Email = Type.String({ maxLength: 254, description: 'the account email' });

const LoginRequest = Type.Object({ email: Email }, { title: 'LoginRequest' });
const LoginCodeSent = Type.Object(
  {
    sent: Type.Boolean(),
    email: Type.String(),
    expires_in_minutes: Type.Integer(),
  },
  { title: 'LoginCodeSent' },
);

const VerifyLoginRequest = Type.Object(
  {
    email: Email,
    code: Type.String({ description: 'the six-character code from the login email, case-insensitive' }),
  },
  { title: 'VerifyLoginRequest' },
);
const DashboardSession = Type.Object(
  {
    object: Type.Literal('session'),
    token: Type.String({ description: 'the bearer token for the dashboard API (`phs_...`)' }),
    account_id: Type.String(),
    expires_at: Type.String(),
  },
  { title: 'DashboardSession' },
);

const CreateTeamApiKeyRequest = Type.Object(
  {
    ...KeyFields,
    scope: Type.Optional(
      Type.Enum(['project', 'all_access'], {
        type: 'string',
        description: '`project` (the default) or `all_access` (every project, the account API)',
      }),
    ),
  },
  { title: 'CreateTeamApiKeyRequest' },
);

/** The dashboard's own API under {app_url}/api: emailed-code login and key creation. A team is a project. */
export async function dashboardRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);

  app.post(
    '/auth/login',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['dashboard'],
        summary: 'Email a login code (the answer is the same whether or not the email has an account)',
        operationId: 'requestLoginCode',
        body: LoginRequest,
        response: { 200: LoginCodeSent, ...errors(400) },
      },
    },
    async (request) => startLogin(ctx, request.body),
  );

  app.post(
    '/auth/login/verify',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['dashboard'],
        summary: 'Exchange the emailed login code for a dashboard session token',
        operationId: 'verifyLoginCode',
        body: VerifyLoginRequest,
        response: { 200: DashboardSession, ...errors(400) },
      },
    },
    async (request) => finishLogin(ctx, request.body),
  );

  app.post(
    '/teams/:team_id/api-keys',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['dashboard'],
        summary: 'Create a key in a team (project) you administer; the secret is shown only this once',
        operationId: 'createTeamApiKey',
        description: 'Bearer: a dashboard session token. `scope` defaults to `project`.',
        params: Type.Object({ team_id: Type.String({ description: 'the team (project) id' }) }),
        body: CreateTeamApiKeyRequest,
        response: { 200: ApiKeySchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => createKeyInProject(ctx, authOf(request), request.params.team_id, request.body, 'Team'),
  );
}
