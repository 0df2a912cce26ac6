import type { DomainContext } from '../core/context.ts';
import { AuthenticationError, DomainError, ValidationError } from '../core/errors.ts';
import { startCodeSignup } from './code-signup.ts';
import { authorizePairing, pendingPairing } from './pairings.ts';
import { authenticateSession, finishLogin, type SessionMeta, startLogin } from './sessions.ts';

/**
 * The steps of the browser page of `posthorn login` (`/pair`), one function each: every step first
 * checks that the pairing is still pending, so a used or expired code stops the flow at any step.
 */

/** A signed-in person on the page: the session token their browser presented, and who they are. */
export interface PageSession {
  token: string;
  accountId: string;
  email: string;
}

/**
 * The first valid session among the tokens the browser presented (the page's own cookie, then the
 * dashboard's): a person already signed in to the dashboard only confirms. An old session is
 * passed over (sign in again).
 */
export async function pageSession(
  ctx: Pick<DomainContext, 'db' | 'secrets'>,
  tokens: string[],
): Promise<PageSession | null> {
  for (const token of tokens) {
    let accountId: string;
    try {
      accountId = (await authenticateSession(ctx, token)).accountId;
    } catch (err) {
      if (err instanceof AuthenticationError) continue;
      throw err;
    }
    const account = await ctx.db
      .selectFrom('accounts')
      .select('email')
      .where('id', '=', accountId)
      .executeTakeFirst();
    return { token, accountId, email: account?.email ?? '' };
  }
  return null;
}

/** Opening the page: the pairing must be pending; a valid session (if any) skips the sign-in. */
export async function openPairingPage(
  ctx: DomainContext,
  code: string,
  sessionTokens: string[],
): Promise<PageSession | null> {
  await pendingPairing(ctx, code);
  return pageSession(ctx, sessionTokens);
}

/** Sign in: a login code is emailed (the answer is the same whether or not the email has an account). */
export async function pairingSignIn(ctx: DomainContext, code: string, email: string) {
  await pendingPairing(ctx, code);
  return startLogin(ctx, { email });
}

/**
 * Create an account: the person must have ticked the terms box themselves; then one email with one
 * code, which confirms the address and signs in (the same answer for an address with an account).
 */
export async function pairingSignUp(
  ctx: DomainContext,
  code: string,
  input: { email: string; name: string | undefined; acceptedTerms: boolean },
  meta: SessionMeta,
) {
  await pendingPairing(ctx, code);
  if (!input.acceptedTerms)
    throw new ValidationError('To create an account, tick the box to accept the terms of service.');
  return startCodeSignup(ctx, { email: input.email, name: input.name, accept_terms: true }, meta);
}

/** The emailed code, exchanged for a session (the dashboard's too: the page sets both cookies). */
export async function pairingFinishLogin(
  ctx: DomainContext,
  code: string,
  email: string,
  loginCode: unknown,
  meta: SessionMeta,
) {
  await pendingPairing(ctx, code);
  return finishLogin(ctx, { email, code: loginCode }, meta);
}

/**
 * The authorise form's anti-forgery token: a keyed hash of the session and the pairing code, so
 * only a page this server rendered for that session can authorise that code (another site cannot
 * read it), whatever a browser does with SameSite cookies.
 */
const formTokenInput = (session: string, code: string) => `pair-authorize:${session}:${code}`;

export function pairingFormToken(ctx: Pick<DomainContext, 'secrets'>, session: string, code: string): string {
  return ctx.secrets.hash(formTokenInput(session, code)).toString('base64url');
}

export type PairingAuthorization =
  | { outcome: 'authorized' }
  | { outcome: 'forged' }
  | { outcome: 'refused'; accountId: string; message: string };

/**
 * Authorise: the session's person, a form token that matches it (compared timing-safe), then a key
 * of the chosen scope. A refusal (a scope that is not theirs) keeps the person on the form.
 */
export async function authorizeFromPage(
  ctx: DomainContext,
  form: { session: string; code: string; formToken: unknown; scope: unknown },
): Promise<PairingAuthorization> {
  await pendingPairing(ctx, form.code);
  const { accountId } = await authenticateSession(ctx, form.session);
  const presented = form.formToken;
  if (
    typeof presented !== 'string' ||
    !ctx.secrets.matches(formTokenInput(form.session, form.code), Buffer.from(presented, 'base64url'))
  )
    return { outcome: 'forged' };
  try {
    await authorizePairing(ctx, accountId, form.code, form.scope);
  } catch (err) {
    if (err instanceof DomainError) return { outcome: 'refused', accountId, message: err.message };
    throw err;
  }
  return { outcome: 'authorized' };
}
