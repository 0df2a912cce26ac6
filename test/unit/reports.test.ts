import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type MailReport, parseMailReport } from '../../src/mail/reports.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/reports/${name}.eml`, import.meta.url));

async function bounce(name: string) {
  const report = await parseMailReport(fixture(name));
  if (report?.kind !== 'bounce') throw new Error(`${name}: expected a bounce, got ${JSON.stringify(report)}`);
  return report;
}
async function complaint(name: string) {
  const report = await parseMailReport(fixture(name));
  if (report?.kind !== 'complaint')
    throw new Error(`${name}: expected a complaint, got ${JSON.stringify(report)}`);
  return report;
}

describe('delivery status notifications (RFC 3464)', () => {
  it('a Postfix hard bounce 5.1.1 with the original attached', async () => {
    const r = await bounce('hard-bounce-5.1.1');
    expect(r.reportingMta).toBe('mx1.example.net');
    expect(r.recipients).toEqual([
      {
        recipient: 'nobody@example.net',
        action: 'failed',
        status: '5.1.1',
        bounceType: 'hard',
        diagnostic:
          '550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown in virtual mailbox table',
        remoteMta: 'mail.example.net',
      },
    ]);
    expect(r.original?.messageId).toBe('<0b6d7c1e-4c7a-4f8e-9a61-3f0a2b1c9d11@example.com>');
    expect(r.original?.returnPath).toBe(
      'bounces+0b6d7c1e4c7a4f8e9a613f0a2b1c9d11a1b2c3d4e5@bounces.example.com',
    );
    expect(r.original?.headers['x-posthorn-project']).toBe('5f1e2d3c-4b5a-4697-8877-665544332211');
  });

  it('a soft bounce 4.2.2 (delayed, mailbox full) with the original headers only', async () => {
    const r = await bounce('soft-bounce-4.2.2');
    expect(r.recipients).toHaveLength(1);
    expect(r.recipients[0]).toMatchObject({
      recipient: 'full@example.org',
      action: 'delayed',
      status: '4.2.2',
      bounceType: 'soft',
      diagnostic: '452 4.2.2 <full@example.org>: Mailbox full',
    });
    expect(r.original?.messageId).toBe('<7a0c2b9e-1d3f-4a5b-8c6d-7e8f9a0b1c2d@example.com>');
    expect(r.original?.to).toBe('Full Mailbox <full@example.org>');
  });

  it('a Gmail "Address not found" report: nested human parts, folded diagnostic', async () => {
    const r = await bounce('gmail-bounce');
    expect(r.reportingMta).toBe('googlemail.com');
    expect(r.recipients).toHaveLength(1);
    const [rcpt] = r.recipients;
    expect(rcpt).toMatchObject({
      recipient: 'no.such.user.4711@gmail.com',
      action: 'failed',
      status: '5.1.1',
      bounceType: 'hard',
    });
    expect(rcpt.diagnostic).toMatch(/^550-5\.1\.1 The email account that you tried to reach does not exist/);
    expect(rcpt.diagnostic).not.toMatch(/\n/);
    expect(rcpt.remoteMta).toMatch(/^gmail-smtp-in\.l\.google\.com\./);
    expect(r.original?.messageId).toBe('<3c9e5f10-a2b4-4c6d-8e0f-1a2b3c4d5e6f@posthorn.example>');
  });

  it('a Microsoft 365 / Outlook.com NDR (5.1.10 RecipientNotFound)', async () => {
    const r = await bounce('microsoft-bounce');
    expect(r.reportingMta).toBe('AM9PR04MB8227.eurprd04.prod.outlook.com');
    expect(r.recipients).toEqual([
      {
        recipient: 'ghost@contoso-example.com',
        action: 'failed',
        status: '5.1.10',
        bounceType: 'hard',
        diagnostic: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
        remoteMta: 'contoso-example-com.mail.protection.outlook.com',
      },
    ]);
    expect(r.original?.messageId).toBe('<9d8c7b6a-5f4e-4d3c-2b1a-0f9e8d7c6b5a@example.com>');
    expect(r.original?.returnPath).toBe(
      'bounces+9d8c7b6a5f4e4d3c2b1a0f9e8d7c6b5a99aa88bb77@bounces.example.com',
    );
  });

  const inline = (perRecipient: string) =>
    [
      'From: MAILER-DAEMON@mx.example',
      'Subject: report',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="X"',
      '',
      '--X',
      'Content-Type: text/plain',
      '',
      'Delivery failed.',
      '--X',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mx.example',
      '',
      perRecipient,
      '--X--',
      '',
    ].join('\r\n');

  it('two recipients: one failed 5.x.x, one delayed 4.x.x', async () => {
    const r = (await parseMailReport(
      inline(
        [
          'Final-Recipient: rfc822; a@example.net',
          'Action: failed',
          'Status: 5.2.1',
          'Diagnostic-Code: smtp; 550 5.2.1 mailbox disabled',
          '',
          'Final-Recipient: rfc822; b@example.net',
          'Action: delayed',
          'Status: 4.4.7',
          'Diagnostic-Code: smtp; 421 4.4.7 try again later',
          '',
        ].join('\r\n'),
      ),
    )) as Extract<MailReport, { kind: 'bounce' }>;
    expect(r.recipients.map((x) => [x.recipient, x.status, x.bounceType])).toEqual([
      ['a@example.net', '5.2.1', 'hard'],
      ['b@example.net', '4.4.7', 'soft'],
    ]);
    expect(r.original).toBeNull();
  });

  it('a missing Status is derived from the Diagnostic-Code (enhanced, else basic code)', async () => {
    const enhanced = (await parseMailReport(
      inline(
        [
          'Final-Recipient: rfc822;<c@example.net>',
          'Action: failed',
          'Diagnostic-Code: smtp; 550 5.7.1 Message rejected',
          '  as spam',
          '',
        ].join('\r\n'),
      ),
    )) as Extract<MailReport, { kind: 'bounce' }>;
    expect(enhanced.recipients[0]).toMatchObject({
      recipient: 'c@example.net',
      status: '5.7.1',
      bounceType: 'hard',
      diagnostic: '550 5.7.1 Message rejected as spam',
    });
    const basic = (await parseMailReport(
      inline(
        [
          'Final-Recipient: rfc822; d@example.net',
          'Action: failed',
          'Diagnostic-Code: smtp; 554 no',
          '',
        ].join('\r\n'),
      ),
    )) as Extract<MailReport, { kind: 'bounce' }>;
    expect(basic.recipients[0]).toMatchObject({ status: '5.0.0', bounceType: 'hard' });
  });
});

describe('complaint reports (ARF, RFC 5965)', () => {
  it('an ARF abuse report', async () => {
    const r = await complaint('arf-abuse');
    expect(r).toMatchObject({
      feedbackType: 'abuse',
      recipient: 'complainer@example.org',
      userAgent: 'SomeGenerator/1.0',
      sourceIp: '198.51.100.7',
      arrivalDate: 'Sun, 22 Nov 2026 15:38:55 +0000',
    });
    expect(r.original?.messageId).toBe('<c4f1e2d3-b4a5-4c6d-9e8f-7a6b5c4d3e2f@example.com>');
    expect(r.original?.headers['x-posthorn-stream']).toBe('marketing');
  });

  it('a Microsoft JMRP report without Original-Rcpt-To takes the recipient from the original To', async () => {
    const r = await complaint('microsoft-jmrp-complaint');
    expect(r.feedbackType).toBe('abuse');
    expect(r.userAgent).toBe('Microsoft JMRP/1.0');
    expect(r.recipient).toBe('reader.jmrp@hotmail.com');
    expect(r.original?.messageId).toBe('<e1d2c3b4-a596-4f8e-8d7c-6b5a4f3e2d1c@example.com>');
    expect(r.original?.returnPath).toBe(
      'bounces+e1d2c3b4a5964f8e8d7c6b5a4f3e2d1c0a1b2c3d4e@bounces.example.com',
    );
  });
});

describe('anything else', () => {
  it('an ordinary message that quotes a bounce is not a report', async () => {
    expect(await parseMailReport(fixture('plain-mail'))).toBeNull();
  });

  it('a broken report does not throw', async () => {
    await expect(parseMailReport(fixture('garbage'))).resolves.not.toThrow();
    const r = await parseMailReport(fixture('garbage'));
    expect(r === null || (r.kind === 'bounce' && r.recipients.length === 0)).toBe(true);
    expect(await parseMailReport('')).toBeNull();
    expect(await parseMailReport(Buffer.from([0xff, 0xfe, 0x00, 0x01]))).toBeNull();
  });
});
