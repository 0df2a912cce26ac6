import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { startCodeSignup } from '../../domain/accounts/code-signup.ts';
import { finishLogin, startLogin } from '../../domain/accounts/sessions.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { createKeyInProject } from '../../domain/keys/service.ts';
import { authOf, sessionMetaOf, setSessionCookie } from '../auth.ts';
import { ApiKeySchema, errors, typed } from '../schemas.ts';
import { dashboardAuthRoutes } from './dashboard-auth.ts';
import { dashboardMailboxRoutes } from './dashboard-mailbox.ts';
import { dashboardMemberRoutes } from './dashboard-members.ts';
import { DashboardSession, Email } from './dashboard-schemas.ts';
import { KeyFields } from './keys.ts';

const LoginRequest = Type.Object({ email: Email }, { title: 'LoginRequest' });
const LoginCodeSent = Type.Object(
  {
    sent: Type.Boolean(),
    email: Type.String(),
    expires_in_minutes: Type.Integer(),
  },
  { title: 'LoginCodeSent' },
);

const DashboardSignupRequest = Type.Object(
  {
    email: Email,
    name: Type.String({ minLength: 1, maxLength: 200, description: "the person's name" }),
    accept_terms: Type.Boolean({
      description: "must be true, as the person's own answer (a box they ticked, never ticked for them)",
    }),
  },
  { title: 'DashboardSignupRequest' },
);

const VerifyLoginRequest = Type.Object(
  {
    email: Email,
    code: Type.String({ description: 'the six-character code from the login email, case-insensitive' }),
  },
  { title: 'VerifyLoginRequest' },
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

/**
 * The dashboard's own API under {app_url}/api: sign-up and sign-in (emailed code, password), password reset,
 * sessions, members and invitations, key creation, and the dev mailbox. A team is a project. Everything else the
 * dashboard does goes through /v1 with the session cookie.
 */
export async function dashboardRoutes(
  instance: FastifyInstance,
  { ctx, devMailbox }: { ctx: DomainContext; devMailbox: boolean },
) {
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
    '/auth/signup',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['dashboard'],
        summary:
          'Sign up from the dashboard: one email with one code, which confirms the address and signs in',
        operationId: 'signUpWithCode',
        description:
          "No password, no keys shown: a new address gets its account (a workspace and a starter project) and an email with a six-character code; `POST /api/auth/login/verify` with that code confirms the address and opens the session. An address that already has an account gets a login code instead, and the answer is the same for both. `accept_terms` must be the person's own answer (JSON true). Refused with 429 while the address or the IP is locked out of sign-in.",
        body: DashboardSignupRequest,
        response: { 200: LoginCodeSent, ...errors(400, 429) },
      },
    },
    async (request) => startCodeSignup(ctx, request.body, sessionMetaOf(request)),
  );

  app.post(
    '/auth/login/verify',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['dashboard'],
        summary: 'Exchange the emailed login or sign-up code for a dashboard session (token and cookie)',
        operationId: 'verifyLoginCode',
        description:
          'Sets the httpOnly `posthorn_session` cookie and returns the token (for `Authorization: Bearer`) and the `csrf_token`; the code also confirms the address (the one step after `POST /api/auth/signup`). Failed attempts count towards the per-address and per-IP limits (429).',
        body: VerifyLoginRequest,
        response: { 200: DashboardSession, ...errors(400, 429) },
      },
    },
    async (request, reply) => {
      const session = await finishLogin(ctx, request.body, sessionMetaOf(request));
      setSessionCookie(reply, ctx.config.appUrl, session.token);
      return session;
    },
  );

  app.post(
    '/teams/:team_id/api-keys',
    {
      config: { auth: 'session', role: 'admin' },
      schema: {
        tags: ['dashboard'],
        summary: 'Create a key in a team (project) you administer; the secret is shown only this once',
        operationId: 'createTeamApiKey',
        description:
          'Bearer: a dashboard session token (or the session cookie). `scope` defaults to `project`.',
        params: Type.Object({ team_id: Type.String({ description: 'the team (project) id' }) }),
        body: CreateTeamApiKeyRequest,
        response: { 200: ApiKeySchema, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => createKeyInProject(ctx, authOf(request), request.params.team_id, request.body, 'Team'),
  );

  await app.register(dashboardAuthRoutes, { ctx });
  await app.register(dashboardMemberRoutes, { ctx });
  await app.register(dashboardMailboxRoutes, { ctx, devMailbox });
}
