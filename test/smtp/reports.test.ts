import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { dsn } from '../helpers/reports.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

let server: TestServer;
let dns: TestDnsServer;
let account: SignupResult;
let key: string;

const CRLF = '\r\n';

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer(
    { POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0', POSTHORN_DNS_SERVERS: dns.address },
    ['api', 'worker', 'smtp'],
  );
  account = await server.signupConfirmed();
  key = account.project_key.key;
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

/** Sends a message through the API and returns it as sent, with the VERP return path it went out with. */
async function sendAndCapture(to: string) {
  const res = await server.call('POST', '/v1/emails', {
    key,
    body: { from: FROM, to, subject: `For ${to}`, text: 'Hello' },
  });
  expect(res.status).toBe(200);
  const email = await waitForStatus(server, key, res.body.id, 'sent');
  const sent = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
  return { email, returnPath: sent.from, rawHeaders: sent.raw.toString().split('\r\n\r\n')[0] };
}

function arf(opts: { recipient: string; original: string }) {
  return [
    'From: feedback@provider.example',
    'To: fbl@posthorn.localhost',
    'Subject: Abuse report',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="ARF"',
    '',
    '--ARF',
    'Content-Type: text/plain',
    '',
    'This is an email abuse report.',
    '',
    '--ARF',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: ProviderFBL/1.0',
    'Version: 1',
    `Original-Rcpt-To: ${opts.recipient}`,
    'Source-IP: 127.0.0.1',
    '',
    '--ARF',
    'Content-Type: message/rfc822',
    '',
    opts.original,
    '',
    'Hello',
    '',
    '--ARF--',
    '',
  ].join(CRLF);
}

async function suppression(email: string) {
  const list = await server.call('GET', '/v1/suppressions', { key });
  return list.body.data.find((s: { email: string }) => s.email === email);
}

describe('bounces and complaints come back to the MX', () => {
  it('a hard bounce (5.1.1) at the VERP address marks the email bounced and suppresses the recipient', async () => {
    const { email, returnPath, rawHeaders } = await sendAndCapture('gone@example.net');
    expect(returnPath).toMatch(/^bounces\+/);
    const res = await deliverToMx(
      server,
      { from: '', to: [returnPath] },
      dsn({
        recipient: 'gone@example.net',
        action: 'failed',
        status: '5.1.1',
        diagnostic: '550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown',
        original: rawHeaders,
      }),
    );
    expect(res.ok, res.response).toBe(true);
    const after = await waitForStatus(server, key, email.id, 'bounced');
    const event = after.events.find((e: { type: string }) => e.type === 'bounced');
    expect(event.recipient).toBe('gone@example.net');
    expect(event.detail).toMatchObject({ bounce_type: 'hard', status: '5.1.1', source: 'dsn' });
    expect(event.detail.diagnostic).toContain('User unknown');
    const entry = await suppression('gone@example.net');
    expect(entry).toMatchObject({ reason: 'hard_bounce', source_email_id: email.id });

    // the next send to that address is suppressed, not sent
    const next = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'gone@example.net', subject: 'Again', text: 'x' },
    });
    expect(next.body.status).toBe('suppressed');
  });

  it('a soft bounce (4.2.2) records a deferred event and suppresses nothing', async () => {
    const { email, returnPath, rawHeaders } = await sendAndCapture('full@example.net');
    const res = await deliverToMx(
      server,
      { from: '', to: [returnPath] },
      dsn({
        recipient: 'full@example.net',
        action: 'delayed',
        status: '4.2.2',
        diagnostic: '452 4.2.2 Mailbox full',
        original: rawHeaders,
      }),
    );
    expect(res.ok, res.response).toBe(true);
    const got = await eventually(
      async () => {
        const body = (await server.call('GET', `/v1/emails/${email.id}`, { key })).body;
        expect(body.events.map((e: { type: string }) => e.type)).toContain('deferred');
        return body;
      },
      { timeoutMs: 10_000, intervalMs: 100, message: 'the soft bounce was not recorded' },
    );
    const event = got.events.find((e: { type: string }) => e.type === 'deferred');
    expect(event.detail).toMatchObject({ bounce_type: 'soft', status: '4.2.2', source: 'dsn' });
    expect(got.status).toBe('sent');
    expect(await suppression('full@example.net')).toBeUndefined();
  });

  it('an ARF abuse report to the feedback address marks the email complained and suppresses the recipient', async () => {
    const { email, rawHeaders } = await sendAndCapture('angry@example.net');
    const res = await deliverToMx(
      server,
      { from: 'feedback@provider.example', to: ['fbl@posthorn.localhost'] },
      arf({ recipient: 'angry@example.net', original: rawHeaders }),
    );
    expect(res.ok, res.response).toBe(true);
    const after = await waitForStatus(server, key, email.id, 'complained');
    const event = after.events.find((e: { type: string }) => e.type === 'complained');
    expect(event).toMatchObject({ recipient: 'angry@example.net' });
    expect(event.detail).toMatchObject({ feedback_type: 'abuse', source: 'arf' });
    expect(await suppression('angry@example.net')).toMatchObject({
      reason: 'complaint',
      source_email_id: email.id,
    });
  });

  it('real-world reports (Gmail, Microsoft 365, Yahoo) about a sent message bounce it or mark it complained', async () => {
    const cases = [
      { fixture: 'gmail-bounce', to: 'gmail-gone@example.net', status: 'bounced', reason: 'hard_bounce' },
      { fixture: 'microsoft-bounce', to: 'ms-gone@example.net', status: 'bounced', reason: 'hard_bounce' },
      {
        fixture: 'yahoo-complaint',
        to: 'yahoo-angry@example.net',
        status: 'complained',
        reason: 'complaint',
      },
    ];
    for (const c of cases) {
      const { email, returnPath } = await sendAndCapture(c.to);
      // the provider's report, now about this message: its Message-ID and return path
      const raw = readFileSync(new URL(`../fixtures/reports/${c.fixture}.eml`, import.meta.url), 'utf8')
        .replace(/<[0-9a-f-]{36}@[a-z.]+>/g, email.message_id)
        .replace(/bounces\+[0-9a-f]{42}@[a-z.]+/g, returnPath);
      const to = c.status === 'bounced' ? returnPath : 'fbl@posthorn.localhost';
      const res = await deliverToMx(server, { from: '', to: [to] }, raw);
      expect(res.ok, `${c.fixture}: ${res.response}`).toBe(true);
      const after = await waitForStatus(server, key, email.id, c.status);
      expect(after.events.some((e: { type: string }) => e.type === c.status)).toBe(true);
      expect(await suppression(c.to), c.fixture).toMatchObject({
        reason: c.reason,
        source_email_id: email.id,
      });
    }
  });

  it('a forged or altered VERP address is refused at RCPT', async () => {
    const { returnPath } = await sendAndCapture('victim@example.net');
    const forged = returnPath.replace(/[0-9a-f](?=@)/, (d) => (d === '0' ? '1' : '0'));
    const res = await deliverToMx(
      server,
      { from: '', to: [forged] },
      dsn({
        recipient: 'victim@example.net',
        action: 'failed',
        status: '5.1.1',
        diagnostic: '550 x',
        original: '',
      }),
    );
    expect(res.code).toBe(550);
    expect(await suppression('victim@example.net')).toBeUndefined();
  });
});
