import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import {
  isSnsUrl,
  type SnsMessage,
  snsMessageOf,
  snsStringToSign,
} from '../../src/domain/feedback/sns-signature.ts';
import { createSnsSigner } from '../helpers/sns.ts';

const base = {
  MessageId: 'm-1',
  TopicArn: 'arn:aws:sns:eu-west-1:123456789012:posthorn',
  Message: 'line one\nline "two"',
  Timestamp: '2026-11-26T12:00:00.000Z',
  SignatureVersion: '2',
  Signature: 'c2ln',
  SigningCertURL: 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-1.pem',
} as const;

describe('the string SNS signs', () => {
  it('is each signed field of a notification as a name line and a value line, Subject only when present', () => {
    const message = { ...base, Type: 'Notification' } as SnsMessage;
    expect(snsStringToSign(message)).toBe(
      'Message\nline one\nline "two"\nMessageId\nm-1\nTimestamp\n2026-11-26T12:00:00.000Z\nTopicArn\narn:aws:sns:eu-west-1:123456789012:posthorn\nType\nNotification\n',
    );
    expect(snsStringToSign({ ...message, Subject: 'Hello' })).toBe(
      'Message\nline one\nline "two"\nMessageId\nm-1\nSubject\nHello\nTimestamp\n2026-11-26T12:00:00.000Z\nTopicArn\narn:aws:sns:eu-west-1:123456789012:posthorn\nType\nNotification\n',
    );
  });

  it('takes SubscribeURL and Token, and never Subject, for a subscription message', () => {
    const message = {
      ...base,
      Type: 'SubscriptionConfirmation',
      Subject: 'ignored',
      SubscribeURL: 'https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription',
      Token: 't',
    } as SnsMessage;
    expect(snsStringToSign(message)).toBe(
      'Message\nline one\nline "two"\nMessageId\nm-1\nSubscribeURL\nhttps://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription\nTimestamp\n2026-11-26T12:00:00.000Z\nToken\nt\nTopicArn\narn:aws:sns:eu-west-1:123456789012:posthorn\nType\nSubscriptionConfirmation\n',
    );
  });
});

describe("SNS's hosts", () => {
  it('are https on sns.<region>.amazonaws.com (or .com.cn), and nothing else', () => {
    expect(isSnsUrl('https://sns.eu-west-1.amazonaws.com/cert.pem')).toBe(true);
    expect(isSnsUrl('https://sns.cn-north-1.amazonaws.com.cn/cert.pem')).toBe(true);
    for (const region of ['us-east-1', 'ap-southeast-2', 'us-gov-west-1', 'il-central-1', 'ca-west-1'])
      expect(isSnsUrl(`https://sns.${region}.amazonaws.com/cert.pem`), region).toBe(true);
    for (const url of [
      // a region label, not another service's host under amazonaws.com (issue 47): S3 serves
      // anyone's files at sns.s3.amazonaws.com (a bucket named sns)
      'https://sns.s3.amazonaws.com/cert.pem',
      'https://sns.s3-website.amazonaws.com/cert.pem',
      'https://sns.s3.eu-west-1.amazonaws.com/cert.pem',
      'https://sns.execute-api.amazonaws.com/cert.pem',
      'https://sns.eu-west.amazonaws.com/cert.pem',
      'http://sns.eu-west-1.amazonaws.com/cert.pem',
      'https://sns.eu-west-1.amazonaws.com:8443/cert.pem',
      'https://sns.eu-west-1.amazonaws.com.attacker.example/cert.pem',
      'https://attacker.example/sns.eu-west-1.amazonaws.com/cert.pem',
      'https://s3.eu-west-1.amazonaws.com/cert.pem',
      'not a url',
    ])
      expect(isSnsUrl(url), url).toBe(false);
  });
});

describe('an SNS message', () => {
  it('names what is missing', () => {
    expect(() => snsMessageOf([])).toThrow(/a JSON object/);
    expect(() => snsMessageOf({ ...base, Type: 'Notification', MessageId: '' })).toThrow(
      'MessageId is required',
    );
    expect(() => snsMessageOf({ ...base, Type: 'SubscriptionConfirmation' })).toThrow(
      'SubscribeURL is required',
    );
    expect(snsMessageOf({ ...base, Type: 'Notification' }).MessageId).toBe('m-1');
  });
});

describe('POSTHORN_SNS_TEST_CERT', () => {
  it('is read at start as a PEM certificate, and a file that is none stops the start', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-sns-cert-'));
    const base = { POSTHORN_DATA_DIR: dir, POSTHORN_SECRET: 'x'.repeat(32) };
    try {
      expect(loadConfig(base).snsTestCert).toBeUndefined();
      const { certFile } = await createSnsSigner(dir);
      expect(loadConfig({ ...base, POSTHORN_SNS_TEST_CERT: certFile }).snsTestCert).toMatch(
        /^-----BEGIN CERTIFICATE-----/,
      );
      const bad = path.join(dir, 'bad.pem');
      writeFileSync(bad, 'not a certificate');
      expect(() => loadConfig({ ...base, POSTHORN_SNS_TEST_CERT: bad })).toThrow(
        `POSTHORN_SNS_TEST_CERT: ${bad} is not a PEM certificate`,
      );
      expect(() => loadConfig({ ...base, POSTHORN_SNS_TEST_CERT: path.join(dir, 'absent.pem') })).toThrow(
        /POSTHORN_SNS_TEST_CERT: cannot read/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
