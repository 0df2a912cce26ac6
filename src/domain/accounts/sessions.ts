import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { addJobs } from '../../db/enqueue.ts';
import { normalizeEmail } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { AuthenticationError, NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { randomBase62 } from '../core/secrets.ts';
import { queueSystemEmail } from '../sending/system-mail.ts';
import { presentAccount } from './accounts.ts';
import { CODE_TTL_MINUTES, consumeCode, issueCode } from './codes.ts';
import { checkSignInThrottle, clearSignInFailures, recordSignInFailure } from './login-throttle.ts';
import { listProjects } from './projects.ts';
import { SYSTEM_ACCOUNT_ID } from './signup-guard.ts';

export const SESSION_PREFIX = 'phs_';
export const SESSION_DAYS = 30;
// last_used_at is refreshed at most this often: a session list needs minutes, not every request
const TOUCH_EVERY_MS = 5 * 60_000;

/** Where a sign-in comes from: shown in the session list, and the IP counts failures. */
export interface SessionMeta {
  ip?: string | null;
  userAgent?: string | null;
}

/** A signed-in person, as the HTTP door's auth hook sees them. */
export interface AuthenticatedSession {
  id: string;
  accountId: string;
  /** What state-changing requests signed in by the cookie must echo in `X-CSRF-Token`. */
  csrfToken: string;
  expiresAt: Date;
}

/** The anti-forgery token of a session: an HMAC of its token, so there is nothing more to store. */
export function csrfTokenOf(ctx: Pick<DomainContext, 'secrets'>, token: string): string {
  return ctx.secrets.hash(`csrf:${token}`).toString('base64url');
}

/** Opens a session (inside the caller's transaction) and returns it with its token, shown this once. */
export async function openSession(
  tx: Tx,
  ctx: Pick<DomainContext, 'db' | 'secrets'>,
  accountId: string,
  meta: SessionMeta,
) {
  const token = SESSION_PREFIX + randomBase62(40);
  const row = await tx
    .insertInto('dashboard_sessions')
    .values({
      account_id: accountId,
      token_hash: ctx.secrets.hash(token),
      expires_at: new Date(Date.now() + SESSION_DAYS * 86_400_000),
      ip: meta.ip?.slice(0, 100) ?? null,
      user_agent: meta.userAgent?.slice(0, 500) ?? null,
    })
    .returning(['id', 'expires_at'])
    .executeTakeFirstOrThrow();
  return {
    object: 'session' as const,
    id: row.id,
    token,
    account_id: accountId,
    csrf_token: csrfTokenOf(ctx, token),
    expires_at: row.expires_at.toISOString(),
  };
}
export type OpenedSession = Awaited<ReturnType<typeof openSession>>;

/** The job that emails a login code (`sendLoginCode`), queued by every login request. */
export const LOGIN_CODE_TASK = 'send_login_code';

/**
 * Dashboard login, step 1: asks for a login code to be emailed. The request does the same work for
 * every address (it queues one job naming the address, in one statement) and gives the same answer,
 * so neither the answer nor its time tells which addresses have accounts; whether there is an
 * account to send to is the job's business (`sendLoginCode`).
 */
export async function startLogin(ctx: DomainContext, input: { email: unknown }) {
  const email = normalizeEmail(input.email);
  await addJobs([{ task: LOGIN_CODE_TASK, payload: { email }, maxAttempts: 5 }]).execute(ctx.db);
  return { sent: true, email, expires_in_minutes: CODE_TTL_MINUTES };
}

/**
 * Emails a fresh login code to the account with this address, if there is one (earlier codes stop
 * working); an address without an account gets nothing. The account row is locked, so two requests
 * at once leave one valid code, the one queued last.
 */
export async function sendLoginCode(ctx: DomainContext, email: string): Promise<void> {
  await ctx.db.transaction().execute(async (tx) => {
    const account = await tx
      .selectFrom('accounts')
      .select(['id', 'name', 'email'])
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .forUpdate()
      .executeTakeFirst();
    if (!account) return;
    const code = await issueCode(tx, ctx, account.id, 'login');
    await queueSystemEmail(tx, ctx, {
      to: account.email,
      subject: `Your Posthorn login code: ${code}`,
      text: `Hello ${account.name},\n\nYour Posthorn login code is: ${code}\n\nIt expires in ${CODE_TTL_MINUTES} minutes. If you did not try to log in, ignore this message.\n`,
    });
  });
}

/**
 * Dashboard login, step 2: the code gives a session (and proves the email, so it confirms it).
 * Wrong codes count towards the same per-address and per-IP limits as wrong passwords.
 */
export async function finishLogin(
  ctx: DomainContext,
  input: { email: unknown; code: unknown },
  meta: SessionMeta = {},
): Promise<OpenedSession> {
  const email = normalizeEmail(input.email);
  const attempt = { email, ip: meta.ip ?? null };
  await checkSignInThrottle(ctx, attempt);
  const account = await ctx.db
    .selectFrom('accounts')
    .select(['id', 'email_confirmed_at'])
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
  // one answer for every failure, so the endpoint tells nothing about which emails have accounts
  const refusal = 'The code is incorrect, expired or locked; request a new one';
  try {
    if (!account) throw new ValidationError(refusal);
    await consumeCode(ctx, account.id, 'login', input.code);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    await recordSignInFailure(ctx, attempt);
    throw new ValidationError(refusal);
  }
  await clearSignInFailures(ctx, email);
  return ctx.db.transaction().execute(async (tx) => {
    if (!account.email_confirmed_at) {
      await tx
        .updateTable('accounts')
        .set({ email_confirmed_at: new Date() })
        .where('id', '=', account.id)
        .execute();
    }
    return openSession(tx, ctx, account.id, meta);
  });
}

/** The person behind a dashboard session token (refreshing when it was last used, now and then). */
export async function authenticateSession(
  ctx: Pick<DomainContext, 'db' | 'secrets'>,
  token: string,
): Promise<AuthenticatedSession> {
  if (!token.startsWith(SESSION_PREFIX))
    throw new AuthenticationError('A dashboard session token is required (log in at /api/auth/login)');
  const row = await ctx.db
    .selectFrom('dashboard_sessions')
    .select(['id', 'account_id', 'expires_at', 'last_used_at'])
    .where('token_hash', '=', ctx.secrets.hash(token))
    .executeTakeFirst();
  if (!row)
    throw new AuthenticationError(
      'Invalid or logged-out dashboard session (API keys start with "ph_"); log in again',
    );
  if (row.expires_at <= new Date())
    throw new AuthenticationError('This dashboard session has expired; log in again');
  if (Date.now() - row.last_used_at.getTime() > TOUCH_EVERY_MS) {
    await ctx.db
      .updateTable('dashboard_sessions')
      .set({ last_used_at: new Date() })
      .where('id', '=', row.id)
      .execute();
  }
  return {
    id: row.id,
    accountId: row.account_id,
    csrfToken: csrfTokenOf(ctx, token),
    expiresAt: row.expires_at,
  };
}

/** Ends every session of an account except `keep` (after a password change or reset). */
export async function revokeSessions(tx: Tx, accountId: string, keep: string | null): Promise<void> {
  let query = tx.deleteFrom('dashboard_sessions').where('account_id', '=', accountId);
  if (keep) query = query.where('id', '!=', keep);
  await query.execute();
}

/** Ends one of the person's sessions (sign out, or revoking another device); someone else's is 404. */
export async function endSession(
  ctx: Pick<DomainContext, 'db'>,
  accountId: string,
  sessionId: string,
): Promise<void> {
  if (!isUuid(sessionId)) throw new NotFoundError('Session');
  const ended = await ctx.db
    .deleteFrom('dashboard_sessions')
    .where('id', '=', sessionId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (ended.numDeletedRows === 0n) throw new NotFoundError('Session');
}

/** The person's sessions that have not expired, newest first; `current` marks the one asking. */
export async function listSessions(ctx: Pick<DomainContext, 'db'>, session: AuthenticatedSession) {
  const rows = await ctx.db
    .selectFrom('dashboard_sessions')
    .select(['id', 'ip', 'user_agent', 'created_at', 'last_used_at', 'expires_at'])
    .where('account_id', '=', session.accountId)
    .where('expires_at', '>', new Date())
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    object: 'session' as const,
    current: r.id === session.id,
    ip: r.ip,
    user_agent: r.user_agent,
    created_at: r.created_at.toISOString(),
    last_used_at: r.last_used_at.toISOString(),
    expires_at: r.expires_at.toISOString(),
  }));
}

/** GET /api/session: who is signed in, the anti-forgery token, and their projects with their roles. */
export async function describeSession(ctx: Pick<DomainContext, 'db'>, session: AuthenticatedSession) {
  const account = await ctx.db
    .selectFrom('accounts')
    .selectAll()
    .where('id', '=', session.accountId)
    .executeTakeFirstOrThrow();
  // the server's operator: the person who set it up, whose account was the first (issue 48)
  const first = await ctx.db
    .selectFrom('accounts')
    .select('id')
    .where('id', '<>', SYSTEM_ACCOUNT_ID)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return {
    object: 'session' as const,
    id: session.id,
    expires_at: session.expiresAt.toISOString(),
    csrf_token: session.csrfToken,
    account: { ...presentAccount(account), has_password: account.password_hash !== null },
    projects: await listProjects(ctx, { accountId: session.accountId }),
    operator: first?.id === account.id,
  };
}
