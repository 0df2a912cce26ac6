import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type MailReport, parseMailReport } from '../../src/mail/reports.ts';

type Bounce = Extract<MailReport, { kind: 'bounce' }>;
type Complaint = Extract<MailReport, { kind: 'complaint' }>;

const FIXTURES = new URL('../fixtures/reports/', import.meta.url);
const fixture = (name: string) => readFileSync(new URL(`../fixtures/reports/${name}.eml`, import.meta.url));

async function bounce(raw: Buffer | string): Promise<Bounce> {
  const report = await parseMailReport(raw);
  if (report?.kind !== 'bounce') throw new Error(`expected a bounce, got ${JSON.stringify(report)}`);
  return report;
}
async function complaint(raw: Buffer | string): Promise<Complaint> {
  const report = await parseMailReport(raw);
  if (report?.kind !== 'complaint') throw new Error(`expected a complaint, got ${JSON.stringify(report)}`);
  return report;
}

/** A minimal DSN around the given delivery-status body (and optional extra parts), CRLF line ends. */
function dsn(deliveryStatus: string[], opts: { type?: string; extra?: string[] } = {}): string {
  return [
    'From: MAILER-DAEMON@mx.example.net (Mail Delivery System)',
    'To: bounces+0b6d7c1e4c7a4f8e9a613f0a2b1c9d11a1b2c3d4e5@bounces.example.com',
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="=_b"',
    '',
    '--=_b',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'Delivery failed.',
    '--=_b',
    `Content-Type: ${opts.type ?? 'message/delivery-status'}`,
    '',
    ...deliveryStatus,
    ...(opts.extra ?? []),
    '--=_b--',
    '',
  ].join('\r\n');
}

describe('delivery status notifications (RFC 3464)', () => {
  it('a Postfix hard bounce 5.1.1 with the original attached as message/rfc822', async () => {
    const r = await bounce(fixture('hard-bounce-5.1.1'));
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
    expect(r.original).toMatchObject({
      messageId: '<0b6d7c1e-4c7a-4f8e-9a61-3f0a2b1c9d11@example.com>',
      returnPath: 'bounces+0b6d7c1e4c7a4f8e9a613f0a2b1c9d11a1b2c3d4e5@bounces.example.com',
      to: 'nobody@example.net',
    });
    expect(r.original?.headers['x-posthorn-project']).toBe('5f1e2d3c-4b5a-4697-8877-665544332211');
    // folded header of the returned message, unfolded
    expect(r.original?.headers['received']).toBe(
      'from posthorn.example.com (posthorn.example.com [198.51.100.7]) by mx1.example.net (Postfix) ' +
        'with ESMTPS id 4XkQ2m1Zx9z9sPq for <nobody@example.net>; Sun, 22 Nov 2026 09:14:02 +0000 (UTC)',
    );
  });

  it('a soft bounce 4.2.2 (delayed, mailbox full) with text/rfc822-headers', async () => {
    const r = await bounce(fixture('soft-bounce-4.2.2'));
    expect(r.reportingMta).toBe('relay.example.org');
    expect(r.recipients).toEqual([
      {
        recipient: 'full@example.org',
        action: 'delayed',
        status: '4.2.2',
        bounceType: 'soft',
        diagnostic: '452 4.2.2 <full@example.org>: Mailbox full',
        remoteMta: 'mx.example.org',
      },
    ]);
    expect(r.original).toMatchObject({
      messageId: '<7a0c2b9e-1d3f-4a5b-8c6d-7e8f9a0b1c2d@example.com>',
      returnPath: 'bounces+7a0c2b9e1d3f4a5b8c6d7e8f9a0b1c2dffeeddccbb@bounces.example.com',
      to: 'Full Mailbox <full@example.org>',
    });
    expect(r.original?.headers['x-posthorn-project']).toBe('5f1e2d3c-4b5a-4697-8877-665544332211');
  });

  it('a Gmail "Address not found": nested related/alternative parts, a long folded diagnostic', async () => {
    const r = await bounce(fixture('gmail-bounce'));
    expect(r.reportingMta).toBe('googlemail.com');
    expect(r.recipients).toEqual([
      {
        recipient: 'no.such.user.4711@gmail.com',
        action: 'failed',
        status: '5.1.1',
        bounceType: 'hard',
        diagnostic:
          "550-5.1.1 The email account that you tried to reach does not exist. Please try 550-5.1.1 double-checking the recipient's email address for typos or 550-5.1.1 unnecessary spaces. For more information, go to 550 5.1.1  https://support.google.com/mail/?p=NoSuchUser a640c23a62f3a-b7f1c2d3e4f5a6b7sor1234567.9 - gsmtp",
        // the comment "(2607:…, the server for the domain gmail.com.)" and the root dot are dropped
        remoteMta: 'gmail-smtp-in.l.google.com',
      },
    ]);
    expect(r.original).toMatchObject({
      messageId: '<3c9e5f10-a2b4-4c6d-8e0f-1a2b3c4d5e6f@example.com>',
      returnPath: 'bounces+3c9e5f10a2b44c6d8e0f1a2b3c4d5e6f0123456789@bounces.example.com',
    });
    expect(r.original?.headers['x-posthorn-project']).toBe('1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d');
  });

  it('a Microsoft 365 / Outlook.com NDR (5.1.10 RecipientNotFound, CRLF, text/rfc822-headers)', async () => {
    const raw = fixture('microsoft-bounce');
    expect(raw.includes('\r\n')).toBe(true);
    const r = await bounce(raw);
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
    expect(r.original).toMatchObject({
      messageId: '<9d8c7b6a-5f4e-4d3c-ab1a-0f9e8d7c6b5a@example.com>',
      // Exchange writes the returned Return-Path without angle brackets
      returnPath: 'bounces+9d8c7b6a5f4e4d3cab1a0f9e8d7c6b5a99aa88bb77@bounces.example.com',
      to: '<ghost@contoso-example.com>',
    });
    expect(r.original?.headers['x-posthorn-project']).toBe('5f1e2d3c-4b5a-4697-8877-665544332211');
  });

  it('unfolds a Diagnostic-Code folded over several lines (tabs and spaces)', async () => {
    const r = await bounce(
      dsn([
        'Reporting-MTA: dns; mx.example.net',
        '',
        'Final-Recipient: rfc822; Folded.User@Example.NET',
        'Action: failed',
        'Status: 5.7.1',
        'Diagnostic-Code: smtp; 550 5.7.1 Service unavailable, Client host',
        '\t[198.51.100.7] blocked using zen.spamhaus.org;',
        '    https://www.spamhaus.org/query/ip/198.51.100.7',
        '',
      ]),
    );
    expect(r.recipients).toEqual([
      {
        recipient: 'folded.user@example.net',
        action: 'failed',
        status: '5.7.1',
        bounceType: 'hard',
        diagnostic:
          '550 5.7.1 Service unavailable, Client host [198.51.100.7] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/198.51.100.7',
        remoteMta: null,
      },
    ]);
  });

  it('two recipients: one failed 5.x.x (hard), one delayed 4.x.x (soft)', async () => {
    const r = await bounce(
      dsn([
        'Reporting-MTA: dns; mx.example.net',
        'Arrival-Date: Sun, 22 Nov 2026 09:14:02 +0000',
        '',
        'Final-Recipient: rfc822; a@example.net',
        'Action: failed',
        'Status: 5.2.1',
        'Remote-MTA: dns; mx.a.example.net',
        'Diagnostic-Code: smtp; 550 5.2.1 mailbox disabled',
        '',
        'Original-Recipient: rfc822; B@example.net',
        'Final-Recipient: rfc822; b@example.net',
        'Action: delayed',
        'Status: 4.4.7',
        'Diagnostic-Code: smtp; 421 4.4.7 try again later',
        'Will-Retry-Until: Fri, 27 Nov 2026 09:14:02 +0000',
        '',
      ]),
    );
    expect(r.reportingMta).toBe('mx.example.net');
    expect(r.recipients.map((x) => [x.recipient, x.action, x.status, x.bounceType, x.diagnostic])).toEqual([
      ['a@example.net', 'failed', '5.2.1', 'hard', '550 5.2.1 mailbox disabled'],
      ['b@example.net', 'delayed', '4.4.7', 'soft', '421 4.4.7 try again later'],
    ]);
    expect(r.recipients[0].remoteMta).toBe('mx.a.example.net');
    expect(r.original).toBeNull();
  });

  it('a missing Status is derived from the Diagnostic-Code: its enhanced code, else its reply code', async () => {
    const derive = async (diagnostic: string, action = 'failed') =>
      (
        await bounce(
          dsn([
            'Reporting-MTA: dns; mx.example.net',
            '',
            'Final-Recipient: rfc822;<c@example.net>',
            `Action: ${action}`,
            `Diagnostic-Code: ${diagnostic}`,
            '',
          ]),
        )
      ).recipients[0];
    expect(await derive('smtp; 550 5.7.1 Message rejected as spam')).toMatchObject({
      recipient: 'c@example.net',
      status: '5.7.1',
      bounceType: 'hard',
      diagnostic: '550 5.7.1 Message rejected as spam',
    });
    expect(await derive('smtp; 550-5.1.1 No such user')).toMatchObject({ status: '5.1.1' });
    expect(await derive('smtp; 554 rejected by policy')).toMatchObject({
      status: '5.0.0',
      bounceType: 'hard',
    });
    // an IP address is not an enhanced status code
    expect(await derive('smtp; 554 connection from 10.4.3.2 refused')).toMatchObject({ status: '5.0.0' });
    expect(await derive('smtp; 451 greylisted, try later', 'delayed')).toMatchObject({
      status: '4.0.0',
      bounceType: 'soft',
    });
    // failed with a 4.x.x status (e.g. the queue lifetime expired) is not a hard bounce
    expect(await derive('smtp; 421 4.4.2 connection dropped')).toMatchObject({
      action: 'failed',
      status: '4.4.2',
      bounceType: 'soft',
    });
  });

  it('RFC 6533 message/global-delivery-status with message/global-headers', async () => {
    const r = await bounce(
      dsn(
        [
          'Reporting-MTA: dns; mx.example.jp',
          '',
          'Final-Recipient: rfc822; kunde@example.jp',
          'Action: failed',
          'Status: 5.1.1',
          'Diagnostic-Code: smtp; 550 5.1.1 ユーザーが見つかりません',
          '',
        ],
        {
          type: 'message/global-delivery-status',
          extra: [
            '--=_b',
            'Content-Type: message/global-headers',
            '',
            'Return-Path: <bounces+0b6d7c1e4c7a4f8e9a613f0a2b1c9d11a1b2c3d4e5@bounces.example.com>',
            'Message-ID: <0b6d7c1e-4c7a-4f8e-9a61-3f0a2b1c9d11@example.com>',
            'To: Jürgen <kunde@example.jp>',
            'Subject: Grüße',
            '',
          ],
        },
      ),
    );
    expect(r.recipients).toEqual([
      expect.objectContaining({
        recipient: 'kunde@example.jp',
        status: '5.1.1',
        bounceType: 'hard',
        diagnostic: '550 5.1.1 ユーザーが見つかりません',
      }),
    ]);
    expect(r.original).toMatchObject({
      messageId: '<0b6d7c1e-4c7a-4f8e-9a61-3f0a2b1c9d11@example.com>',
      to: 'Jürgen <kunde@example.jp>',
    });
  });

  it('takes the Message-ID from X-Original-Message-ID when the original is not returned', async () => {
    const r = await bounce(
      dsn([
        'Reporting-MTA: dns; googlemail.com',
        'X-Original-Message-ID: <3c9e5f10-a2b4-4c6d-8e0f-1a2b3c4d5e6f@example.com>',
        '',
        'Final-Recipient: rfc822; gone@gmail.com',
        'Action: failed',
        'Status: 5.1.1',
        '',
      ]),
    );
    expect(r.original).toEqual({
      messageId: '<3c9e5f10-a2b4-4c6d-8e0f-1a2b3c4d5e6f@example.com>',
      returnPath: null,
      to: null,
      headers: {},
    });
  });

  it('reads recipients when the per-message block is missing, and skips blocks without an address', async () => {
    const r = await bounce(
      dsn([
        'Final-Recipient: rfc822; first@example.net',
        'Action: failed',
        'Status: 5.1.1',
        '',
        'Final-Recipient: X-Unknown; not-an-address',
        'Action: failed',
        'Status: 5.1.1',
        '',
      ]),
    );
    expect(r.reportingMta).toBeNull();
    expect(r.recipients.map((x) => x.recipient)).toEqual(['first@example.net']);
  });

  it('recognises a report wrapped in multipart/mixed (a footer added on the way)', async () => {
    const inner = dsn([
      'Reporting-MTA: dns; mx',
      '',
      'Final-Recipient: rfc822; w@example.net',
      'Status: 5.1.1',
    ]);
    const [head, body] = inner.split(/\r\n\r\n([\s\S]*)/);
    const wrapped = [
      'From: MAILER-DAEMON@relay.example',
      'Content-Type: multipart/mixed; boundary="outer"',
      '',
      '--outer',
      head.split('\r\n').find((l) => l.startsWith('Content-Type')),
      '',
      body,
      '--outer',
      'Content-Type: text/plain',
      '',
      'Scanned by RelayAV.',
      '--outer--',
      '',
    ].join('\r\n');
    const r = await bounce(wrapped);
    expect(r.recipients).toMatchObject([
      { recipient: 'w@example.net', action: 'failed', bounceType: 'hard' },
    ]);
  });
});

describe('complaint reports (ARF, RFC 5965)', () => {
  it('an ARF abuse report with the original as message/rfc822 (inline)', async () => {
    const r = await complaint(fixture('arf-abuse'));
    expect(r).toMatchObject({
      kind: 'complaint',
      feedbackType: 'abuse',
      recipient: 'complainer@example.org',
      userAgent: 'SomeGenerator/1.0',
      sourceIp: '198.51.100.7',
      arrivalDate: 'Sun, 22 Nov 2026 15:38:55 +0000',
    });
    expect(r.original).toMatchObject({
      messageId: '<c4f1e2d3-b4a5-4c6d-9e8f-7a6b5c4d3e2f@example.com>',
      returnPath: 'bounces+c4f1e2d3b4a54c6d9e8f7a6b5c4d3e2f1f2e3d4c5b@bounces.example.com',
    });
    // all the returned headers, not just the ones mailparser would show of an inline message
    expect(r.original?.headers['x-posthorn-project']).toBe('5f1e2d3c-4b5a-4697-8877-665544332211');
    expect(r.original?.headers['x-posthorn-stream']).toBe('marketing');
  });

  it('a Microsoft JMRP report: no Original-Rcpt-To, redacted X-HmXmrOriginalRecipient → the original To', async () => {
    const r = await complaint(fixture('microsoft-jmrp-complaint'));
    expect(r).toMatchObject({
      feedbackType: 'abuse',
      recipient: 'reader.jmrp@hotmail.com',
      userAgent: 'Hotmail FBL',
      sourceIp: '198.51.100.7',
      arrivalDate: 'Sun, 22 Nov 2026 09:01:12 -0800',
    });
    expect(r.original).toMatchObject({
      messageId: '<e1d2c3b4-a596-4f8e-8d7c-6b5a4f3e2d1c@example.com>',
      returnPath: 'bounces+e1d2c3b4a5964f8e8d7c6b5a4f3e2d1c0a1b2c3d4e@bounces.example.com',
    });
    expect(r.original?.headers['x-posthorn-project']).toBe('5f1e2d3c-4b5a-4697-8877-665544332211');
  });

  it('a Yahoo CFL report: redacted Original-Rcpt-To, Received-Date instead of Arrival-Date', async () => {
    const r = await complaint(fixture('yahoo-complaint'));
    expect(r).toMatchObject({
      feedbackType: 'abuse',
      recipient: 'shopper_77@yahoo.com',
      userAgent: 'Yahoo!-Mail-Feedback/2.0',
      sourceIp: null,
      arrivalDate: 'Mon, 23 Nov 2026 08:10:02 +0000',
    });
    expect(r.original).toMatchObject({
      messageId: '<5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e@example.com>',
      returnPath: 'bounces+5b6c7d8e9f0a4b1c8d2e3f4a5b6c7d8e1122334455@bounces.example.com',
    });
    expect(r.original?.headers['x-posthorn-project']).toBe('5f1e2d3c-4b5a-4697-8877-665544332211');
  });

  it('an ARF report with text/rfc822-headers, an upper-case type and a redacted@ recipient', async () => {
    const raw = [
      'From: fbl@isp.example',
      'Content-Type: multipart/report; report-type=feedback-report; boundary=arf',
      '',
      '--arf',
      'Content-Type: text/plain',
      '',
      'This is an email abuse report.',
      '--arf',
      'Content-Type: message/feedback-report',
      '',
      'Feedback-Type: Fraud',
      'Version: 1',
      'Original-Rcpt-To: <redacted@isp.example>',
      '--arf',
      'Content-Type: text/rfc822-headers',
      '',
      'Message-ID: 6a1f0c2e-9b8d-4e7f-a6c5-b4d3e2f1a0b9@example.com',
      'To: victim@isp.example',
      '--arf--',
      '',
    ].join('\n');
    const r = await complaint(raw);
    expect(r).toMatchObject({ feedbackType: 'fraud', recipient: 'victim@isp.example', userAgent: null });
    // a Message-ID without angle brackets gets them
    expect(r.original?.messageId).toBe('<6a1f0c2e-9b8d-4e7f-a6c5-b4d3e2f1a0b9@example.com>');
    expect(r.original?.returnPath).toBeNull();
  });
});

describe('anything else', () => {
  it('an ordinary message that quotes a bounce is not a report', async () => {
    expect(await parseMailReport(fixture('plain-mail'))).toBeNull();
  });

  it('an ordinary message with a delivery-status file attached is not a report', async () => {
    const raw = [
      'From: alice@example.org',
      'Content-Type: multipart/mixed; boundary=m',
      '',
      '--m',
      'Content-Type: text/plain',
      '',
      'See the attached status file.',
      '--m',
      'Content-Type: message/delivery-status',
      'Content-Disposition: attachment; filename="status.dsn"',
      '',
      'Reporting-MTA: dns; mx',
      '',
      'Final-Recipient: rfc822; x@example.net',
      'Action: failed',
      'Status: 5.1.1',
      '--m--',
      '',
    ].join('\r\n');
    expect(await parseMailReport(raw)).toBeNull();
  });

  it('a truncated report with a broken boundary (garbage.eml) gives null, not an exception', async () => {
    expect(await parseMailReport(fixture('garbage'))).toBeNull();
  });

  it('never throws: empty, binary, huge header, and every truncation of every fixture', async () => {
    expect(await parseMailReport('')).toBeNull();
    expect(await parseMailReport(Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x0d, 0x0a]))).toBeNull();
    expect(await parseMailReport(`Subject: ${'x'.repeat(2 * 1024 * 1024)}\r\n\r\nbody`)).toBeNull();
    expect(await parseMailReport(dsn(['\u0000\u0001 : ;', ':', 'Status: 5.1.1']))).toEqual({
      kind: 'bounce',
      recipients: [],
      original: null,
      reportingMta: null,
    });
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.eml'));
    expect(files.length).toBeGreaterThanOrEqual(9);
    for (const file of files) {
      const raw = readFileSync(new URL(file, FIXTURES));
      for (let cut = 0; cut < raw.length; cut += 97) {
        const report = await parseMailReport(raw.subarray(0, cut));
        expect(report === null || report.kind === 'bounce' || report.kind === 'complaint').toBe(true);
      }
    }
  });

  it('a bounce cut off inside its Diagnostic-Code still yields what could be read', async () => {
    const raw = fixture('hard-bounce-5.1.1');
    // the last occurrence is in the delivery-status part (the first, in the human-readable one)
    const cut = raw.lastIndexOf('rejected: User unknown in virtual');
    const r = await bounce(raw.subarray(0, cut));
    expect(r.reportingMta).toBe('mx1.example.net');
    expect(r.recipients).toEqual([
      expect.objectContaining({
        recipient: 'nobody@example.net',
        status: '5.1.1',
        bounceType: 'hard',
        diagnostic: '550 5.1.1 <nobody@example.net>: Recipient address',
      }),
    ]);
    expect(r.original).toBeNull();
  });
});
