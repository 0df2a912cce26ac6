import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { FROM, sharedDkimResolver, waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let key: string;
beforeAll(async () => {
  // retries after 1 s instead of minutes, so the deferral tests finish quickly
  server = await startTestServer({ POSTHORN_RETRY_SCHEDULE: '1' });
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
});
afterAll(() => server?.close());

const send = (to: string | string[], subject = 'Pipeline') =>
  server.call('POST', '/v1/emails', {
    key,
    body: { from: FROM, to, subject, html: '<p>Hello from the pipeline</p>' },
  });

describe('DKIM', () => {
  it('signs every message so that an independent verifier passes it against the published key', async () => {
    const res = await send('dkim@example.org', 'Signed');
    const email = await waitForStatus(server, key, res.body.id, 'sent');
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    const { resolver, lookups, key: row } = await sharedDkimResolver(server);
    const verified = await dkimVerify(message.raw, { resolver });
    expect(verified.results[0].status.result).toBe('pass');
    expect(verified.results[0].signingDomain).toBe('posthorn.localhost');
    expect(lookups).toContain(`TXT ${row.selector}._domainkey.posthorn.localhost`);

    const tampered = Buffer.from(
      message.raw.toString('latin1').replace('Hello from the pipeline', 'Hello from a forger'),
      'latin1',
    );
    const failed = await dkimVerify(tampered, { resolver });
    expect(failed.results[0].status.result).not.toBe('pass');
  });
});

describe('next-hop failures', () => {
  it('a 451 defers the message and the retry delivers it once', async () => {
    let refusals = 0;
    server.sink.onRecipient = (address) => {
      if (address === 'busy@example.org' && refusals++ === 0)
        return { code: 451, message: '4.3.0 try again later' };
      return undefined;
    };
    const res = await send('busy@example.org', 'Deferred once');
    const email = await waitForStatus(server, key, res.body.id, 'sent');
    server.sink.onRecipient = undefined;
    const types = email.events.map((e: { type: string }) => e.type);
    expect(types).toEqual(['queued', 'deferred', 'sent']);
    expect(email.events[1].detail.response).toMatch(/451/);
    expect(email.attempts).toBe(2);
    expect(server.sink.messages.filter((m) => m.parsed.messageId === email.message_id)).toHaveLength(1);
  });

  it('a 550 bounces the message and suppresses the address for the next send', async () => {
    server.sink.onRecipient = (address) =>
      address === 'gone@example.org' ? { code: 550, message: '5.1.1 no such user' } : undefined;
    const res = await send('gone@example.org', 'Bounce');
    const email = await waitForStatus(server, key, res.body.id, 'bounced');
    server.sink.onRecipient = undefined;
    const bounce = email.events.find((e: { type: string }) => e.type === 'bounced');
    expect(bounce.detail.response).toMatch(/550/);
    expect(bounce.recipient).toBe('gone@example.org');
    const suppressions = await server.call('GET', '/v1/suppressions', { key });
    expect(suppressions.body.data).toContainEqual(
      expect.objectContaining({
        email: 'gone@example.org',
        reason: 'hard_bounce',
        source_email_id: email.id,
      }),
    );
    const again = await send('gone@example.org', 'Bounce again');
    expect(again.body.status).toBe('suppressed');
  });
});

describe('simulator addresses', () => {
  it.each([
    ['delivered@simulator.posthorn.test', 'delivered'],
    ['bounced@simulator.posthorn.test', 'bounced'],
    ['complained@simulator.posthorn.test', 'complained'],
  ])('%s ends as %s without leaving the machine', async (to, status) => {
    const before = server.sink.messages.length;
    const res = await send(to, `Simulated ${status}`);
    const email = await waitForStatus(server, key, res.body.id, status);
    expect(email.events.map((e: { type: string }) => e.type)).toContain(status);
    expect(server.sink.messages.slice(before).some((m) => m.to.includes(to))).toBe(false);
  });

  it('deferred@ is deferred once, then delivered on the retry', async () => {
    const res = await send('deferred@simulator.posthorn.test', 'Simulated deferral');
    const email = await waitForStatus(server, key, res.body.id, 'delivered');
    expect(email.events.map((e: { type: string }) => e.type)).toEqual(['queued', 'deferred', 'delivered']);
  });

  it('a simulated bounce is not added to the suppression list', async () => {
    const res = await send('bounced@simulator.posthorn.test', 'Second simulated bounce');
    expect(res.body.status).toBe('queued');
    await waitForStatus(server, key, res.body.id, 'bounced');
    const list = await server.call('GET', '/v1/suppressions', { key });
    expect(list.body.data.map((s: { email: string }) => s.email)).not.toContain(
      'bounced@simulator.posthorn.test',
    );
  });
});
