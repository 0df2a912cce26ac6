import type { Task } from 'graphile-worker';
import { sendLoginCode } from '../domain/accounts/sessions.ts';
import type { DomainContext } from '../domain/core/context.ts';

/**
 * Emails a fresh login code to the address if it has an account, and does nothing otherwise (see
 * domain/accounts/sessions.ts `sendLoginCode`): every login request queues one, whatever the address.
 */
export function sendLoginCodeTask(ctx: DomainContext): Task<'send_login_code'> {
  return async (payload) => sendLoginCode(ctx, payload.email);
}
