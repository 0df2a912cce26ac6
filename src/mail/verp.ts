import { timingSafeEqual } from 'node:crypto';
import { localPartOf } from './address.ts';

/**
 * VERP return paths: `bounces+<token>@<bounce domain>`, where the token is the email id (32 hex
 * digits) and a 10-digit keyed checksum, so a bounce names its message and cannot be forged for
 * another. Lower-case hex survives MTAs that change the case of local parts.
 */
export const VERP_PREFIX = 'bounces+';

type Hash = (value: string) => Buffer;

function checksum(hash: Hash, compactId: string): string {
  return hash(`verp:${compactId}`).subarray(0, 5).toString('hex');
}

/**
 * The domain of a message's return path: the sending domain's bounce subdomain, so SPF aligns
 * (relaxed) with the From domain, or the shared domain itself for mail signed as it.
 */
export function returnPathDomain(signingDomain: string, sharedDomain: string): string {
  return signingDomain === sharedDomain ? sharedDomain : `bounces.${signingDomain}`;
}

export function bounceAddress(hash: Hash, emailId: string, domain: string): string {
  const compact = emailId.replace(/-/g, '').toLowerCase();
  return `${VERP_PREFIX}${compact}${checksum(hash, compact)}@${domain}`;
}

/** The email id a bounce address names, or null when it is not one of ours (or tampered with). */
export function emailIdFromBounceAddress(hash: Hash, address: string): string | null {
  const local = localPartOf(address).toLowerCase();
  const match = /^bounces\+([0-9a-f]{32})([0-9a-f]{10})$/.exec(local);
  if (!match) return null;
  const expected = Buffer.from(checksum(hash, match[1]));
  if (!timingSafeEqual(expected, Buffer.from(match[2]))) return null;
  const h = match[1];
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
