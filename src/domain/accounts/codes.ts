import { randomInt } from 'node:crypto';
import type { Tx } from '../../db/database.ts';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';

// no 0/O, 1/I: a code read from an email and typed by a person
const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
export const CODE_LENGTH = 6;
export const CODE_TTL_MINUTES = 30;
export const MAX_CODE_ATTEMPTS = 5;
type Purpose = 'verify_email' | 'login';

function codeDigest(ctx: Pick<DomainContext, 'secrets'>, accountId: string, purpose: Purpose, code: string) {
  return ctx.secrets.hash(`${purpose}:${accountId}:${code}`);
}

/** Creates a fresh code (earlier unused ones stop working) and returns it for the email. */
export async function issueCode(
  tx: Tx,
  ctx: DomainContext,
  accountId: string,
  purpose: Purpose,
): Promise<string> {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  await tx
    .updateTable('email_codes')
    .set({ consumed_at: new Date() })
    .where('account_id', '=', accountId)
    .where('purpose', '=', purpose)
    .where('consumed_at', 'is', null)
    .execute();
  await tx
    .insertInto('email_codes')
    .values({
      account_id: accountId,
      purpose,
      code_hash: codeDigest(ctx, accountId, purpose, code),
      expires_at: new Date(Date.now() + CODE_TTL_MINUTES * 60_000),
    })
    .execute();
  return code;
}

export function normalizeCode(input: unknown): string {
  if (typeof input !== 'string')
    throw new ValidationError('`code` is required: the six-character code from the email');
  const code = input.trim().toUpperCase();
  if (code.length !== CODE_LENGTH || ![...code].every((c) => /[A-Z0-9]/.test(c))) {
    throw new ValidationError('`code` must be the six-character code from the email (letters and digits)');
  }
  return code;
}

/**
 * Checks a code against the newest one issued. A wrong guess counts (and is committed) even though
 * the request fails; after MAX_CODE_ATTEMPTS the code is locked and a new one must be requested.
 */
export async function consumeCode(
  ctx: Pick<DomainContext, 'db' | 'secrets'>,
  accountId: string,
  purpose: Purpose,
  input: unknown,
): Promise<void> {
  const code = normalizeCode(input);
  const failure = await ctx.db.transaction().execute(async (tx) => {
    const row = await tx
      .selectFrom('email_codes')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('purpose', '=', purpose)
      .where('consumed_at', 'is', null)
      .orderBy('created_at', 'desc')
      .limit(1)
      .forUpdate()
      .executeTakeFirst();
    if (!row) return 'There is no pending code for this account; request a new one';
    if (row.attempts >= MAX_CODE_ATTEMPTS)
      return 'Too many wrong attempts: this code is locked; request a new one';
    if (row.expires_at <= new Date()) return 'This code has expired; request a new one';
    if (!ctx.secrets.matches(`${purpose}:${accountId}:${code}`, row.code_hash)) {
      await tx
        .updateTable('email_codes')
        .set({ attempts: row.attempts + 1 })
        .where('id', '=', row.id)
        .execute();
      const left = MAX_CODE_ATTEMPTS - row.attempts - 1;
      return left > 0
        ? `The code is incorrect; ${left} attempt${left === 1 ? '' : 's'} left`
        : 'The code is incorrect and is now locked; request a new one';
    }
    await tx.updateTable('email_codes').set({ consumed_at: new Date() }).where('id', '=', row.id).execute();
    return null;
  });
  if (failure) throw new ValidationError(failure);
}
