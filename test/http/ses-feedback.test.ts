import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError, FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import {
  type SignupResult,
  signupConfirmedInDatabase,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { type SesLocal, startSes } from '../helpers/ses.ts';
import { createSnsSigner, type SnsSigner, sesMail, strangerKey } from '../helpers/sns.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-ses-feedback-'));

let ses: SesLocal;
let sns: SnsSigner;
let server: TestServer;
let account: SignupResult;
let key: string;
// the project's webhook endpoint and SNS's subscription endpoint, both on this machine
let receiver: Server;
const hooks: { type: string; data: { id: string; event: Record<string, unknown> } }[] = [];
const confirmations: string[] = [];

beforeAll(async () => {
  [ses, sns] = await Promise.all([startSes(), createSnsSigner(dir)]);
  receiver = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      if (req.method === 'GET') confirmations.push(req.url ?? '');
      else hooks.push(JSON.parse(raw));
      res.writeHead(req.url?.startsWith('/refuse') ? 500 : 200);
      res.end('<ConfirmSubscriptionResponse/>');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const file = path.join(dir, 'routes.json');
  writeFileSync(
    file,
    JSON.stringify({
      routes: {
        ses: {
          type: 'ses',
          region: 'eu-west-1',
          access_key_id: 'AKIDTEST',
          secret_access_key: 'secret',
          endpoint: ses.endpoint,
          configuration_set: 'posthorn-test',
        },
        dev: { type: 'mailbox' },
      },
      rules: [
        { match: { recipient_domain: 'ses.example.net' }, routes: ['ses'] },
        { match: {}, routes: ['dev'] },
      ],
    }),
  );
  server = await startTestServer({
    POSTHORN_ROUTES: file,
    POSTHORN_SMTP_RELAY: '',
    POSTHORN_SNS_TEST_CERT: sns.certFile,
    POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1',
  });
  account = await signupConfirmedInDatabase(server);
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  const hook = await server.call('POST', '/v1/webhooks', {
    key,
    body: {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      events: ['email.bounced', 'email.complained', 'email.delivered'],
    },
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
});
afterAll(async () => {
  await server?.close();
  await ses?.close();
  await new Promise((resolve) => receiver?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Sends one message through SES; answers the email as sent and the MessageId SES gave it. */
async function sendThroughSes(to: string) {
  const res = await server.call('POST', '/v1/emails', {
    key,
    body: { from: FROM, to, subject: `For ${to}`, text: 'Hello' },
  });
  expect(res.status).toBe(200);
  const email = await waitForStatus(server, key, res.body.id, 'sent');
  const messageId = email.events.find((e: { type: string }) => e.type === 'sent').detail.provider_message_id;
  expect(messageId).toMatch(/^ses-\d+$/);
  return { email, messageId: messageId as string };
}

/** POSTs an SNS message as SNS does: JSON with `Content-Type: text/plain`. */
const post = (message: unknown) =>
  server.call('POST', '/feedback/ses', {
    body: typeof message === 'string' ? message : JSON.stringify(message),
    headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': 'Notification' },
  });

async function suppression(email: string) {
  const list = await server.call('GET', '/v1/suppressions', { key });
  return list.body.data.find((s: { email: string }) => s.email === email);
}

const hook = (type: string, emailId: string) =>
  eventually(
    () => {
      const found = hooks.find((h) => h.type === type && h.data.id === emailId);
      if (!found) throw new Error(`webhooks so far: ${hooks.map((h) => h.type).join(', ')}`);
      return found;
    },
    { timeoutMs: 20_000, message: `no ${type} webhook for ${emailId}` },
  );

const feedbackRows = () =>
  server.runtime.ctx.db.selectFrom('provider_feedback').selectAll().orderBy('id').execute();

describe("SES's notifications by SNS at {public_url}/feedback/ses", () => {
  it('a Permanent Bounce marks the email bounced, suppresses the recipient and calls the webhook, as a DSN does', async () => {
    const { email, messageId } = await sendThroughSes('gone@ses.example.net');
    const notification = sns.notification({
      eventType: 'Bounce',
      bounce: {
        bounceType: 'Permanent',
        bounceSubType: 'General',
        bouncedRecipients: [
          {
            emailAddress: 'gone@ses.example.net',
            action: 'failed',
            status: '5.1.1',
            diagnosticCode:
              'smtp; 550 5.1.1 <gone@ses.example.net>: Recipient address rejected: User unknown',
          },
        ],
        timestamp: new Date().toISOString(),
        feedbackId: '0102-feedback',
        reportingMTA: 'dsn; a1-2.smtp-out.eu-west-1.amazonses.com',
      },
      mail: sesMail(messageId, email.id, ['gone@ses.example.net']),
    });
    const res = await post(notification);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      object: 'provider_feedback',
      provider: 'ses',
      kind: 'Bounce',
      outcome: 'applied',
      duplicate: false,
    });
    const after = await waitForStatus(server, key, email.id, 'bounced');
    const event = after.events.find((e: { type: string }) => e.type === 'bounced');
    expect(event.recipient).toBe('gone@ses.example.net');
    expect(event.detail).toMatchObject({
      bounce_type: 'hard',
      status: '5.1.1',
      source: 'ses',
      provider_message_id: messageId,
      bounce_subtype: 'General',
    });
    expect(event.detail.diagnostic).toContain('User unknown');
    expect(await suppression('gone@ses.example.net')).toMatchObject({
      reason: 'hard_bounce',
      source_email_id: email.id,
    });
    expect((await hook('email.bounced', email.id)).data.event).toMatchObject({
      type: 'bounced',
      bounce_type: 'hard',
    });
    // the next send to that address is suppressed, not sent
    const next = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'gone@ses.example.net', subject: 'Again', text: 'x' },
    });
    expect(next.body.status).toBe('suppressed');

    // SNS delivering the same notification again changes nothing
    const again = await post(notification);
    expect(again.body).toMatchObject({ outcome: 'applied', duplicate: true });
    const twice = (await server.call('GET', `/v1/emails/${email.id}`, { key })).body;
    expect(twice.events.filter((e: { type: string }) => e.type === 'bounced')).toHaveLength(1);
    expect((await feedbackRows()).filter((r) => r.notification_id === notification.MessageId)).toHaveLength(
      1,
    );
  });

  it('a Transient bounce (an identity notification) records a deferred event and suppresses nothing', async () => {
    const { email, messageId } = await sendThroughSes('full@ses.example.net');
    const res = await post(
      sns.notification({
        notificationType: 'Bounce',
        bounce: {
          bounceType: 'Transient',
          bounceSubType: 'MailboxFull',
          bouncedRecipients: [{ emailAddress: 'full@ses.example.net', status: '4.2.2' }],
        },
        mail: sesMail(messageId, email.id, ['full@ses.example.net']),
      }),
    );
    expect(res.body).toMatchObject({ kind: 'Bounce', outcome: 'applied' });
    const got = (await server.call('GET', `/v1/emails/${email.id}`, { key })).body;
    const event = got.events.find((e: { type: string }) => e.type === 'deferred');
    expect(event.detail).toMatchObject({ bounce_type: 'soft', status: '4.2.2', source: 'ses' });
    expect(got.status).toBe('sent');
    expect(await suppression('full@ses.example.net')).toBeUndefined();
  });

  it('a Complaint marks the email complained, suppresses the recipient and calls the webhook, as an ARF report does', async () => {
    const { email, messageId } = await sendThroughSes('angry@ses.example.net');
    const res = await post(
      sns.notification({
        eventType: 'Complaint',
        complaint: {
          complainedRecipients: [{ emailAddress: 'angry@ses.example.net' }],
          complaintFeedbackType: 'abuse',
          userAgent: 'Mozilla/5.0',
          feedbackId: '0102-complaint',
        },
        mail: sesMail(messageId, email.id, ['angry@ses.example.net']),
      }),
    );
    expect(res.body).toMatchObject({ kind: 'Complaint', outcome: 'applied' });
    const after = await waitForStatus(server, key, email.id, 'complained');
    const event = after.events.find((e: { type: string }) => e.type === 'complained');
    expect(event).toMatchObject({ recipient: 'angry@ses.example.net' });
    expect(event.detail).toMatchObject({
      feedback_type: 'abuse',
      source: 'ses',
      provider_message_id: messageId,
    });
    expect(await suppression('angry@ses.example.net')).toMatchObject({
      reason: 'complaint',
      source_email_id: email.id,
    });
    await hook('email.complained', email.id);
  });

  it('a Delivery (SignatureVersion 1) marks the email delivered and calls the webhook', async () => {
    const { email, messageId } = await sendThroughSes('happy@ses.example.net');
    const res = await post(
      sns.notification(
        {
          eventType: 'Delivery',
          delivery: {
            timestamp: new Date().toISOString(),
            processingTimeMillis: 546,
            recipients: ['happy@ses.example.net'],
            smtpResponse: '250 2.6.0 Message received',
            reportingMTA: 'a8-70.smtp-out.amazonses.com',
          },
          mail: sesMail(messageId, email.id, ['happy@ses.example.net']),
        },
        '1',
      ),
    );
    expect(res.body).toMatchObject({ kind: 'Delivery', outcome: 'applied' });
    const after = await waitForStatus(server, key, email.id, 'delivered');
    const event = after.events.find((e: { type: string }) => e.type === 'delivered');
    expect(event).toMatchObject({ recipient: 'happy@ses.example.net' });
    expect(event.detail).toMatchObject({ response: '250 2.6.0 Message received', source: 'ses' });
    await hook('email.delivered', email.id);
  });

  it('a Reject fails the email without blaming its recipient', async () => {
    const { email, messageId } = await sendThroughSes('virus@ses.example.net');
    await post(
      sns.notification({
        eventType: 'Reject',
        reject: { reason: 'Bad content' },
        mail: sesMail(messageId, email.id, ['virus@ses.example.net']),
      }),
    );
    const after = await waitForStatus(server, key, email.id, 'failed');
    expect(after.events.at(-1).detail).toMatchObject({ reason: 'SES rejected the message: Bad content' });
    expect(await suppression('virus@ses.example.net')).toBeUndefined();
  });
});

describe('what /feedback/ses refuses or keeps aside', () => {
  it('refuses a forged or altered notification with 403 and records nothing', async () => {
    const { email, messageId } = await sendThroughSes('target@ses.example.net');
    const event = {
      eventType: 'Complaint',
      complaint: { complainedRecipients: [{ emailAddress: 'target@ses.example.net' }] },
      mail: sesMail(messageId, email.id, ['target@ses.example.net']),
    };
    const before = (await feedbackRows()).length;
    const forged = sns.sign({ Type: 'Notification', Message: JSON.stringify(event) }, { key: strangerKey() });
    expectError(await post(forged), 403, /The SNS signature is not valid: the signature does not match/);
    // signed, then changed: another recipient, or another topic
    const signed = sns.notification({ ...event, eventType: 'Delivery' });
    expectError(await post({ ...signed, Message: JSON.stringify(event) }), 403, /does not match/);
    expectError(await post({ ...signed, TopicArn: `${signed.TopicArn}-other` }), 403, /does not match/);
    // a certificate anywhere but SNS's own host is never fetched
    const elsewhere = sns.sign({
      Type: 'Notification',
      Message: JSON.stringify(event),
      SigningCertURL: 'https://sns.eu-west-1.amazonaws.com.attacker.example/cert.pem',
    });
    expectError(await post(elsewhere), 403, /SigningCertURL must be an https URL on an SNS host/);
    expectError(await post({ ...signed, SignatureVersion: '3' }), 403, /SignatureVersion must be/);
    expectError(await post({ ...signed, Signature: undefined }), 400, /Signature is required/);
    expectError(await post('not json'), 400, /the body is not JSON/);
    expectError(await post({ ...signed, Type: 'Gossip' }), 400, /Type must be one of/);

    expect(await feedbackRows()).toHaveLength(before);
    const got = (await server.call('GET', `/v1/emails/${email.id}`, { key })).body;
    expect(got.status).toBe('sent');
    expect(got.events.map((e: { type: string }) => e.type)).toEqual(['queued', 'sent']);
    expect(await suppression('target@ses.example.net')).toBeUndefined();
  });

  it('keeps and counts a notification about no message of ours, and answers 200', async () => {
    const { email } = await sendThroughSes('tagged@ses.example.net');
    const unknown = sns.notification({
      eventType: 'Bounce',
      bounce: { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: 'who@example.org' }] },
      mail: sesMail('ses-000000001', '00000000-0000-4000-8000-000000000000', ['who@example.org']),
    });
    expect((await post(unknown)).body).toMatchObject({
      kind: 'Bounce',
      outcome: 'unmatched',
      duplicate: false,
    });
    // the email-id tag alone (anyone who got the message can copy it) does not match an email
    const byTagOnly = sns.notification({
      eventType: 'Complaint',
      complaint: { complainedRecipients: [{ emailAddress: 'tagged@ses.example.net' }] },
      mail: sesMail('ses-000000002', email.id, ['tagged@ses.example.net']),
    });
    expect((await post(byTagOnly)).body).toMatchObject({ outcome: 'unmatched' });
    expect((await server.call('GET', `/v1/emails/${email.id}`, { key })).body.status).toBe('sent');

    const rows = await feedbackRows();
    const kept = rows.find((r) => r.notification_id === unknown.MessageId);
    expect(kept).toMatchObject({
      provider: 'ses',
      type: 'Notification',
      kind: 'Bounce',
      outcome: 'unmatched',
      provider_message_id: 'ses-000000001',
      email_id: null,
    });
    expect(kept?.detail).toMatchObject({ Message: { eventType: 'Bounce' }, TopicArn: unknown.TopicArn });
    const metrics = await fetch(`${server.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(
      /posthorn_provider_feedback_total\{provider="ses",kind="Bounce",outcome="unmatched"\} 1/,
    );
    expect(metrics).toMatch(
      /posthorn_provider_feedback_total\{provider="ses",kind="Complaint",outcome="unmatched"\} 1/,
    );
  });

  it('confirms a subscription at its SubscribeURL, only on a trusted host', async () => {
    const port = (receiver.address() as AddressInfo).port;
    const subscription = (url: string) =>
      sns.sign({
        Type: 'SubscriptionConfirmation',
        Message: 'You have chosen to subscribe to the topic. To confirm, visit the SubscribeURL.',
        SubscribeURL: url,
        Token: 'token-1',
      });
    const confirm = subscription(`http://127.0.0.1:${port}/confirm?Action=ConfirmSubscription&Token=token-1`);
    const res = await post(confirm);
    expect(res.body).toMatchObject({ kind: null, outcome: 'confirmed', duplicate: false });
    expect(confirmations).toEqual(['/confirm?Action=ConfirmSubscription&Token=token-1']);

    // a SubscribeURL that is not SNS's is never fetched: kept as not confirmed
    const foreign = subscription('https://subscribe.attacker.example/confirm?Token=token-1');
    expect((await post(foreign)).body).toMatchObject({ outcome: 'not_confirmed' });
    expect(confirmations).toHaveLength(1);
    // SNS refusing the confirmation is a 502, nothing kept, so that SNS's retry confirms it
    const refused = subscription(`http://127.0.0.1:${port}/refuse?Token=token-1`);
    expectError(await post(refused), 502, /could not be confirmed at its SubscribeURL: .*HTTP 500/);

    const rows = await feedbackRows();
    expect(rows.find((r) => r.notification_id === confirm.MessageId)).toMatchObject({
      type: 'SubscriptionConfirmation',
      outcome: 'confirmed',
    });
    expect(rows.find((r) => r.notification_id === foreign.MessageId)).toMatchObject({
      outcome: 'not_confirmed',
    });
    expect(rows.find((r) => r.notification_id === refused.MessageId)).toBeUndefined();
  });
});
