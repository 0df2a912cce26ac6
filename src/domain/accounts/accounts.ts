import type { Selectable } from 'kysely';
import type { AccountsTable } from '../../db/schema.ts';
import { normalizeEmail } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError, RateLimitError, ValidationError } from '../core/errors.ts';
import { createKey } from '../keys/service.ts';
import { queueSystemEmail } from '../sending/system-mail.ts';
import { CODE_TTL_MINUTES, consumeCode, issueCode } from './codes.ts';
import { presentProject } from './projects.ts';
import { takeSignupAttempt, tellOfSignupAttempt } from './signup-guard.ts';
import { insertWorkspace, presentWorkspace } from './workspaces.ts';

type AccountRow = Selectable<AccountsTable>;

export function presentAccount(row: AccountRow) {
  return {
    id: row.id,
    object: 'account' as const,
    email: row.email,
    name: row.name,
    email_confirmed: row.email_confirmed_at !== null,
    created_at: row.created_at.toISOString(),
  };
}

function verificationText(name: string, code: string) {
  return [
    `Hello ${name},`,
    '',
    `Your Posthorn verification code is: ${code}`,
    '',
    `It expires in ${CODE_TTL_MINUTES} minutes. Confirm it with POST /v1/auth/verify-email/code {"code": "${code}"}`,
    'or `posthorn verify-email CODE`. Until then your account can read the API but cannot send.',
    '',
    'If you did not sign up, ignore this message.',
  ].join('\n');
}

export interface SignupInput {
  email: unknown;
  name: unknown;
  accept_terms: unknown;
}

/** What every sign-up checks: an address, a name, and the terms accepted as the person's own answer. */
export function checkSignup(input: SignupInput): { email: string; name: string } {
  const email = normalizeEmail(input.email);
  if (typeof input.name !== 'string' || input.name.trim() === '')
    throw new ValidationError("`name` is required: the person's name");
  if (input.name.length > 200) throw new ValidationError('`name` must be at most 200 characters');
  if (input.accept_terms !== true) {
    throw new ValidationError(
      '`accept_terms` must be true: the person signing up has to accept the terms themselves',
    );
  }
  return { email, name: input.name.trim() };
}

/**
 * Creates the account, a workspace on the default plan (POSTHORN_DEFAULT_PLAN) with a starter
 * project, a project key and an all-access key, and queues the verification code email: all in one
 * transaction. Attempts are limited per address and per client IP (signup-guard.ts); an address that
 * has an account is a 409, and its owner is told by email.
 */
export async function signup(ctx: DomainContext, input: SignupInput, meta: { ip?: string | null } = {}) {
  const { email, name } = checkSignup(input);
  const attempt = { email, ip: meta.ip ?? null };
  await takeSignupAttempt(ctx, attempt, ctx.config.signupsPerIp);
  try {
    return await ctx.db.transaction().execute(async (tx) => {
      const account = await tx
        .insertInto('accounts')
        .values({ email, name, terms_accepted_at: new Date() })
        .returningAll()
        .executeTakeFirstOrThrow();
      const { workspace, project } = await insertWorkspace(tx, ctx, account.id, `${name}'s workspace`);
      const projectKey = await createKey(tx, ctx, {
        accountId: account.id,
        projectId: project.id,
        scope: 'project',
        name: 'Default project key',
      });
      const accountKey = await createKey(tx, ctx, {
        accountId: account.id,
        projectId: null,
        scope: 'all_access',
        name: 'All-access key',
      });
      const code = await issueCode(tx, ctx, account.id, 'verify_email');
      await queueSystemEmail(tx, ctx, {
        to: email,
        subject: `Your Posthorn code: ${code}`,
        text: verificationText(name, code),
      });
      return {
        account: presentAccount(account),
        workspace: presentWorkspace(workspace),
        project: presentProject(project),
        project_key: projectKey,
        account_key: accountKey,
      };
    });
  } catch (err) {
    if ((err as { code?: string }).code === '23505') {
      await tellOfSignupAttempt(ctx, attempt);
      throw new ConflictError('An account with this email already exists; log in instead');
    }
    throw err;
  }
}

export async function getAccount(ctx: Pick<DomainContext, 'db'>, accountId: string) {
  const row = await ctx.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
  if (!row) throw new NotFoundError('Account');
  return row;
}

/** Confirms the account email with the emailed code. Confirming twice is harmless. */
export async function verifyEmail(ctx: DomainContext, accountId: string, code: unknown) {
  const account = await getAccount(ctx, accountId);
  if (account.email_confirmed_at) return presentAccount(account);
  await consumeCode(ctx, accountId, 'verify_email', code);
  const updated = await ctx.db
    .updateTable('accounts')
    .set({ email_confirmed_at: new Date() })
    .where('id', '=', accountId)
    .returningAll()
    .executeTakeFirstOrThrow();
  return presentAccount(updated);
}

/** Sends a new verification code (at most one a minute). */
export async function resendVerification(ctx: DomainContext, accountId: string) {
  const account = await getAccount(ctx, accountId);
  if (account.email_confirmed_at) throw new ConflictError('The account email is already confirmed');
  const recent = await ctx.db
    .selectFrom('email_codes')
    .select('created_at')
    .where('account_id', '=', accountId)
    .where('purpose', '=', 'verify_email')
    .where('created_at', '>', new Date(Date.now() - 60_000))
    .executeTakeFirst();
  if (recent)
    throw new RateLimitError('A code was sent less than a minute ago; check your inbox or wait a minute', 60);
  await ctx.db.transaction().execute(async (tx) => {
    const code = await issueCode(tx, ctx, accountId, 'verify_email');
    await queueSystemEmail(tx, ctx, {
      to: account.email,
      subject: `Your Posthorn code: ${code}`,
      text: verificationText(account.name, code),
    });
  });
  return { sent: true, email: account.email };
}
