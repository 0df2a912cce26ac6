import { sql } from 'kysely';
import { addJobs } from '../../db/enqueue.ts';
import type { DomainContext } from '../core/context.ts';
import { queueSystemEmail } from '../sending/system-mail.ts';
import { checkSignup, type SignupInput } from './accounts.ts';
import { CODE_TTL_MINUTES, issueCode } from './codes.ts';
import { checkSignInThrottle } from './login-throttle.ts';
import type { SessionMeta } from './sessions.ts';
import { insertWorkspace } from './workspaces.ts';

/** The job that carries out a sign-up from the dashboard or the pairing page (`sendSignupCode`). */
export const SIGNUP_CODE_TASK = 'send_signup_code';

/**
 * Sign-up from a browser (the dashboard's sign-up screen, the pairing page of `posthorn login`),
 * step 1. The input is checked here (a 400 names the field); then, like asking for a login code,
 * the request queues one job naming the address and answers the same for every address, so neither
 * the answer nor its time tells whether the address already has an account. Step 2 is the code
 * sign-in (`finishLogin`): the one emailed code confirms the address and opens a session. An
 * address or IP locked out of sign-in by failed attempts is refused (429) here too.
 */
export async function startCodeSignup(ctx: DomainContext, input: SignupInput, meta: SessionMeta = {}) {
  const { email, name } = checkSignup(input);
  await checkSignInThrottle(ctx, { email, ip: meta.ip ?? null });
  await addJobs([
    {
      task: SIGNUP_CODE_TASK,
      payload: { email, name, terms_accepted_at: new Date().toISOString() },
      maxAttempts: 5,
    },
  ]).execute(ctx.db);
  return { sent: true, email, expires_in_minutes: CODE_TTL_MINUTES };
}

const newAccountText = (name: string, code: string) =>
  [
    `Hello ${name},`,
    '',
    `Your Posthorn code is: ${code}`,
    '',
    'Enter it on the page where you signed up: it confirms this address and signs you in.',
    `It expires in ${CODE_TTL_MINUTES} minutes.`,
    '',
    'If you did not sign up, ignore this message: without the code nobody can use the account.',
  ].join('\n');

const existingAccountText = (name: string, code: string) =>
  [
    `Hello ${name},`,
    '',
    'Someone, probably you, asked to create a Posthorn account for this address, which already has one.',
    `To sign in instead, your login code is: ${code}`,
    '',
    `It expires in ${CODE_TTL_MINUTES} minutes. If it was not you, ignore this message.`,
  ].join('\n');

/**
 * Step 1's job: a new address gets its account (a workspace on the default plan with a starter
 * project; no API key, the person makes those in the dashboard or the CLI) and one email with one
 * code; an address that has an account gets a login code instead. Either code signs in through
 * `finishLogin`, which also confirms the address. All in one transaction; a retried job finds the account
 * it made and sends a login code, never a second account.
 */
export async function sendSignupCode(
  ctx: DomainContext,
  payload: { email: string; name: string; terms_accepted_at: string },
): Promise<void> {
  await ctx.db.transaction().execute(async (tx) => {
    const existing = await tx
      .selectFrom('accounts')
      .select(['id', 'name', 'email'])
      .where(sql<string>`lower(email)`, '=', payload.email.toLowerCase())
      .forUpdate()
      .executeTakeFirst();
    if (existing) {
      const code = await issueCode(tx, ctx, existing.id, 'login');
      await queueSystemEmail(tx, ctx, {
        to: existing.email,
        subject: `Your Posthorn login code: ${code}`,
        text: existingAccountText(existing.name, code),
      });
      return;
    }
    const account = await tx
      .insertInto('accounts')
      .values({
        email: payload.email,
        name: payload.name,
        terms_accepted_at: new Date(payload.terms_accepted_at),
      })
      .returning(['id', 'email', 'name'])
      .executeTakeFirstOrThrow();
    await insertWorkspace(tx, ctx, account.id, `${account.name}'s workspace`);
    const code = await issueCode(tx, ctx, account.id, 'login');
    await queueSystemEmail(tx, ctx, {
      to: account.email,
      subject: `Your Posthorn code: ${code}`,
      text: newAccountText(account.name, code),
    });
  });
}
