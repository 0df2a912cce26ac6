import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyInProject } from '../../src/domain/keys/service.ts';
import { eventually } from '../helpers/eventually.ts';
import { verifiedBySvix } from '../helpers/resend-sdk.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { type ReceivedHook, startWebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * Issue 51's must-show: an endpoint made through the Resend door hears `contact.updated` and
 * `email.bounced` in Resend's shape, each verified by the SDK's `webhooks.verify` with only Svix's
 * headers (resend-door-behaviour.test.ts verifies email.sent and email.delivered so).
 */

let server: TestServer;
let account: SignupResult;
let resend: Resend;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1' }, ['api', 'worker']);
  account = await server.signupConfirmed();
  const created = await createKeyInProject(
    server.runtime.ctx,
    { accountId: account.account.id },
    account.project.id,
    { name: 'Resend SDK', scope: 'all_access' },
  );
  resend = new Resend(created.key as string, { baseUrl: `${server.url}/resend` });
});

afterAll(async () => {
  await receiver?.close();
  await server?.close();
});

const bySvix = (received: ReceivedHook, secret: string) => verifiedBySvix(resend, received, secret);

describe('a webhook made through the door', () => {
  it('hears contact.updated in Resend shape, verified with only Svix headers', async () => {
    const hook = await resend.webhooks.create({ endpoint: receiver.url, events: ['contact.updated'] });
    expect(hook.error).toBeNull();
    const secret = hook.data?.signing_secret as string;
    const made = await resend.contacts.create({ email: 'ada@readers.example', firstName: 'Ada' });
    expect(made.error).toBeNull();
    const updated = await resend.contacts.update({ id: made.data?.id as string, firstName: 'Ada Lovelace' });
    expect(updated.error).toBeNull();
    const received = await eventually(
      () => {
        const mine = receiver.hooks.filter((h: ReceivedHook) => h.type === 'contact.updated');
        expect(mine.length).toBeGreaterThan(0);
        return mine[mine.length - 1];
      },
      { timeoutMs: 30_000 },
    );
    expect(received.headers['svix-id']).toBeDefined();
    const verified = bySvix(received, secret);
    expect(verified).toMatchObject({
      type: 'contact.updated',
      data: {
        id: made.data?.id,
        email: 'ada@readers.example',
        first_name: 'Ada Lovelace',
        unsubscribed: false,
      },
    });
    expect(typeof (verified as { created_at: unknown }).created_at).toBe('string');
  });

  it('hears email.bounced in Resend shape, verified with only Svix headers', async () => {
    const hook = await resend.webhooks.create({ endpoint: receiver.url, events: ['email.bounced'] });
    expect(hook.error).toBeNull();
    const secret = hook.data?.signing_secret as string;
    const sent = await resend.emails.send({
      from: 'onboarding@posthorn.localhost',
      to: 'bounced@simulator.posthorn.test',
      subject: 'Refused',
      text: 'Hi.',
    });
    expect(sent.error).toBeNull();
    const received = await eventually(
      () => {
        const mine = receiver.hooks.filter(
          (h: ReceivedHook) => h.type === 'email.bounced' && h.data.email_id === sent.data?.id,
        );
        expect(mine).toHaveLength(1);
        return mine[0];
      },
      { timeoutMs: 30_000 },
    );
    const verified = bySvix(received, secret);
    expect(verified).toMatchObject({
      type: 'email.bounced',
      data: { email_id: sent.data?.id, to: ['bounced@simulator.posthorn.test'], subject: 'Refused' },
    });
  });
});
