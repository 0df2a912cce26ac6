import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSubmissionServer, SUBMISSION_USERNAME } from '../../src/smtp/submission.ts';
import { loadTlsPair } from '../../src/smtp/tls.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { RawSmtpSession, sharedDkimResolver, submit } from '../helpers/smtp-clients.ts';

let server: TestServer;
let dns: TestDnsServer;
let account: SignupResult;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer(
    {
      POSTHORN_SMTP_PORT: '0',
      POSTHORN_SMTP_TLS_PORT: '0',
      POSTHORN_MX_PORT: '0',
      POSTHORN_DNS_SERVERS: dns.address,
    },
    ['api', 'worker', 'smtp'],
  );
  account = await server.signupConfirmed();
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

const projectAuth = () => ({ user: SUBMISSION_USERNAME, pass: account.project_key.key });

async function emailOf(accepted: string) {
  const id = /queued as ([0-9a-f-]{36})/.exec(accepted)?.[1];
  expect(id, `reply names the email id: ${accepted}`).toBeTruthy();
  return id as string;
}

describe('SMTP submission with nodemailer as the client', () => {
  it('sends with a project key: the message arrives with both X-Posthorn headers and a valid DKIM signature', async () => {
    const attachment = randomBytes(5000);
    const res = await submit(server, projectAuth(), {
      from: FROM,
      to: 'Reader <reader@example.org>',
      cc: 'copy@example.org',
      bcc: 'hidden@example.org',
      subject: 'Over SMTP',
      text: 'Plain body',
      html: '<p>Hello over <b>SMTP</b></p>',
      headers: { 'X-Campaign-Ref': 'abc-123' },
      attachments: [{ filename: 'data.bin', content: attachment, contentType: 'application/octet-stream' }],
    });
    expect(res.ok, res.response).toBe(true);
    expect(res.response).toMatch(/^250 /);
    const id = await emailOf(res.response);
    const email = await waitForStatus(server, account.project_key.key, id, 'sent');
    expect(email.stream).toBe('transactional');
    expect(email.bcc).toEqual(['hidden@example.org']);

    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    expect(message.to.sort()).toEqual(['copy@example.org', 'hidden@example.org', 'reader@example.org']);
    expect(message.parsed.headers.get('x-posthorn-project')).toBe(account.project.id);
    expect(message.parsed.headers.get('x-posthorn-stream')).toBe('transactional');
    expect(message.parsed.headers.get('x-campaign-ref')).toBe('abc-123');
    expect(message.parsed.headers.has('bcc')).toBe(false);
    expect(message.parsed.subject).toBe('Over SMTP');
    expect(message.parsed.text?.trim()).toBe('Plain body');
    expect(message.parsed.html).toContain('Hello over <b>SMTP</b>');
    expect(message.parsed.attachments[0].filename).toBe('data.bin');
    expect(message.parsed.attachments[0].content.equals(attachment)).toBe(true);
    // the return path is a VERP bounce address naming this message
    expect(message.from).toMatch(/^bounces\+[0-9a-f]{42}@posthorn\.localhost$/);

    const verified = await dkimVerify(message.raw, { resolver: await sharedDkimResolver(server) });
    expect(verified.results[0].status.result).toBe('pass');
    expect(verified.results[0].signingDomain).toBe('posthorn.localhost');
  });

  it('sends with an all-access key when the username is the project id', async () => {
    const res = await submit(
      server,
      { user: account.project.id, pass: account.account_key.key },
      { from: FROM, to: 'all-access@example.org', subject: 'All access', text: 'Hi' },
    );
    expect(res.ok, res.response).toBe(true);
    const id = await emailOf(res.response);
    const email = await waitForStatus(server, account.project_key.key, id, 'sent');
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    expect(message.parsed.headers.get('x-posthorn-project')).toBe(account.project.id);
    expect(message.parsed.headers.get('x-posthorn-stream')).toBe('transactional');
  });

  it('sends over the implicit-TLS port too (POSTHORN_SMTP_TLS_PORT)', async () => {
    const port = server.runtime.smtp?.tlsPort;
    expect(port).toBeGreaterThan(0);
    const res = await submit(
      server,
      projectAuth(),
      { from: FROM, to: 'implicit-tls@example.org', subject: 'Implicit TLS', text: 'Hi' },
      { port: port as number, secure: true },
    );
    expect(res.ok, res.response).toBe(true);
    expect(res.response).toMatch(/queued as/);
  });

  it('refuses an all-access key whose username is not one of its projects (535)', async () => {
    const wrong = await submit(
      server,
      { user: 'posthorn', pass: account.account_key.key },
      { from: FROM, to: 'x@example.org', subject: 'x', text: 'x' },
    );
    expect(wrong.ok).toBe(false);
    expect(wrong.code).toBe(535);
    expect(wrong.response).toContain('username must be the id of the project');

    const other = await server.signupConfirmed();
    const foreign = await submit(
      server,
      { user: other.project.id, pass: account.account_key.key },
      { from: FROM, to: 'x@example.org', subject: 'x', text: 'x' },
    );
    expect(foreign.code).toBe(535);
  });

  it('refuses a wrong or revoked key at AUTH with 535, and a revoked key stops an open session', async () => {
    const bad = await submit(
      server,
      { user: 'posthorn', pass: 'ph_not_a_real_key' },
      { from: FROM, to: 'x@example.org', subject: 'x', text: 'x' },
    );
    expect(bad.code).toBe(535);

    const created = await server.call('POST', `/v1/projects/${account.project.id}/api-keys`, {
      key: account.account_key.key,
      body: { name: 'smtp key' },
    });
    expect(created.status).toBe(200);
    const smtpKey = created.body.key as string;
    const nodemailer = (await import('nodemailer')).default;
    // one pooled connection: AUTH once, then two messages over it with a revocation in between
    const pooled = nodemailer.createTransport({
      pool: true,
      maxConnections: 1,
      host: '127.0.0.1',
      port: server.runtime.smtp?.submissionPort,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
      auth: { user: 'posthorn', pass: smtpKey },
    });
    try {
      const first = await pooled.sendMail({ from: FROM, to: 'before@example.org', subject: 'a', text: 'a' });
      expect(first.response).toMatch(/^250 /);
      const revoked = await server.call('DELETE', `/v1/api-keys/${created.body.id}`, {
        key: account.account_key.key,
      });
      expect(revoked.status).toBe(204);
      const second = await pooled
        .sendMail({ from: FROM, to: 'after@example.org', subject: 'b', text: 'b' })
        .then(
          () => null,
          (err: { responseCode?: number; response?: string }) => err,
        );
      expect(second?.responseCode).toBe(535);
      expect(second?.response).toContain('revoked');
    } finally {
      pooled.close();
    }
    const again = await submit(
      server,
      { user: 'posthorn', pass: smtpKey },
      { from: FROM, to: 'x@example.org', subject: 'x', text: 'x' },
    );
    expect(again.code).toBe(535);
    expect(again.response).toContain('revoked');
  });

  it('never asks a client that skips STARTTLS for its key: no AUTH, and MAIL is refused with 530', async () => {
    const res = await submit(
      server,
      projectAuth(),
      { from: FROM, to: 'x@example.org', subject: 'x', text: 'x' },
      { ignoreTLS: true },
    );
    expect(res.ok).toBe(false);
    expect(res.code).toBe(530);
    expect(res.response).toContain('Authentication required');
  });

  it('refuses a message over the size limit with 552 and stores nothing', async () => {
    const before = await server.runtime.ctx.db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    const res = await submit(server, projectAuth(), {
      from: FROM,
      to: 'big@example.org',
      subject: 'Too big',
      text: 'see attachment',
      attachments: [{ filename: 'big.bin', content: Buffer.alloc(31 * 1024 * 1024, 7) }],
    });
    expect(res.ok).toBe(false);
    expect(res.code).toBe(552);
    const after = await server.runtime.ctx.db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  });

  it('refuses an unconfirmed account with 5xx and the reason', async () => {
    const fresh = await server.signup();
    const res = await submit(
      server,
      { user: 'posthorn', pass: fresh.project_key.key },
      { from: FROM, to: 'x@example.org', subject: 'x', text: 'x' },
    );
    expect(res.ok).toBe(false);
    expect(res.code).toBe(550);
    expect(res.response).toContain('account email is not confirmed');
  });

  it('refuses a from address on an unverified domain with 550 naming the domain', async () => {
    const res = await submit(server, projectAuth(), {
      from: 'someone@not-verified.example',
      to: 'x@example.org',
      subject: 'x',
      text: 'x',
    });
    expect(res.code).toBe(550);
    expect(res.response).toContain('not-verified.example');
  });

  it("stamps a Received header of its own (host, ESMTPSA, email id, date; no client address) and drops the client's", async () => {
    const res = await submit(
      server,
      projectAuth(),
      {
        from: FROM,
        to: 'traced@example.org',
        subject: 'Traced',
        text: 'Hi',
        headers: {
          Received: 'from forged.example ([203.0.113.9]) by relay.example with SMTP',
          'Disposition-Notification-To': 'receipts@example.org',
        },
      },
      { ehloName: 'laptop-of-the-sender.example' },
    );
    expect(res.ok, res.response).toBe(true);
    const id = await emailOf(res.response);
    const email = await waitForStatus(server, account.project_key.key, id, 'sent');
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    const received = message.parsed.headerLines.filter((h) => h.key === 'received').map((h) => h.line);
    expect(received).toHaveLength(1);
    const value = received[0].replace(/\r?\n[ \t]+/g, ' ');
    expect(value).toMatch(
      new RegExp(
        `^Received: by smtp\\.posthorn\\.localhost \\(Posthorn\\) with ESMTPSA id ${id}; \\w{3}, \\d{2} \\w{3} \\d{4} \\d{2}:\\d{2}:\\d{2} \\+0000$`,
      ),
    );
    const stamped = new Date(value.slice(value.indexOf(';') + 1)).getTime();
    expect(Math.abs(stamped - Date.parse(email.created_at))).toBeLessThan(60_000);
    // the client's address and the name it gave in EHLO stay private
    expect(value).not.toContain('127.0.0.1');
    expect(value).not.toContain('laptop-of-the-sender');
    expect(message.parsed.headers.has('disposition-notification-to')).toBe(false);
  });
});

describe('SMTP submission dialogue on a raw socket', () => {
  const port = () => server.runtime.smtp?.submissionPort as number;
  const keywords = (reply: { lines: string[] }) => reply.lines.slice(1);

  it("greets with the submission host's own name, not the MX's", async () => {
    const { session, greeting } = await RawSmtpSession.connect(port());
    try {
      expect(greeting.code).toBe(220);
      expect(greeting.lines[0]).toMatch(/^smtp\.posthorn\.localhost ESMTP /);
      const ehlo = await session.command('EHLO client.example');
      expect(ehlo.code).toBe(250);
      expect(ehlo.lines[0]).toMatch(/^smtp\.posthorn\.localhost /);
      expect([greeting.lines[0], ehlo.lines[0]].join(' ')).not.toContain('mx.posthorn.localhost');
    } finally {
      session.close();
    }
  });

  it('offers AUTH PLAIN LOGIN only after STARTTLS (SIZE both times), and answers MAIL without AUTH with 530', async () => {
    const { session } = await RawSmtpSession.connect(port());
    try {
      const before = await session.command('EHLO client.example');
      expect(before.code).toBe(250);
      expect(keywords(before)).toContain('STARTTLS');
      expect(keywords(before)).toContain('SIZE 41943040');
      expect(keywords(before).filter((k) => k.startsWith('AUTH'))).toEqual([]);
      // a client that tries anyway is not authenticated, and cannot send
      const early = await session.command(
        `AUTH PLAIN ${Buffer.from('\0posthorn\0ph_not_a_key').toString('base64')}`,
      );
      expect(early.code).toBeGreaterThanOrEqual(500);
      const mailBefore = await session.command('MAIL FROM:<onboarding@posthorn.localhost>');
      expect(mailBefore.code).toBe(530);

      expect((await session.startTls()).code).toBe(220);
      const after = await session.command('EHLO client.example');
      expect(after.code).toBe(250);
      expect(keywords(after)).toContain('AUTH PLAIN LOGIN');
      expect(keywords(after)).toContain('SIZE 41943040');
      expect(keywords(after)).not.toContain('STARTTLS');
      const mailAfter = await session.command('MAIL FROM:<onboarding@posthorn.localhost>');
      expect(mailAfter.code).toBe(530);
      const auth = await session.command(
        `AUTH PLAIN ${Buffer.from(`\0posthorn\0${account.project_key.key}`).toString('base64')}`,
      );
      expect(auth.code).toBe(235);
    } finally {
      session.close();
    }
  });

  it('with POSTHORN_SMTP_ALLOW_INSECURE_AUTH=1 (loopback testing) offers and accepts AUTH before STARTTLS', async () => {
    const { ctx } = server.runtime;
    const config = { ...ctx.config, smtpAllowInsecureAuth: true };
    const insecure = createSubmissionServer({
      ctx: { ...ctx, config },
      log: pino({ level: 'silent' }),
      tls: await loadTlsPair(config),
    });
    await new Promise<void>((resolve) => insecure.listen(0, '127.0.0.1', resolve));
    const { session } = await RawSmtpSession.connect((insecure.server.address() as AddressInfo).port);
    try {
      const ehlo = await session.command('EHLO client.example');
      expect(keywords(ehlo)).toContain('AUTH PLAIN LOGIN');
      expect(keywords(ehlo)).toContain('STARTTLS');
      const auth = await session.command(
        `AUTH PLAIN ${Buffer.from(`\0posthorn\0${account.project_key.key}`).toString('base64')}`,
      );
      expect(auth.code).toBe(235);
    } finally {
      session.close();
      await new Promise<void>((resolve) => insecure.close(() => resolve()));
    }
  });
});
