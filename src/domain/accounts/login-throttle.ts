import { sql } from 'kysely';
import type { DomainContext } from '../core/context.ts';
import { RateLimitError } from '../core/errors.ts';

/** Failed sign-ins allowed per window, per address and per IP (an office shares one IP). */
export const WINDOW_MINUTES = 15;
export const FAILURES_PER_EMAIL = 5;
export const FAILURES_PER_IP = 20;
const WINDOW_MS = WINDOW_MINUTES * 60_000;

/** Who is signing in: the address typed and the client's IP (null when the door does not know it). */
export interface SignInAttempt {
  email: string;
  ip: string | null;
}

/** When the `limit`-th newest failure in the window leaves it, or null when under the limit. */
async function freeAt(ctx: Pick<DomainContext, 'db'>, column: 'email' | 'ip', value: string, limit: number) {
  const row = await ctx.db
    .selectFrom('login_failures')
    .select('created_at')
    .where(column, '=', value)
    .where('created_at', '>', sql<Date>`now() - make_interval(mins => ${WINDOW_MINUTES})`)
    .orderBy('created_at', 'desc')
    .offset(limit - 1)
    .limit(1)
    .executeTakeFirst();
  return row ? row.created_at.getTime() + WINDOW_MS : null;
}

/**
 * Refuses (429 with Retry-After) a sign-in from an address or an IP with too many recent failures,
 * before the password or code is even looked at. Counts live in PostgreSQL, shared by every node.
 */
export async function checkSignInThrottle(
  ctx: Pick<DomainContext, 'db'>,
  attempt: SignInAttempt,
): Promise<void> {
  const [byEmail, byIp] = await Promise.all([
    freeAt(ctx, 'email', attempt.email.toLowerCase(), FAILURES_PER_EMAIL),
    attempt.ip === null ? null : freeAt(ctx, 'ip', attempt.ip, FAILURES_PER_IP),
  ]);
  const until = Math.max(byEmail ?? 0, byIp ?? 0);
  if (until === 0) return;
  const seconds = Math.max(1, Math.ceil((until - Date.now()) / 1000));
  throw new RateLimitError(
    `Too many failed sign-ins ${byEmail ? 'for this address' : 'from this network'}: try again in ${Math.ceil(seconds / 60)} minute${seconds > 60 ? 's' : ''}, or reset the password`,
    seconds,
  );
}

/** Counts one failed sign-in (and forgets this address's and IP's failures older than the window). */
export async function recordSignInFailure(
  ctx: Pick<DomainContext, 'db'>,
  attempt: SignInAttempt,
): Promise<void> {
  const email = attempt.email.toLowerCase();
  const ip = attempt.ip ?? '';
  await ctx.db.insertInto('login_failures').values({ email, ip }).execute();
  await ctx.db
    .deleteFrom('login_failures')
    .where((eb) => eb.or([eb('email', '=', email), eb('ip', '=', ip)]))
    .where('created_at', '<', sql<Date>`now() - make_interval(mins => ${WINDOW_MINUTES})`)
    .execute();
}

/** A successful sign-in forgets the address's failures (not the IP's: one good account must not reset them). */
export async function clearSignInFailures(ctx: Pick<DomainContext, 'db'>, email: string): Promise<void> {
  await ctx.db.deleteFrom('login_failures').where('email', '=', email.toLowerCase()).execute();
}
