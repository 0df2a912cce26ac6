import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import { normalizeEmail } from '../core/addresses.ts';
import type { DomainContext } from '../core/context.ts';
import { AuthenticationError, ValidationError } from '../core/errors.ts';
import { presentAccount } from './accounts.ts';
import { checkSignInThrottle, clearSignInFailures, recordSignInFailure } from './login-throttle.ts';
import { openSession, revokeSessions, type SessionMeta } from './sessions.ts';

export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 200;
// scrypt at N=2^15, r=8 (32 MiB, tens of milliseconds): people's passwords are low-entropy, unlike keys
const PARAMS = { N: 32768, r: 8, p: 1 };
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }) {
  const options: ScryptOptions = { ...params, maxmem: 128 * params.N * params.r * 2 };
  return new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** Checks the password rule (10 to 200 characters) and returns the password. */
export function checkPassword(value: unknown, field = 'password'): string {
  if (typeof value !== 'string') throw new ValidationError(`\`${field}\` is required: a string`);
  if (value.length < PASSWORD_MIN_LENGTH)
    throw new ValidationError(`\`${field}\` must be at least ${PASSWORD_MIN_LENGTH} characters long`);
  if (value.length > PASSWORD_MAX_LENGTH)
    throw new ValidationError(`\`${field}\` must be at most ${PASSWORD_MAX_LENGTH} characters long`);
  return value;
}

/** `scrypt$N$r$p$salt$hash`: the parameters travel with the hash, so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

let decoy: Promise<string> | undefined;

/**
 * Whether a password matches a stored hash, compared in constant time. Without a hash (no account, or
 * no password set) a decoy hash is checked, so the answer takes as long either way.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  const parts = (stored ?? (await decoy)).split('$');
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const expected = Buffer.from(parts[5], 'base64');
  const actual = await derive(password, Buffer.from(parts[4], 'base64'), { N, r, p });
  return stored !== null && actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * Sets or changes the signed-in person's password. The person's other sessions end (whoever else
 * was signed in must sign in again); the session that asked stays.
 */
export async function setPassword(
  ctx: DomainContext,
  session: { id: string; accountId: string },
  input: { password: unknown },
) {
  const hash = await hashPassword(checkPassword(input.password));
  return ctx.db.transaction().execute(async (tx) => {
    const account = await tx
      .updateTable('accounts')
      .set({ password_hash: hash })
      .where('id', '=', session.accountId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await revokeSessions(tx, session.accountId, session.id);
    return { ...presentAccount(account), has_password: true };
  });
}

/**
 * Signs in with email and password. Unknown address, no password yet and wrong password get the
 * same answer in the same time; failures count per address and per IP (checkSignInThrottle).
 */
export async function loginWithPassword(
  ctx: DomainContext,
  input: { email: unknown; password: unknown },
  meta: SessionMeta,
) {
  const email = normalizeEmail(input.email);
  if (typeof input.password !== 'string' || input.password === '')
    throw new ValidationError('`password` is required');
  const attempt = { email, ip: meta.ip ?? null };
  await checkSignInThrottle(ctx, attempt);
  const account = await ctx.db
    .selectFrom('accounts')
    .select(['id', 'password_hash'])
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
  const ok = await verifyPassword(
    input.password.slice(0, PASSWORD_MAX_LENGTH),
    account?.password_hash ?? null,
  );
  if (!account || !ok) {
    await recordSignInFailure(ctx, attempt);
    throw new AuthenticationError(
      'Wrong email or password (no password yet? sign in with an emailed code, or reset the password)',
    );
  }
  await clearSignInFailures(ctx, email);
  return ctx.db.transaction().execute((tx) => openSession(tx, ctx, account.id, meta));
}
