import { createSign, generateKeyPairSync, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import selfsigned from 'selfsigned';
import { type SnsMessage, snsStringToSign } from '../../src/domain/feedback/sns-signature.ts';

/** A signer of SNS messages: a key of its own and a self-signed certificate for it (POSTHORN_SNS_TEST_CERT). */
export interface SnsSigner {
  /** The certificate's PEM file, for POSTHORN_SNS_TEST_CERT. */
  certFile: string;
  /** The URL SNS's messages name as SigningCertURL: on this machine, so the test certificate answers it. */
  certUrl: string;
  /**
   * A signed SNS message of `fields` (SignatureVersion 2 unless said otherwise), signed with the
   * certificate's key or, to forge one, with `key`.
   */
  sign(
    fields: Partial<SnsMessage> & Pick<SnsMessage, 'Type' | 'Message'>,
    opts?: { version?: '1' | '2'; key?: string },
  ): SnsMessage;
  /** A signed Notification carrying an SES event. */
  notification(event: unknown, version?: '1' | '2'): SnsMessage;
}

export const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:posthorn-ses';

/** Makes a key and a self-signed certificate in `dir`, and signs SNS messages as SNS does. */
export async function createSnsSigner(dir: string): Promise<SnsSigner> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'sns.test.localhost' }], {
    keySize: 2048,
    algorithm: 'sha256',
  });
  const certFile = path.join(dir, 'sns-test-cert.pem');
  writeFileSync(certFile, pems.cert);
  const certUrl = 'https://127.0.0.1/SimpleNotificationService-test.pem';
  const sign: SnsSigner['sign'] = (fields, { version = '2', key = pems.private } = {}) => {
    const message = {
      MessageId: randomUUID(),
      TopicArn: TOPIC,
      Timestamp: new Date().toISOString(),
      SignatureVersion: version,
      SigningCertURL: certUrl,
      ...fields,
      Signature: '',
    } as SnsMessage;
    const signer = createSign(version === '1' ? 'RSA-SHA1' : 'RSA-SHA256');
    signer.update(snsStringToSign(message), 'utf8');
    message.Signature = signer.sign(key, 'base64');
    return message;
  };
  return {
    certFile,
    certUrl,
    sign,
    notification: (event, version) =>
      sign({ Type: 'Notification', Message: JSON.stringify(event) }, { version }),
  };
}

/** A key of nobody's certificate: what signs a forged notification. */
export function strangerKey(): string {
  return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;
}

/** The `mail` object of SES's events: its MessageId and tags (with the email id, as sent). */
export const sesMail = (messageId: string, emailId: string, destination: string[]) => ({
  timestamp: new Date().toISOString(),
  source: 'bounces@posthorn.localhost',
  messageId,
  destination,
  tags: { posthorn_email: [emailId], 'ses:configuration-set': ['posthorn-test'] },
});
