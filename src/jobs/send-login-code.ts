import type { Task } from 'graphile-worker';
import { sendSignupCode } from '../domain/accounts/code-signup.ts';
import { sendPasswordReset } from '../domain/accounts/password-resets.ts';
import { sendLoginCode } from '../domain/accounts/sessions.ts';
import type { DomainContext } from '../domain/core/context.ts';

/**
 * Emails a fresh login code to the address if it has an account, and does nothing otherwise (see
 * domain/accounts/sessions.ts `sendLoginCode`): every login request queues one, whatever the address.
 */
export function sendLoginCodeTask(ctx: DomainContext): Task<'send_login_code'> {
  return async (payload) => sendLoginCode(ctx, payload.email);
}

/**
 * A browser sign-up: creates the account of a new address and emails its one code, or emails a
 * login code to an address that has an account (domain/accounts/code-signup.ts `sendSignupCode`).
 */
export function sendSignupCodeTask(ctx: DomainContext): Task<'send_signup_code'> {
  return async (payload) => sendSignupCode(ctx, payload);
}

/**
 * Emails a password reset link to the address if it has an account, and does nothing otherwise
 * (domain/accounts/password-resets.ts `sendPasswordReset`): every forgot-password request queues one.
 */
export function sendPasswordResetTask(ctx: DomainContext): Task<'send_password_reset'> {
  return async (payload) => sendPasswordReset(ctx, payload.email);
}
