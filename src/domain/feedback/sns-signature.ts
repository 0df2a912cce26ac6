import { createPublicKey, type KeyObject, verify, X509Certificate } from 'node:crypto';

/** An Amazon SNS message as it is POSTed to an HTTP(S) subscriber. */
export interface SnsMessage {
  Type: 'Notification' | 'SubscriptionConfirmation' | 'UnsubscribeConfirmation';
  MessageId: string;
  TopicArn: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: '1' | '2';
  Signature: string;
  SigningCertURL: string;
  Subject?: string;
  SubscribeURL?: string;
  Token?: string;
}

/** A message that is not an SNS message (400), as opposed to one whose signature fails (403). */
export class SnsFormatError extends Error {}
/** A message SNS did not sign, or whose content changed after signing. */
export class SnsSignatureError extends Error {}

const TYPES = ['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation'];
/**
 * SNS's own hosts, per region (the China regions end in .amazonaws.com.cn). The label must be a
 * region (us-east-1, us-gov-west-1, cn-north-1): AWS's own validator takes any label of three or
 * more characters, and a looser pattern takes sns.s3.amazonaws.com, where anyone can serve a file
 * from a bucket named `sns` (issue 47).
 */
const SNS_HOST = /^sns\.[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}\.amazonaws\.com(\.cn)?$/;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** The fields signed, in the order SNS signs them, for each type (AWS: "Verifying the signatures of Amazon SNS messages"). */
const SIGNED_FIELDS = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: [
    'Message',
    'MessageId',
    'SubscribeURL',
    'Timestamp',
    'Token',
    'TopicArn',
    'Type',
  ],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
} as const;

/**
 * The string SNS signs: each signed field present, as its name and its value, each on its own
 * line (a trailing newline included); `Subject` only when the notification has one.
 */
export function snsStringToSign(message: SnsMessage): string {
  let text = '';
  for (const field of SIGNED_FIELDS[message.Type]) {
    const value = message[field];
    if (value === undefined) continue;
    text += `${field}\n${value}\n`;
  }
  return text;
}

/** Whether a URL is SNS's own, over https: the only place a certificate or a subscription is fetched from. */
export function isSnsUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' && SNS_HOST.test(parsed.hostname) && parsed.port === '';
  } catch {
    return false;
  }
}

/** Whether a URL is on this machine (answered with the test certificate, never fetched). */
export function isLoopbackUrl(url: string): boolean {
  try {
    return LOOPBACK.has(new URL(url).hostname);
  } catch {
    return false;
  }
}

/** The body as an SNS message, or a SnsFormatError naming what is missing. */
export function snsMessageOf(body: unknown): SnsMessage {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new SnsFormatError('the body must be an Amazon SNS message (a JSON object)');
  const m = body as Record<string, unknown>;
  if (typeof m.Type !== 'string' || !TYPES.includes(m.Type))
    throw new SnsFormatError(`Type must be one of ${TYPES.join(', ')}`);
  const required = ['MessageId', 'TopicArn', 'Message', 'Timestamp', 'Signature', 'SigningCertURL'];
  if (m.Type !== 'Notification') required.push('SubscribeURL', 'Token');
  for (const field of required)
    if (typeof m[field] !== 'string' || m[field] === '') throw new SnsFormatError(`${field} is required`);
  if (m.Subject !== undefined && typeof m.Subject !== 'string')
    throw new SnsFormatError('Subject must be a string');
  if (m.SignatureVersion !== '1' && m.SignatureVersion !== '2')
    throw new SnsSignatureError('SignatureVersion must be "1" (SHA1) or "2" (SHA256)');
  return m as unknown as SnsMessage;
}

export interface SnsVerifierOptions {
  /**
   * POSTHORN_SNS_TEST_CERT's certificate (PEM): a SigningCertURL on this machine is answered with
   * it, for tests that sign their own notifications. Unset: only SNS's hosts are trusted.
   */
  testCertPem?: string;
}

/** The public key of a certificate, refused when the certificate is not valid today. */
function keyOf(pem: string): KeyObject {
  const cert = new X509Certificate(pem);
  const now = Date.now();
  if (now < Date.parse(cert.validFrom) || now > Date.parse(cert.validTo))
    throw new SnsSignatureError('the signing certificate is not valid today');
  return createPublicKey(cert.publicKey.export({ type: 'spki', format: 'pem' }));
}

/** Fetches SNS's signing certificate: https, SNS's host, no redirect, a few kilobytes at most. */
async function fetchCertificate(url: string): Promise<string> {
  const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(10_000) });
  if (!res.ok)
    throw new SnsSignatureError(`the signing certificate could not be fetched (HTTP ${res.status})`);
  const text = await res.text();
  if (text.length > 64 * 1024) throw new SnsSignatureError('the signing certificate is too large');
  return text;
}

/**
 * Checks SNS messages' signatures. The signing certificate is fetched from SigningCertURL only
 * when it is https on SNS's own host (sns.<region>.amazonaws.com), and kept (a few dozen at most);
 * with a test certificate, a URL on this machine is answered with it. Verifying also proves the
 * fields signed were not changed: the message, its id, topic, time and type.
 */
export function createSnsVerifier(opts: SnsVerifierOptions = {}) {
  const keys = new Map<string, Promise<KeyObject>>();
  const testKey = opts.testCertPem ? keyOf(opts.testCertPem) : undefined;

  function keyFor(url: string): Promise<KeyObject> {
    if (testKey && isLoopbackUrl(url)) return Promise.resolve(testKey);
    if (!isSnsUrl(url))
      return Promise.reject(
        new SnsSignatureError(
          'SigningCertURL must be an https URL on an SNS host (sns.<region>.amazonaws.com)',
        ),
      );
    let key = keys.get(url);
    if (!key) {
      key = fetchCertificate(url).then(keyOf);
      // a failed fetch is not kept: the next message tries again
      key.catch(() => keys.delete(url));
      if (keys.size >= 50) keys.delete(keys.keys().next().value as string);
      keys.set(url, key);
    }
    return key;
  }

  /** The body as a verified SNS message; a SnsFormatError or SnsSignatureError says why not. */
  return async function verifySnsMessage(body: unknown): Promise<SnsMessage> {
    const message = snsMessageOf(body);
    let key: KeyObject;
    try {
      key = await keyFor(message.SigningCertURL);
    } catch (err) {
      if (err instanceof SnsSignatureError) throw err;
      throw new SnsSignatureError(`the signing certificate is unusable: ${(err as Error).message}`);
    }
    const algorithm = message.SignatureVersion === '1' ? 'RSA-SHA1' : 'RSA-SHA256';
    const signed = verify(
      algorithm,
      Buffer.from(snsStringToSign(message), 'utf8'),
      key,
      Buffer.from(message.Signature, 'base64'),
    );
    if (!signed) throw new SnsSignatureError('the signature does not match the message');
    return message;
  };
}

export type SnsVerifier = ReturnType<typeof createSnsVerifier>;
