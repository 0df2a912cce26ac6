import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { resendVerification, signup, verifyEmail } from '../../domain/accounts.ts';
import type { DomainContext } from '../../domain/context.ts';
import { authOf } from '../auth.ts';
import {
  AccountSchema,
  ApiKeySchema,
  bearerSecurity,
  errors,
  ProjectSchema,
  WorkspaceSchema,
} from '../schemas.ts';

/** Signup and account email confirmation. */
export async function accountRoutes(app: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  app.post(
    '/signup',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['account'],
        summary: 'Create an account with a workspace, a starter project, a project key and an all-access key',
        description:
          "No password. `accept_terms` must be the person's own answer (JSON true). A six-character code is emailed; until it is confirmed the account can read the API but cannot send. Both key secrets are shown only in this response.",
        body: Type.Object({
          email: Type.String({ description: 'the account email; the code is sent here' }),
          name: Type.String({ description: "the person's name" }),
          accept_terms: Type.Boolean({ description: "must be true, as the person's own answer" }),
        }),
        response: {
          200: Type.Object({
            account: AccountSchema,
            workspace: WorkspaceSchema,
            project: ProjectSchema,
            project_key: ApiKeySchema,
            account_key: ApiKeySchema,
          }),
          ...errors(400, 409, 413),
        },
      },
    },
    async (request) => signup(ctx, request.body as never),
  );

  app.post(
    '/auth/verify-email/code',
    {
      config: { auth: 'key' },
      schema: {
        tags: ['account'],
        summary: 'Confirm the account email with the six-character code (either key of the account)',
        security: bearerSecurity,
        body: Type.Object({
          code: Type.String({ description: 'the code from the email, case-insensitive' }),
        }),
        response: { 200: AccountSchema, ...errors(400, 401) },
      },
    },
    async (request) => verifyEmail(ctx, authOf(request).accountId, (request.body as { code: string }).code),
  );

  app.post(
    '/auth/verify-email/resend',
    {
      config: { auth: 'key' },
      schema: {
        tags: ['account'],
        summary: 'Email a new confirmation code (at most one a minute)',
        security: bearerSecurity,
        response: {
          200: Type.Object({ sent: Type.Boolean(), email: Type.String() }),
          ...errors(401, 409, 429),
        },
      },
    },
    async (request) => resendVerification(ctx, authOf(request).accountId),
  );
}
