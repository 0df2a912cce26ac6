import { crc32 } from 'node:zlib';
import { base62, randomBase62 } from '../core/secrets.ts';

/**
 * An API key is `ph_` + key id (12) + secret (32) + checksum (6), all base62.
 * The key id is public and stable across rotation; the checksum (CRC-32 of what precedes it)
 * lets a mistyped key be refused without a database hit, and lets secret scanners match keys.
 */
export const KEY_PREFIX = 'ph_';
const ID_LENGTH = 12;
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${ID_LENGTH + SECRET_LENGTH + CHECKSUM_LENGTH}}$`);

function checksum(body: string): string {
  return base62(crc32(body), CHECKSUM_LENGTH);
}

export function newKeyId(): string {
  return randomBase62(ID_LENGTH);
}

export function formatKey(keyId: string, secret: string): string {
  const body = `${KEY_PREFIX}${keyId}${secret}`;
  return body + checksum(body);
}

export function newSecret(): string {
  return randomBase62(SECRET_LENGTH);
}

export type ParsedKey = { keyId: string; secret: string };

/** Splits a presented key into id and secret, or returns a reason it cannot be a key. */
export function parseKey(token: string): ParsedKey | { problem: string } {
  if (!token.startsWith(KEY_PREFIX)) return { problem: `API keys start with "${KEY_PREFIX}"` };
  if (!KEY_PATTERN.test(token)) return { problem: 'the API key is malformed (wrong length or characters)' };
  const body = token.slice(0, -CHECKSUM_LENGTH);
  if (checksum(body) !== token.slice(-CHECKSUM_LENGTH)) {
    return { problem: 'the API key checksum does not match (is it mistyped or truncated?)' };
  }
  const keyId = token.slice(KEY_PREFIX.length, KEY_PREFIX.length + ID_LENGTH);
  return { keyId, secret: token.slice(KEY_PREFIX.length + ID_LENGTH, -CHECKSUM_LENGTH) };
}
