import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adoptWaitingSystemMail, SYSTEM_PROJECT_ID } from '../../src/domain/sending/system-mail.ts';
import { composeMessage } from '../../src/mail/compose.ts';
import { emailIdFromBounceAddress } from '../../src/mail/verp.ts';
import { authenticateAtReceiver, startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { countEmails, waitForSystemEmail } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { dsn } from '../helpers/reports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

let server: TestServer;
let dns: TestDnsServer;

const SHARED = 'posthorn.localhost';

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer(
    {
      POSTHORN_SMTP_PORT: '0',
      POSTHORN_MX_PORT: '0',
      POSTHORN_DNS_SERVERS: dns.address,
      // retries after 1 s instead of minutes, so the deferral tests finish quickly
      POSTHORN_RETRY_SCHEDULE: '1',
    },
    ['api', 'worker', 'smtp'],
  );
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

let counter = 0;
const address = (name: string) => `${name}-${++counter}-${Date.now().toString(36)}@example.com`;

/** Signs up with a fresh address; resolves once the code email has left, with its row and what the sink got. */
async function signupAndCapture(email = address('code')) {
  await server.signup({ email });
  const row = await waitForSystemEmail(server, email, 'sent');
  const message = await server.sink.waitFor((m) => m.parsed.messageId === row.message_id);
  return { email, row, message };
}

describe("the service's own mail takes the one send path", () => {
  it('a signup code is DKIM-signed by the shared domain and passes SPF and DMARC at a receiver', async () => {
    const { row, message } = await signupAndCapture();

    // publish what an operator publishes for the shared domain: its DKIM key, SPF and DMARC
    const key = await server.runtime.ctx.db
      .selectFrom('dkim_keys')
      .selectAll()
      .where('project_id', 'is', null)
      .where('domain', '=', SHARED)
      .executeTakeFirstOrThrow();
    const dkimValue = `v=DKIM1; k=rsa; p=${key.public_key}`;
    // one TXT string holds 255 characters at most: a 2048-bit key takes two
    dns.zone.set(`${key.selector}._domainkey.${SHARED}`, [
      { type: 'TXT', data: [dkimValue.slice(0, 255), dkimValue.slice(255)] },
    ]);
    dns.zone.set(SHARED, [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
    dns.zone.set(`_dmarc.${SHARED}`, [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);

    const auth = await authenticateAtReceiver(dns, message);
    expect(auth.dkim.results).toHaveLength(1);
    expect(auth.dkim.results[0].status.result).toBe('pass');
    expect(auth.dkim.results[0].signingDomain).toBe(SHARED);
    const spf = auth.spf as { status: { result: string }; domain: string };
    expect(spf.status.result).toBe('pass');
    expect(spf.domain).toBe(SHARED);
    expect((auth.dmarc as { status: { result: string } }).status.result).toBe('pass');

    // the body (it holds the code) is not kept once the message has left
    expect(row.text_body).toBeNull();
    expect(row.attempts).toBe(1);
  });

  it('a sign-in code is an email like any other: its row, its events and its outcome in the one event model', async () => {
    const account = await server.signupConfirmed();
    const asked = await server.call('POST', '/api/auth/login', { body: { email: account.account.email } });
    expect(asked.status).toBe(200);
    const row = await eventually(async () => {
      const sent = await waitForSystemEmail(server, account.account.email, 'sent');
      if (!/login code/i.test(sent.subject)) throw new Error(`newest is ${sent.subject}`);
      return sent;
    });
    const message = await server.sink.waitFor((m) => m.parsed.messageId === row.message_id);
    expect(row).toMatchObject({ stream: 'system', project_id: SYSTEM_PROJECT_ID, attempts: 1 });
    const events = await server.runtime.ctx.db
      .selectFrom('email_events')
      .select(['type', 'recipient', 'project_id', 'detail'])
      .where('email_id', '=', row.id)
      .orderBy('id')
      .execute();
    // the same events a project's transactional email gets: queued, then the relay's answer
    expect(events.map((e) => [e.type, e.recipient, e.project_id])).toEqual([
      ['queued', null, SYSTEM_PROJECT_ID],
      ['sent', account.account.email, SYSTEM_PROJECT_ID],
    ]);
    expect((events[1].detail as { response: string }).response).toMatch(/^250/);
    expect(message.parsed.subject).toBe(row.subject);
  });

  it('carries the system stream headers, signed, and a stable Message-ID', async () => {
    const { row, message } = await signupAndCapture();
    const headers = message.parsed.headers;
    expect(headers.get('x-posthorn-stream')).toBe('system');
    expect(headers.get('x-posthorn-project')).toBe('system');
    expect(headers.get('feedback-id')).toBe('system:system:posthorn');
    expect(message.parsed.messageId).toBe(`<${row.id}@${SHARED}>`);
    const signature = /^DKIM-Signature:[\s\S]*?(?=\r\n\S)/m.exec(message.raw.toString('latin1'))?.[0] ?? '';
    const signed = /\bh=([^;]+)/.exec(signature.replace(/\r\n[ \t]/g, ''))?.[1].split(':') ?? [];
    expect(signed).toEqual(
      expect.arrayContaining(['feedback-id', 'x-posthorn-project', 'x-posthorn-stream']),
    );
  });

  it('leaves with a VERP return path on the shared domain; a bounce to it is taken by the MX and recorded', async () => {
    const { email, row, message } = await signupAndCapture(address('gone'));
    expect(message.from).toMatch(new RegExp(`^bounces\\+[0-9a-f]{42}@${SHARED.replace('.', '\\.')}$`));
    expect(emailIdFromBounceAddress(server.runtime.ctx.secrets.hash, message.from)).toBe(row.id);

    const res = await deliverToMx(
      server,
      { from: '', to: [message.from] },
      dsn({
        recipient: email,
        status: '5.1.1',
        diagnostic: `550 5.1.1 <${email}>: Recipient address rejected: User unknown`,
        original: message.raw.toString('latin1').split('\r\n\r\n')[0],
      }),
    );
    expect(res.ok, res.response).toBe(true);
    expect(res.response).toContain(`bounce for ${row.id}`);
    const bounced = await waitForSystemEmail(server, email, 'bounced');
    expect(bounced.id).toBe(row.id);
    // recorded like every message's bounce: on its timeline, in the service's own project
    const events = await server.runtime.ctx.db
      .selectFrom('email_events')
      .select(['type', 'recipient', 'detail'])
      .where('email_id', '=', row.id)
      .orderBy('id')
      .execute();
    expect(events.map((e) => e.type)).toEqual(['queued', 'sent', 'bounced']);
    expect(JSON.stringify(events[2].detail)).toContain('User unknown');
    const reports = await server.runtime.ctx.db
      .selectFrom('mail_reports')
      .select(['kind', 'project_id'])
      .where(sql<boolean>`detail->'original'->>'messageId' = ${row.message_id}`)
      .execute();
    expect(reports).toEqual([{ kind: 'bounce', project_id: SYSTEM_PROJECT_ID }]);
  });

  it('refuses a bounce to a forged or altered return path at RCPT', async () => {
    const { email, message } = await signupAndCapture();
    const [local, domain] = message.from.split('@');
    const flip = (c: string) => (c === '0' ? '1' : '0');
    const forgedChecksum = `${local.slice(0, -1)}${flip(local.slice(-1))}@${domain}`;
    const otherId = `bounces+${flip(local[8])}${local.slice(9)}@${domain}`;
    for (const to of [forgedChecksum, otherId]) {
      const res = await deliverToMx(
        server,
        { from: '', to: [to] },
        dsn({ recipient: email, status: '5.1.1', diagnostic: '550 5.1.1 unknown', original: 'Subject: x' }),
      );
      expect(res.ok).toBe(false);
      expect(res.code).toBe(550);
    }
    const sent = await waitForSystemEmail(server, email, 'sent');
    const { rows: bounces } =
      await sql`select 1 from email_events where email_id = ${sent.id} and type = 'bounced'`.execute(
        server.runtime.ctx.db,
      );
    expect(bounces).toEqual([]);
  });

  it('a temporary relay failure is deferred and retried on the delivery schedule, then sent once', async () => {
    const email = address('busy');
    let refusals = 0;
    server.sink.onRecipient = (to) =>
      to === email && refusals++ === 0 ? { code: 451, message: '4.3.0 try again later' } : undefined;
    await server.signup({ email });
    const deferred = await waitForSystemEmail(server, email, 'deferred');
    expect(deferred.attempts).toBe(1);
    expect(deferred.last_response).toMatch(/451/);
    // the next try is the schedule's first step (1 s), queued as our own job, not the worker's backoff
    const delay = (deferred.next_attempt_at as Date).getTime() - Date.now();
    expect(delay).toBeGreaterThan(0);
    expect(delay).toBeLessThanOrEqual(1_000);
    const { rows: jobs } = await sql<{ run_at: Date }>`
      select run_at from graphile_worker._private_jobs where key = ${`email:${deferred.id}`}`.execute(
      server.runtime.ctx.db,
    );
    expect(jobs).toHaveLength(1);
    expect(jobs[0].run_at.getTime()).toBe((deferred.next_attempt_at as Date).getTime());

    const sent = await waitForSystemEmail(server, email, 'sent');
    server.sink.onRecipient = undefined;
    expect(sent.attempts).toBe(2);
    expect(sent.text_body).toBeNull();
    expect(server.sink.messages.filter((m) => m.parsed.messageId === sent.message_id)).toHaveLength(1);
  });

  it('is failed once still deferred past POSTHORN_RETRY_FOR_HOURS (72 by default)', async () => {
    const email = address('down');
    server.sink.onRecipient = (to) =>
      to === email ? { code: 421, message: '4.4.2 service not available' } : undefined;
    await server.signup({ email });
    const deferred = await waitForSystemEmail(server, email, 'deferred');
    // as if it had been queued three days ago: the next deferral would pass the limit
    await server.runtime.ctx.db
      .updateTable('emails')
      .set({ created_at: new Date(Date.now() - 73 * 3_600_000) })
      .where('id', '=', deferred.id)
      .execute();
    const failed = await waitForSystemEmail(server, email, 'failed');
    server.sink.onRecipient = undefined;
    expect(failed.attempts).toBe(2);
    expect(failed.last_response).toMatch(/421/);
    expect(failed.text_body).toBeNull();
    expect(failed.next_attempt_at).toBeNull();
  });

  it('a permanent relay refusal (5xx) bounces it at once, without retries', async () => {
    const email = address('refused');
    server.sink.onRecipient = (to) =>
      to === email ? { code: 550, message: '5.1.1 no such user' } : undefined;
    await server.signup({ email });
    const bounced = await waitForSystemEmail(server, email, 'bounced');
    server.sink.onRecipient = undefined;
    expect(bounced.attempts).toBe(1);
    expect(bounced.last_response).toMatch(/550/);
    expect(bounced.text_body).toBeNull();
  });

  it('what an earlier version left waiting in its outbox (system_emails) leaves by the one path, same id and Message-ID', async () => {
    const email = address('upgrade');
    const id = randomUUID();
    const messageId = `<${id}@${SHARED}>`;
    const raw = await composeMessage(
      {
        messageId,
        from: 'Posthorn <no-reply@posthorn.localhost>',
        to: [email],
        cc: [],
        replyTo: [],
        subject: 'Your Posthorn code: QWERTY',
        html: null,
        text: 'Your code is QWERTY.',
        headers: {},
        attachments: [],
        projectId: 'system',
        stream: 'system',
      },
      null,
    );
    const { db } = server.runtime.ctx;
    await db
      .insertInto('system_emails')
      .values({ id, message_id: messageId, to_address: email, subject: 'Your Posthorn code: QWERTY', raw })
      .execute();
    expect(await adoptWaitingSystemMail(server.runtime.ctx)).toBe(1);
    const sent = await waitForSystemEmail(server, email, 'sent');
    expect(sent).toMatchObject({ id, message_id: messageId });
    const message = await server.sink.waitFor((m) => m.parsed.messageId === messageId);
    expect(message.parsed.text?.trim()).toBe('Your code is QWERTY.');
    expect(await db.selectFrom('system_emails').select('id').where('id', '=', id).execute()).toEqual([]);
    // once moved, a second start finds nothing
    expect(await adoptWaitingSystemMail(server.runtime.ctx)).toBe(0);
  });

  it("is not counted as the project's usage", async () => {
    const account = await server.signupConfirmed();
    await waitForSystemEmail(server, account.account.email, 'sent');
    const limits = await server.call('GET', '/v1/limits', { key: account.project_key.key });
    expect(limits.status).toBe(200);
    expect(limits.body.sending.this_month).toBe(0);
    expect(await countEmails(server)).toBe(0);
  });
});
