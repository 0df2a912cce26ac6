import { sql } from 'kysely';
import { addJobs } from '../../db/enqueue.ts';
import { normalizeEmail } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { randomBase62 } from '../core/secrets.ts';
import { queueSystemEmail } from '../sending/system-mail.ts';
import { checkPassword, hashPassword } from './passwords.ts';
import { revokeSessions } from './sessions.ts';

export const RESET_TTL_MINUTES = 60;
// one link a minute per account: enough for a person, useless for flooding their inbox
const RESET_EVERY_MS = 60_000;

const digest = (ctx: DomainContext, token: string) => ctx.secrets.hash(`password-reset:${token}`);

function resetText(name: string, link: string) {
  return [
    `Hello ${name},`,
    '',
    'Someone (we hope you) asked to reset the password of your Posthorn account. To choose a new one, open:',
    '',
    link,
    '',
    `The link works once and expires in ${RESET_TTL_MINUTES} minutes. If you did not ask, ignore this message: your password stays as it is.`,
  ].join('\n');
}

/** The job that emails a reset link (`sendPasswordReset`), queued by every forgot-password request. */
export const PASSWORD_RESET_TASK = 'send_password_reset';

/**
 * Forgot password: emails a single-use link to `{app_url}/reset?token=...`, valid one hour (only the
 * token's hash is stored). The request does the same work for every address (it queues one job
 * naming the address, in one statement) and gives the same answer, so neither the answer nor its
 * time tells which addresses have accounts (issue 47); the job finds the account (`sendPasswordReset`).
 */
export async function requestPasswordReset(ctx: DomainContext, input: { email: unknown }) {
  const email = normalizeEmail(input.email);
  await addJobs([{ task: PASSWORD_RESET_TASK, payload: { email }, maxAttempts: 5 }]).execute(ctx.db);
  return { sent: true, email, expires_in_minutes: RESET_TTL_MINUTES };
}

/**
 * Emails a reset link to the account with this address, if there is one and it was not sent one in
 * the last minute; an address without an account gets nothing. The account row is locked, so two
 * jobs at once send one link.
 */
export async function sendPasswordReset(ctx: DomainContext, email: string): Promise<void> {
  await ctx.db.transaction().execute(async (tx) => {
    const account = await tx
      .selectFrom('accounts')
      .select(['id', 'name', 'email'])
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .forUpdate()
      .executeTakeFirst();
    if (!account) return;
    const recent = await tx
      .selectFrom('password_resets')
      .select('id')
      .where('account_id', '=', account.id)
      .where('created_at', '>', new Date(Date.now() - RESET_EVERY_MS))
      .executeTakeFirst();
    if (recent) return;
    const token = randomBase62(43);
    await tx
      .insertInto('password_resets')
      .values({
        account_id: account.id,
        token_hash: digest(ctx, token),
        expires_at: new Date(Date.now() + RESET_TTL_MINUTES * 60_000),
      })
      .execute();
    await queueSystemEmail(tx, ctx, {
      to: account.email,
      subject: 'Reset your Posthorn password',
      text: resetText(account.name, `${ctx.config.appUrl}/reset?token=${token}`),
    });
  });
}

/**
 * Sets a new password with a reset link's token. A used link and an expired one are refused, each
 * saying so. The reset proves the address (it confirms it) and signs every session out.
 */
export async function resetPassword(ctx: DomainContext, input: { token: unknown; password: unknown }) {
  if (typeof input.token !== 'string' || input.token === '')
    throw new ValidationError('`token` is required: the token from the reset link');
  const password = checkPassword(input.password);
  const hash = await hashPassword(password);
  const failure = 'This reset link is not valid (check that it was copied whole), or request a new one';
  return ctx.db.transaction().execute(async (tx) => {
    const reset = await tx
      .selectFrom('password_resets')
      .selectAll()
      .where('token_hash', '=', digest(ctx, input.token as string))
      .forUpdate()
      .executeTakeFirst();
    if (!reset) throw new ValidationError(failure);
    if (reset.used_at)
      throw new ValidationError('This reset link has already been used; request a new one if needed');
    if (reset.expires_at <= new Date())
      throw new ValidationError(
        `This reset link has expired (links last ${RESET_TTL_MINUTES} minutes); request a new one`,
      );
    const now = new Date();
    await tx.updateTable('password_resets').set({ used_at: now }).where('id', '=', reset.id).execute();
    // the other outstanding links of the account stop working too
    await tx
      .updateTable('password_resets')
      .set({ used_at: now })
      .where('account_id', '=', reset.account_id)
      .where('used_at', 'is', null)
      .execute();
    const account = await tx
      .updateTable('accounts')
      .set({ password_hash: hash, email_confirmed_at: sql`coalesce(email_confirmed_at, now())` })
      .where('id', '=', reset.account_id)
      .returning(['id', 'email'])
      .executeTakeFirstOrThrow();
    await revokeSessions(tx, account.id, null);
    return { object: 'password_reset' as const, account_id: account.id, email: account.email };
  });
}
