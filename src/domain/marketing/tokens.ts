import { timingSafeEqual } from 'node:crypto';
import type { DomainContext } from '../core/context.ts';
import { ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';

/**
 * The tokens in marketing mail's public links (`/u/{token}`, `/t/o/{token}`, `/t/c/{token}`):
 * base64url of `kind byte | ids | 128-bit HMAC` keyed with the server secret. A forged, truncated
 * or re-purposed token is refused by arithmetic alone, before any database read.
 *
 * A click token carries its destination URL under the MAC instead of pointing into a table of
 * links: the mail layer rewrites links while it composes (pure, no writes), a million-recipient
 * campaign writes no per-recipient link rows, and since the URL is signed the redirect can only
 * ever go where the message itself linked (no open redirect), with nothing to look up.
 */
export type TokenKind = 'unsubscribe' | 'open' | 'click';

export type TokenIds = {
  unsubscribe: { emailId: string; contactId: string };
  open: { emailId: string };
  click: { emailId: string; linkIndex: number; url: string };
};

const KIND_BYTE: Record<TokenKind, number> = { unsubscribe: 1, open: 2, click: 3 };
const MAC_BYTES = 16;
/** Longer tokens are refused before decoding (a click token holds its URL: 4 KB of it, well within request-line limits). */
const MAX_TOKEN_CHARS = 6_000;
const MAX_URL_BYTES = 4_000;
const TOKEN_CHARS = /^[A-Za-z0-9_-]+$/;

function uuidBytes(id: string): Buffer {
  if (!isUuid(id)) throw new ValidationError(`a token needs an id, got ${JSON.stringify(id)}`);
  return Buffer.from(id.replaceAll('-', ''), 'hex');
}

function uuidOf(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Only absolute http(s) links are tracked: anything else is left as the author wrote it. */
function trackableUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

function mac(ctx: Pick<DomainContext, 'secrets'>, payload: Buffer): Buffer {
  return ctx.secrets
    .hash(`posthorn/marketing-token/v1:${payload.toString('base64url')}`)
    .subarray(0, MAC_BYTES);
}

function seal(ctx: DomainContext, kind: TokenKind, body: Buffer[]): string {
  const payload = Buffer.concat([Buffer.from([KIND_BYTE[kind]]), ...body]);
  return Buffer.concat([payload, mac(ctx, payload)]).toString('base64url');
}

/** The token of an email's unsubscribe link and preference page: the email and its contact. */
export function unsubscribeToken(ctx: DomainContext, ids: { emailId: string; contactId: string }): string {
  return seal(ctx, 'unsubscribe', [uuidBytes(ids.emailId), uuidBytes(ids.contactId)]);
}

/** The token of an email's open pixel. */
export function openToken(ctx: DomainContext, emailId: string): string {
  return seal(ctx, 'open', [uuidBytes(emailId)]);
}

/** The token of one tracked link: the email, the link's position in it and its destination. */
export function clickToken(ctx: DomainContext, emailId: string, linkIndex: number, url: string): string {
  if (!Number.isInteger(linkIndex) || linkIndex < 0 || linkIndex > 0xffff)
    throw new ValidationError('a link index must be an integer from 0 to 65535');
  if (!trackableUrl(url))
    throw new ValidationError(`only absolute http(s) links of at most ${MAX_URL_BYTES} bytes are tracked`);
  // spaces and non-ASCII are percent-encoded once here, so the redirect's Location header is always valid
  const target = Buffer.from(/[^\x21-\x7e]/.test(url) ? new URL(url).href : url, 'utf8');
  if (target.length > MAX_URL_BYTES)
    throw new ValidationError(`only absolute http(s) links of at most ${MAX_URL_BYTES} bytes are tracked`);
  const index = Buffer.alloc(2);
  index.writeUInt16BE(linkIndex);
  return seal(ctx, 'click', [uuidBytes(emailId), index, target]);
}

function decode(kind: TokenKind, payload: Buffer) {
  const body = payload.subarray(1);
  switch (kind) {
    case 'unsubscribe':
      if (body.length !== 32) return null;
      return { emailId: uuidOf(body.subarray(0, 16)), contactId: uuidOf(body.subarray(16)) };
    case 'open':
      if (body.length !== 16) return null;
      return { emailId: uuidOf(body) };
    case 'click': {
      if (body.length < 19) return null;
      const url = body.subarray(18).toString('utf8');
      if (!trackableUrl(url)) return null;
      return { emailId: uuidOf(body.subarray(0, 16)), linkIndex: body.readUInt16BE(16), url };
    }
  }
}

/**
 * The ids a token carries, or null for anything not minted by this server as this kind: tampered,
 * truncated, padded, of another kind. The MAC is compared in constant time.
 */
export function readToken<K extends TokenKind>(
  ctx: DomainContext,
  kind: K,
  token: string,
): TokenIds[K] | null {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS || !TOKEN_CHARS.test(token)) return null;
  const raw = Buffer.from(token, 'base64url');
  // base64url decoding forgives stray bits: only the one canonical spelling is accepted
  if (raw.length <= MAC_BYTES + 1 || raw.toString('base64url') !== token) return null;
  const payload = raw.subarray(0, raw.length - MAC_BYTES);
  const expected = mac(ctx, payload);
  if (!timingSafeEqual(expected, raw.subarray(raw.length - MAC_BYTES))) return null;
  if (payload[0] !== KIND_BYTE[kind]) return null;
  return decode(kind, payload) as TokenIds[K] | null;
}

/** The public links of one email: its unsubscribe page (when it has a contact), open pixel and tracked links. */
export function publicUrls(ctx: DomainContext, ids: { emailId: string; contactId: string | null }) {
  const base = ctx.config.publicUrl.replace(/\/+$/, '');
  return {
    unsubscribe: ids.contactId
      ? `${base}/u/${unsubscribeToken(ctx, { emailId: ids.emailId, contactId: ids.contactId })}`
      : null,
    open: `${base}/t/o/${openToken(ctx, ids.emailId)}`,
    click: (linkIndex: number, url: string) => `${base}/t/c/${clickToken(ctx, ids.emailId, linkIndex, url)}`,
  };
}
