import { sql } from 'kysely';
import type { DomainContext } from '../core/context.ts';
import { RateLimitError } from '../core/errors.ts';
import { queueSystemEmail } from '../sending/system-mail.ts';

/**
 * POST /v1/signup answers 409 when an address has an account (it gives keys at once, so it cannot
 * answer the same for every address): issue 47 bounds how often anyone may ask, per address and per
 * client IP, and tells the account's owner that someone tried to sign up with their address.
 */

export const SIGNUP_WINDOW_MINUTES = 60;
/** Sign-up attempts per address in the window: the first makes the account, the rest are 409s. */
export const SIGNUPS_PER_EMAIL = 5;
// per client IP in the window: POSTHORN_SIGNUP_LIMIT (20; 0: no limit), config.signupsPerIp
const WINDOW_MS = SIGNUP_WINDOW_MINUTES * 60_000;
// the service's own account (migration 0044) is nobody's to be told about
export const SYSTEM_ACCOUNT_ID = '00000000-0000-4000-8000-000000000001';

export interface SignupAttempt {
  email: string;
  /** The client's IP, after POSTHORN_TRUST_PROXY (null when the door does not know it). */
  ip: string | null;
}

/** When the `limit`-th newest attempt in the window leaves it, or null when under the limit. */
async function freeAt(ctx: Pick<DomainContext, 'db'>, column: 'email' | 'ip', value: string, limit: number) {
  const { rows } = await sql<{ created_at: Date }>`
    select created_at from signup_attempts
     where ${sql.ref(column)} = ${value}
       and created_at > now() - make_interval(mins => ${SIGNUP_WINDOW_MINUTES})
     order by created_at desc offset ${limit - 1} limit 1`.execute(ctx.db);
  return rows[0] ? rows[0].created_at.getTime() + WINDOW_MS : null;
}

/**
 * Counts one sign-up attempt, or refuses it (429 with Retry-After, nothing written) when the address
 * or the client IP has had its attempts for the window. Counts live in PostgreSQL, shared by every node.
 */
export async function takeSignupAttempt(
  ctx: Pick<DomainContext, 'db'>,
  attempt: SignupAttempt,
  perIp: number,
): Promise<void> {
  const email = attempt.email.toLowerCase();
  const ip = attempt.ip ?? '';
  const [byEmail, byIp] = await Promise.all([
    freeAt(ctx, 'email', email, SIGNUPS_PER_EMAIL),
    attempt.ip === null || perIp === 0 ? null : freeAt(ctx, 'ip', ip, perIp),
  ]);
  const until = Math.max(byEmail ?? 0, byIp ?? 0);
  if (until > 0) {
    const seconds = Math.max(1, Math.ceil((until - Date.now()) / 1000));
    const minutes = Math.ceil(seconds / 60);
    throw new RateLimitError(
      `Too many sign-up attempts ${byEmail ? 'for this address' : 'from this network'}: try again in ${minutes} minute${minutes > 1 ? 's' : ''}`,
      seconds,
    );
  }
  await sql`insert into signup_attempts (email, ip) values (${email}, ${ip})`.execute(ctx.db);
  await sql`delete from signup_attempts
             where (email = ${email} or ip = ${ip})
               and created_at < now() - make_interval(mins => ${SIGNUP_WINDOW_MINUTES})`.execute(ctx.db);
}

const triedText = (name: string, email: string, ip: string | null, appUrl: string) =>
  [
    `Hello ${name},`,
    '',
    `Someone tried to create a Posthorn account with this address (${email}), which already has one${ip ? `; the request came from ${ip}` : ''}.`,
    'Nothing was made or changed: your account, its keys and its password stay as they are.',
    '',
    `If it was you, sign in instead: ${appUrl}`,
    'If it was not, you can ignore this message.',
  ].join('\n');

/** Emails the account with this address that someone tried to sign up with it (after a 409). */
export async function tellOfSignupAttempt(ctx: DomainContext, attempt: SignupAttempt): Promise<void> {
  await ctx.db.transaction().execute(async (tx) => {
    const account = await tx
      .selectFrom('accounts')
      .select(['id', 'name', 'email'])
      .where(sql<string>`lower(email)`, '=', attempt.email.toLowerCase())
      .where('id', '<>', SYSTEM_ACCOUNT_ID)
      .executeTakeFirst();
    if (!account) return;
    await queueSystemEmail(tx, ctx, {
      to: account.email,
      subject: 'Someone tried to sign up to Posthorn with your address',
      text: triedText(account.name, account.email, attempt.ip, ctx.config.appUrl),
    });
  });
}
