import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requestPasswordReset, resetPassword } from '../../domain/accounts/password-resets.ts';
import { loginWithPassword, setPassword } from '../../domain/accounts/passwords.ts';
import { describeSession, endSession, listSessions } from '../../domain/accounts/sessions.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { clearSessionCookie, sessionMetaOf, sessionOf, setSessionCookie } from '../auth.ts';
import { errors, IdParams, Nullable, typed } from '../schemas.ts';
import {
  AccountWithPassword,
  CurrentSession,
  DashboardSession,
  Email,
  Password,
  SessionList,
} from './dashboard-schemas.ts';

const PasswordLoginRequest = Type.Object(
  { email: Email, password: Type.String({ minLength: 1, maxLength: 1000 }) },
  { title: 'PasswordLoginRequest' },
);
const SetPasswordRequest = Type.Object({ password: Password }, { title: 'SetPasswordRequest' });
const ForgotPasswordRequest = Type.Object({ email: Email }, { title: 'ForgotPasswordRequest' });
const ResetLinkSent = Type.Object(
  { sent: Type.Boolean(), email: Type.String(), expires_in_minutes: Type.Integer() },
  { title: 'ResetLinkSent' },
);
const ResetPasswordRequest = Type.Object(
  {
    token: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'the `token` of the emailed reset link',
    }),
    password: Password,
  },
  { title: 'ResetPasswordRequest' },
);
const PasswordReset = Type.Object(
  { object: Type.Literal('password_reset'), account_id: Type.String(), email: Type.String() },
  { title: 'PasswordReset', description: 'The new password is set; every session was signed out' },
);

/** Dashboard sign-in by password, the forgot-password link, sign-out, and the person's sessions. */
export async function dashboardAuthRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const tags = ['dashboard'];
  const session = { auth: 'session' as const };

  app.post(
    '/auth/login/password',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Sign in with email and password (sets the session cookie)',
        operationId: 'loginWithPassword',
        description:
          'One answer for an unknown address, an account without a password and a wrong password. After 5 failures for an address (or 20 from an IP) in 15 minutes: 429 with Retry-After.',
        body: PasswordLoginRequest,
        response: { 200: DashboardSession, ...errors(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const opened = await loginWithPassword(ctx, request.body, sessionMetaOf(request));
      setSessionCookie(reply, ctx.config.appUrl, opened.token);
      return opened;
    },
  );

  app.post(
    '/auth/password',
    {
      config: session,
      schema: {
        tags,
        summary: 'Set or change your password (your other sessions are signed out)',
        operationId: 'setPassword',
        body: SetPasswordRequest,
        response: { 200: AccountWithPassword, ...errors(400, 401, 403) },
      },
    },
    async (request) => setPassword(ctx, sessionOf(request), request.body),
  );

  app.post(
    '/auth/forgot',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary:
          'Email a password reset link, valid one hour (the same answer whether or not the address has an account)',
        operationId: 'requestPasswordReset',
        body: ForgotPasswordRequest,
        response: { 200: ResetLinkSent, ...errors(400) },
      },
    },
    async (request) => requestPasswordReset(ctx, request.body),
  );

  app.post(
    '/auth/reset',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Choose a new password with the token of a reset link (a used or expired link is 400)',
        operationId: 'resetPassword',
        body: ResetPasswordRequest,
        response: { 200: PasswordReset, ...errors(400) },
      },
    },
    async (request) => resetPassword(ctx, request.body),
  );

  app.post(
    '/auth/logout',
    {
      config: session,
      schema: {
        tags,
        summary: 'Sign out: ends this session and clears the cookie',
        operationId: 'logout',
        response: { 204: Type.Null(), ...errors(401, 403) },
      },
    },
    async (request, reply) => {
      const current = sessionOf(request);
      await endSession(ctx, current.accountId, current.id);
      clearSessionCookie(reply, ctx.config.appUrl);
      return reply.code(204).send();
    },
  );

  app.get(
    '/session',
    {
      config: { ...session, allowSignedOut: true },
      schema: {
        tags,
        summary: 'Who is signed in: the account, the csrf_token, and your projects with your role in each',
        operationId: 'getSession',
        description:
          'Signed out (no session cookie and no Authorization header): 200 with `null`, so a signed-out page load is not an error. A session that is invalid, signed out or expired is 401; an API key is 403.',
        response: { 200: Nullable(CurrentSession), ...errors(401, 403) },
      },
    },
    async (request) => (request.auth?.session ? describeSession(ctx, request.auth.session) : null),
  );

  app.get(
    '/sessions',
    {
      config: session,
      schema: {
        tags,
        summary: 'Your signed-in sessions, newest first',
        operationId: 'listSessions',
        response: { 200: SessionList, ...errors(401) },
      },
    },
    async (request) => ({ data: await listSessions(ctx, sessionOf(request)) }),
  );

  app.delete(
    '/sessions/:id',
    {
      config: session,
      schema: {
        tags,
        summary: 'Sign one of your sessions out (another device, or this one)',
        operationId: 'revokeSession',
        params: IdParams,
        response: { 204: Type.Null(), ...errors(401, 403, 404) },
      },
    },
    async (request, reply) => {
      const current = sessionOf(request);
      await endSession(ctx, current.accountId, request.params.id);
      if (request.params.id === current.id) clearSessionCookie(reply, ctx.config.appUrl);
      return reply.code(204).send();
    },
  );
}
