import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';

/**
 * Keys derived from the server secret: one for hashing API keys, codes and session tokens
 * (a keyed SHA-256, right for high-entropy secrets), one for encryption at rest (AES-256-GCM).
 */
export interface Secrets {
  hash(value: string): Buffer;
  matches(value: string, expected: Buffer): boolean;
  encrypt(plain: Buffer | string): Buffer;
  decrypt(sealed: Buffer): Buffer;
}

export function createSecrets(serverSecret: string): Secrets {
  const derive = (info: string) =>
    Buffer.from(hkdfSync('sha256', Buffer.from(serverSecret), Buffer.alloc(0), info, 32));
  // a KeyObject is imported once; a raw Buffer key would be re-imported on every hash
  const hashKey = createSecretKey(derive('posthorn/hash/v1'));
  const encryptionKey = derive('posthorn/encrypt/v1');
  const hash = (value: string) => createHmac('sha256', hashKey).update(value).digest();
  return {
    hash,
    matches(value, expected) {
      const actual = hash(value);
      return actual.length === expected.length && timingSafeEqual(actual, expected);
    },
    encrypt(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv);
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([Buffer.from([1]), iv, cipher.getAuthTag(), body]);
    },
    decrypt(sealed) {
      if (sealed[0] !== 1) throw new Error('unknown encryption format');
      const decipher = createDecipheriv('aes-256-gcm', encryptionKey, sealed.subarray(1, 13));
      decipher.setAuthTag(sealed.subarray(13, 29));
      return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]);
    },
  };
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniformly random base62 string (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function base62(value: number, width: number): string {
  let out = '';
  let n = value;
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}
