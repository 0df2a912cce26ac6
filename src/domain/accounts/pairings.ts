import { randomBytes } from 'node:crypto';
import type { DomainContext } from '../core/context.ts';
import { NotFoundError, RateLimitError, ValidationError } from '../core/errors.ts';
import { randomBase62 } from '../core/secrets.ts';
import { createKey } from '../keys/service.ts';
import { adminProjects } from './projects.ts';

export const PAIRING_MINUTES = 10;
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789'; // no 0/O, 1/I: easy to compare by eye

function newCode(): string {
  const bytes = randomBytes(8);
  const chars = [...bytes].map((b) => CODE_ALPHABET[b % CODE_ALPHABET.length]);
  return `${chars.slice(0, 4).join('')}-${chars.slice(4).join('')}`;
}

function deviceName(value: string | null | undefined): string {
  if (value === undefined || value === null) return 'a device';
  if (value.trim() === '') throw new ValidationError('`device_name` must not be blank');
  if (value.length > 100) throw new ValidationError('`device_name` must be at most 100 characters');
  return value.trim();
}

/** POST /auth/pairings: a code to show, the page to open and the token to poll with (10 minutes). */
export async function startPairing(ctx: DomainContext, body: { device_name?: string | null }) {
  const device = deviceName(body.device_name);
  const code = newCode();
  const pollToken = `php_${randomBase62(40)}`;
  const expiresAt = new Date(Date.now() + PAIRING_MINUTES * 60_000);
  await ctx.db
    .insertInto('pairings')
    .values({
      code,
      poll_token_hash: ctx.secrets.hash(pollToken),
      device_name: device,
      expires_at: expiresAt,
    })
    .execute();
  return {
    object: 'pairing' as const,
    code,
    verification_url: `${ctx.config.appUrl}/pair?code=${encodeURIComponent(code)}`,
    poll_token: pollToken,
    expires_at: expiresAt.toISOString(),
    interval: 2,
  };
}

/**
 * GET /auth/pairings/{poll_token}: pending, denied, expired, or authorized with the key — handed
 * out exactly once (the pairing is then spent). Polling more than once a second is a 429.
 */
export async function pollPairing(ctx: Pick<DomainContext, 'db' | 'secrets'>, pollToken: string) {
  const row = await ctx.db
    .selectFrom('pairings')
    .selectAll()
    .where('poll_token_hash', '=', ctx.secrets.hash(pollToken))
    .executeTakeFirst();
  if (!row) throw new NotFoundError('Pairing');
  if (row.last_polled_at && Date.now() - row.last_polled_at.getTime() < 1000)
    throw new RateLimitError('Polling too fast: wait a second between polls', 1);
  const now = new Date();
  let status = row.status;
  if (status === 'pending' && row.expires_at <= now) status = 'expired';
  let key: string | undefined;
  if (status === 'authorized' && row.key_enc) key = ctx.secrets.decrypt(row.key_enc).toString('utf8');
  else if (status === 'authorized') status = 'expired'; // already handed out
  await ctx.db
    .updateTable('pairings')
    .set({
      last_polled_at: now,
      ...(key ? { key_enc: null } : {}),
      ...(status === 'expired' ? { status } : {}),
    })
    .where('id', '=', row.id)
    .execute();
  return { object: 'pairing' as const, status, ...(key ? { key, key_id: row.key_id } : {}) };
}

/** A pending, unexpired pairing by its code (the browser page). */
export async function pendingPairing(ctx: Pick<DomainContext, 'db'>, code: unknown) {
  if (typeof code !== 'string' || code === '') throw new NotFoundError('Pairing code');
  const row = await ctx.db
    .selectFrom('pairings')
    .selectAll()
    .where('code', '=', code.trim().toUpperCase())
    .executeTakeFirst();
  if (row?.status !== 'pending' || row.expires_at <= new Date())
    throw new NotFoundError('Pairing code (it may have expired or been used)');
  return row;
}

/** The choices of scope for the page: every project the person administers, or all access. */
export function pairingScopes(ctx: Pick<DomainContext, 'db'>, accountId: string) {
  return adminProjects(ctx.db, accountId);
}

/** The person authorises: a key of the chosen scope named after the device, kept for one poll. */
export async function authorizePairing(ctx: DomainContext, accountId: string, code: unknown, scope: unknown) {
  const row = await pendingPairing(ctx, code);
  const projects = await adminProjects(ctx.db, accountId);
  if (scope !== 'all' && !projects.some((p) => p.id === scope))
    throw new ValidationError('Choose one of your projects, or all access');
  return ctx.db.transaction().execute(async (tx) => {
    const key = await createKey(tx, ctx, {
      accountId,
      projectId: scope === 'all' ? null : (scope as string),
      scope: scope === 'all' ? 'all_access' : 'project',
      name: `CLI on ${row.device_name}`.slice(0, 100),
    });
    await tx
      .updateTable('pairings')
      .set({
        status: 'authorized',
        account_id: accountId,
        key_enc: ctx.secrets.encrypt(key.key as string),
        key_id: key.id,
      })
      .where('id', '=', row.id)
      .where('status', '=', 'pending')
      .execute();
    return key;
  });
}

export async function denyPairing(ctx: Pick<DomainContext, 'db'>, code: unknown) {
  const row = await pendingPairing(ctx, code);
  await ctx.db.updateTable('pairings').set({ status: 'denied' }).where('id', '=', row.id).execute();
}
