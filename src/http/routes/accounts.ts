import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { resendVerification, signup, verifyEmail } from '../../domain/accounts/accounts.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { authOf } from '../auth.ts';
import { AccountSchema, ApiKeySchema, errors, ProjectSchema, typed, WorkspaceSchema } from '../schemas.ts';

const SignupRequest = Type.Object(
  {
    email: Type.String({
      maxLength: 254,
      description: 'the account email (`address`, not `Name <address>`); the code is sent here',
    }),
    name: Type.String({ minLength: 1, maxLength: 200, description: "the person's name" }),
    accept_terms: Type.Boolean({ description: "must be true, as the person's own answer" }),
  },
  { title: 'SignupRequest' },
);

const SignupResult = Type.Object(
  {
    account: AccountSchema,
    workspace: WorkspaceSchema,
    project: ProjectSchema,
    project_key: ApiKeySchema,
    account_key: ApiKeySchema,
  },
  { title: 'SignupResult', description: 'Both key secrets (`key`) appear only here' },
);

const VerifyEmailRequest = Type.Object(
  {
    code: Type.String({
      description: 'the six-character code from the email (letters and digits), case-insensitive',
    }),
  },
  { title: 'VerifyEmailRequest' },
);

const VerificationSent = Type.Object(
  { sent: Type.Boolean(), email: Type.String({ description: 'where the code was sent' }) },
  { title: 'VerificationSent' },
);

/** Signup and account email confirmation. */
export async function accountRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);

  app.post(
    '/signup',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['account'],
        summary: 'Create an account with a workspace, a starter project, a project key and an all-access key',
        operationId: 'signUp',
        description:
          "No password. `accept_terms` must be the person's own answer (JSON true). A six-character code is emailed; until it is confirmed the account can read the API but cannot send. Both key secrets are shown only in this response. An address that has an account is a 409, and that account is told by email. At most 5 attempts an hour per address and POSTHORN_SIGNUP_LIMIT (20) per client IP: then 429 with Retry-After.",
        body: SignupRequest,
        response: { 200: SignupResult, ...errors(400, 409, 413, 429) },
      },
    },
    async (request) => signup(ctx, request.body, { ip: request.ip }),
  );

  app.post(
    '/auth/verify-email/code',
    {
      config: { auth: 'key' },
      schema: {
        tags: ['account'],
        summary: 'Confirm the account email with the six-character code (either key of the account)',
        operationId: 'verifyEmail',
        body: VerifyEmailRequest,
        response: { 200: AccountSchema, ...errors(400, 401) },
      },
    },
    async (request) => verifyEmail(ctx, authOf(request).accountId, request.body.code),
  );

  app.post(
    '/auth/verify-email/resend',
    {
      config: { auth: 'key' },
      schema: {
        tags: ['account'],
        summary: 'Email a new confirmation code (at most one a minute)',
        operationId: 'resendVerificationEmail',
        response: { 200: VerificationSent, ...errors(401, 409, 429) },
      },
    },
    async (request) => resendVerification(ctx, authOf(request).accountId),
  );
}
