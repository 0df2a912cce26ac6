import { sql } from 'kysely';
import { normalizeEmail } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { AuthenticationError, ValidationError } from '../core/errors.ts';
import { randomBase62 } from '../core/secrets.ts';
import { queueSystemEmail } from '../emails/system-mail.ts';
import { CODE_TTL_MINUTES, consumeCode, issueCode } from './codes.ts';

const SESSION_PREFIX = 'phs_';
const SESSION_DAYS = 30;

/**
 * Dashboard login, step 1: emails a login code. Answers the same whether or not the email has an
 * account, so the endpoint cannot be used to discover accounts.
 */
export async function startLogin(ctx: DomainContext, input: { email: unknown }) {
  const email = normalizeEmail(input.email);
  const account = await ctx.db
    .selectFrom('accounts')
    .select(['id', 'name', 'email'])
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
  if (account) {
    await ctx.db.transaction().execute(async (tx) => {
      const code = await issueCode(tx, ctx, account.id, 'login');
      await queueSystemEmail(tx, ctx, {
        to: account.email,
        subject: `Your Posthorn login code: ${code}`,
        text: `Hello ${account.name},\n\nYour Posthorn login code is: ${code}\n\nIt expires in ${CODE_TTL_MINUTES} minutes. If you did not try to log in, ignore this message.\n`,
      });
    });
  }
  return { sent: true, email, expires_in_minutes: CODE_TTL_MINUTES };
}

/** Dashboard login, step 2: the code gives a session token (and proves the email, so it confirms it). */
export async function finishLogin(ctx: DomainContext, input: { email: unknown; code: unknown }) {
  const email = normalizeEmail(input.email);
  const account = await ctx.db
    .selectFrom('accounts')
    .select(['id', 'email_confirmed_at'])
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
  // one answer for every failure, so the endpoint tells nothing about which emails have accounts
  const refusal = 'The code is incorrect, expired or locked; request a new one';
  if (!account) throw new ValidationError(refusal);
  try {
    await consumeCode(ctx, account.id, 'login', input.code);
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError(refusal);
    throw err;
  }
  const token = SESSION_PREFIX + randomBase62(40);
  const expiresAt = new Date(Date.now() + SESSION_DAYS * 86_400_000);
  await ctx.db.transaction().execute(async (tx) => {
    await tx
      .insertInto('dashboard_sessions')
      .values({ account_id: account.id, token_hash: ctx.secrets.hash(token), expires_at: expiresAt })
      .execute();
    if (!account.email_confirmed_at) {
      await tx
        .updateTable('accounts')
        .set({ email_confirmed_at: new Date() })
        .where('id', '=', account.id)
        .execute();
    }
  });
  return { object: 'session' as const, token, account_id: account.id, expires_at: expiresAt.toISOString() };
}

/** The account behind a dashboard session token. */
export async function authenticateSession(ctx: DomainContext, token: string): Promise<{ accountId: string }> {
  if (!token.startsWith(SESSION_PREFIX))
    throw new AuthenticationError('A dashboard session token is required (log in at /api/auth/login)');
  const row = await ctx.db
    .selectFrom('dashboard_sessions')
    .select(['account_id', 'expires_at'])
    .where('token_hash', '=', ctx.secrets.hash(token))
    .executeTakeFirst();
  if (!row) throw new AuthenticationError('Invalid or logged-out dashboard session');
  if (row.expires_at <= new Date())
    throw new AuthenticationError('This dashboard session has expired; log in again');
  return { accountId: row.account_id };
}
