import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/workspaces.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

interface Hit {
  headers: IncomingHttpHeaders;
  body: any;
  raw: string;
  answered: number;
}

let server: TestServer;
let dns: TestDnsServer;
let account: SignupResult;
let key: string;
let secret: string;
let webhookId: string;
const hits: Hit[] = [];
// the receiver answers 500 this many times to deliveries about this resource id, then 200
const failing = { id: '', times: 0 };
let receiver: ReturnType<typeof createServer>;
let url: string;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw);
      let answered = 200;
      if (body.data?.email === failing.id && failing.times > 0) {
        failing.times--;
        answered = 500;
      }
      hits.push({ headers: req.headers, body, raw, answered });
      res.writeHead(answered);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  // retries after 1 s, so the retry test finishes quickly
  dns = await startDnsServer();
  server = await startTestServer(
    {
      POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1',
      POSTHORN_WEBHOOK_SCHEDULE: '0,1,1,1',
      POSTHORN_SMTP_PORT: '0',
      POSTHORN_MX_PORT: '0',
      POSTHORN_DNS_SERVERS: dns.address,
    },
    ['api', 'worker', 'smtp'],
  );
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  const created = await server.call('POST', '/v1/webhooks', {
    key,
    body: {
      url,
      events: [
        'email.sent',
        'email.bounced',
        'email.received',
        'domain.verified',
        'contact.created',
        'contact.updated',
        'contact.unsubscribed',
        'contact.deleted',
      ],
    },
  });
  expect(created.status).toBe(200);
  secret = created.body.secret;
  webhookId = created.body.id;
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
  receiver.closeAllConnections();
  await new Promise<void>((r) => receiver.close(() => r()));
});

async function waitForHit(predicate: (h: Hit) => boolean, timeoutMs = 15_000): Promise<Hit> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const hit = hits.find(predicate);
    if (hit) return hit;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no webhook matched; received: ${hits.map((h) => h.body.type).join(', ')}`);
}

function verify(hit: Hit) {
  const headers = {
    'webhook-id': String(hit.headers['webhook-id']),
    'webhook-timestamp': String(hit.headers['webhook-timestamp']),
    'webhook-signature': String(hit.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(hit.raw, headers);
}

describe('events reach the endpoint, signed', () => {
  it('email.sent after a send, with the email as data', async () => {
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'hook-reader@example.org', subject: 'Hooked', text: 'x' },
    });
    await waitForStatus(server, key, res.body.id, 'sent');
    const hit = await waitForHit((h) => h.body.type === 'email.sent' && h.body.data.id === res.body.id);
    expect(verify(hit)).toMatchObject({ type: 'email.sent' });
    expect(hit.body.data).toMatchObject({ object: 'email', subject: 'Hooked', status: 'sent' });
    expect(hit.body.data.event).toMatchObject({ type: 'sent', recipient: 'hook-reader@example.org' });
    expect(typeof hit.body.created_at).toBe('string');
  });

  it('email.bounced with the SMTP reply', async () => {
    server.sink.onRecipient = (a) =>
      a === 'hook-gone@example.org' ? { code: 550, message: '5.1.1 no such user' } : undefined;
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'hook-gone@example.org', subject: 'Bounce', text: 'x' },
    });
    const hit = await waitForHit((h) => h.body.type === 'email.bounced' && h.body.data.id === res.body.id);
    server.sink.onRecipient = undefined;
    expect(verify(hit)).toBeTruthy();
    expect(hit.body.data.event).toMatchObject({ type: 'bounced', bounce_type: 'hard' });
    expect(hit.body.data.event.response).toContain('no such user');
  });

  it('contact.created, contact.updated, contact.unsubscribed and contact.deleted', async () => {
    const created = await server.call('POST', '/v1/contacts', { key, body: { email: 'hooked@example.com' } });
    const id = created.body.id;
    const createdHit = await waitForHit((h) => h.body.type === 'contact.created' && h.body.data.id === id);
    expect((verify(createdHit) as { data: Record<string, unknown> }).data).toMatchObject({
      email: 'hooked@example.com',
    });
    await server.call('PATCH', `/v1/contacts/${id}`, { key, body: { subscribed: false } });
    await waitForHit((h) => h.body.type === 'contact.updated' && h.body.data.id === id);
    const unsub = await waitForHit((h) => h.body.type === 'contact.unsubscribed' && h.body.data.id === id);
    expect(unsub.body.data.subscribed).toBe(false);
    await server.call('DELETE', `/v1/contacts/${id}`, { key });
    const deleted = await waitForHit((h) => h.body.type === 'contact.deleted' && h.body.data.id === id);
    expect(deleted.body.data).toEqual({ id, object: 'contact', deleted: true });
  });
});

describe('inbound and domain events', () => {
  it('email.received when mail arrives at the inbound address', async () => {
    const me = await server.call('GET', '/v1/me', { key });
    const to = `hello@${me.body.inbound.domain}`;
    const res = await deliverToMx(
      server,
      { from: 'someone@sender.example', to: [to] },
      ['From: someone@sender.example', `To: ${to}`, 'Subject: Inbound hook', '', 'Hi', ''].join('\r\n'),
    );
    expect(res.ok, res.response).toBe(true);
    const hit = await waitForHit((h) => h.body.type === 'email.received');
    expect(verify(hit)).toBeTruthy();
    expect(hit.body.data).toMatchObject({
      object: 'inbound_email',
      subject: 'Inbound hook',
      from_address: 'someone@sender.example',
    });
  });

  it('domain.verified when a check finds the records', async () => {
    const added = await server.call('POST', '/v1/domains', { key, body: { domain: 'hooks-domain.example' } });
    expect(added.status).toBe(200);
    for (const r of added.body.records as {
      type: string;
      name: string;
      value: string;
      priority?: number;
    }[]) {
      const list = dns.zone.get(r.name) ?? [];
      if (r.type === 'TXT') list.push({ type: 'TXT', data: r.value.match(/.{1,255}/g) as string[] });
      else list.push({ type: 'MX', exchange: r.value, priority: r.priority ?? 10 });
      dns.zone.set(r.name, list);
    }
    const checked = await server.call('POST', `/v1/domains/${added.body.id}/check`, { key });
    expect(checked.body.status).toBe('verified');
    const hit = await waitForHit(
      (h) => h.body.type === 'domain.verified' && h.body.data.id === added.body.id,
    );
    expect(hit.body.data).toMatchObject({
      object: 'domain',
      name: 'hooks-domain.example',
      status: 'verified',
    });
  });
});

describe('retries', () => {
  it('500 twice then 200: one success, three logged attempts with the same webhook-id', async () => {
    failing.id = 'retry-me@example.com';
    failing.times = 2;
    const before = hits.length;
    const created = await server.call('POST', '/v1/contacts', {
      key,
      body: { email: 'retry-me@example.com' },
    });
    const success = await waitForHit(
      (h) =>
        hits.indexOf(h) >= before &&
        h.body.type === 'contact.created' &&
        h.body.data.id === created.body.id &&
        h.answered === 200,
      20_000,
    );
    const same = hits.filter((h) => h.headers['webhook-id'] === success.headers['webhook-id']);
    expect(same).toHaveLength(3);
    let log: any;
    const deadline = Date.now() + 10_000;
    do {
      log = (await server.call('GET', `/v1/webhooks/${webhookId}/deliveries?limit=100`, { key })).body;
      const attempts = log.data.filter(
        (d: { message_id: string }) => d.message_id === success.headers['webhook-id'],
      );
      if (attempts.some((a: { status: string }) => a.status === 'succeeded')) break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < deadline);
    const attempts = log.data
      .filter((d: { message_id: string }) => d.message_id === success.headers['webhook-id'])
      .sort((a: { attempt: number }, b: { attempt: number }) => a.attempt - b.attempt);
    expect(
      attempts.map((a: { attempt: number; status: string; status_code: number }) => [
        a.attempt,
        a.status,
        a.status_code,
      ]),
    ).toEqual([
      [1, 'failed', 500],
      [2, 'failed', 500],
      [3, 'succeeded', 200],
    ]);
    expect(attempts[0].next_retry_at).not.toBeNull();

    const again = await server.call('POST', `/v1/webhooks/${webhookId}/deliveries/${attempts[2].id}/retry`, {
      key,
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      attempt: 3,
      status: 'pending',
      message_id: success.headers['webhook-id'],
    });
    await waitForHit(
      () => hits.filter((x) => x.headers['webhook-id'] === success.headers['webhook-id']).length === 4,
    );
  }, 30_000);
});
