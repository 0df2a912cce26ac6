import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { createDnsLookup } from '../../src/domain/sending-domains/dns-lookup.ts';
import { recheckDomains } from '../../src/domain/sending-domains/domains.ts';
import { fanOut, type WebhookEvent } from '../../src/domain/webhooks/fan-out.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
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
      let answered = req.url?.includes('fail') ? 500 : 200;
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
      // a temporary failure is final at once: email.deferred then email.failed
      POSTHORN_RETRY_FOR_HOURS: '0',
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

function waitForHit(predicate: (h: Hit) => boolean, timeoutMs = 15_000): Promise<Hit> {
  return eventually(
    () => {
      const hit = hits.find(predicate);
      if (!hit) throw new Error(`received: ${hits.map((h) => h.body.type).join(', ')}`);
      return hit;
    },
    { timeoutMs, message: 'no webhook matched' },
  );
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

  it('a fan-out job that runs again (after a crash) adds no delivery and sends nothing twice', async () => {
    const ctx = server.runtime.ctx;
    const { rows } = await ctx.pool.query(
      `insert into contacts (project_id, email) values ($1, 'rerun@example.com') returning id`,
      [account.project.id],
    );
    const id = rows[0].id as string;
    const event = (): WebhookEvent => ({
      type: 'contact.created',
      key: id,
      projectId: account.project.id,
      createdAt: new Date(),
      data: { id, object: 'contact', email: 'rerun@example.com' },
    });
    expect(await fanOut(ctx, [event()], 'job:4242')).toBe(1);
    expect(await fanOut(ctx, [event()], 'job:4242')).toBe(0); // the same job again
    expect(await fanOut(ctx, [event()], 'job:4243')).toBe(1); // another announcement is another delivery
    const first = await waitForHit((h) => h.body.type === 'contact.created' && h.body.data.id === id);
    const deliveries = await ctx.pool.query(
      `select distinct message_id from webhook_deliveries where fanout_key is not null and payload->'data'->>'id' = $1`,
      [id],
    );
    expect(deliveries.rows).toHaveLength(2);
    expect(deliveries.rows.map((r) => r.message_id)).toContain(first.headers['webhook-id']);
  });

  it('contact.created for a contact that a tracked event created (announced through the outbox)', async () => {
    const tracked = await server.call('POST', '/v1/events', {
      key,
      body: { email: 'first-seen@example.com', event: 'signup' },
    });
    expect(tracked.body.contact_created).toBe(true);
    const hit = await waitForHit(
      (h) => h.body.type === 'contact.created' && h.body.data.id === tracked.body.contact_id,
    );
    expect(hit.body.data.email).toBe('first-seen@example.com');
    const left = await server.runtime.ctx.pool.query('select count(*)::int as n from audience_outbox');
    expect(left.rows[0].n).toBe(0);
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

describe('every email event that exists', () => {
  it('delivered, complained, deferred, failed and suppressed (simulator addresses and the suppression list)', async () => {
    await server.call('PATCH', `/v1/webhooks/${webhookId}`, {
      key,
      body: {
        events: [
          'email.sent',
          'email.delivered',
          'email.deferred',
          'email.bounced',
          'email.complained',
          'email.failed',
          'email.suppressed',
          'email.received',
          'domain.verified',
          'domain.failed',
          'contact.created',
          'contact.updated',
          'contact.unsubscribed',
          'contact.deleted',
        ],
      },
    });
    const send = async (to: string) =>
      (
        await server.call('POST', '/v1/emails', {
          key,
          body: { from: FROM, to, subject: `To ${to}`, text: 'x' },
        })
      ).body.id as string;
    const delivered = await send('delivered@simulator.posthorn.test');
    const complained = await send('complained@simulator.posthorn.test');
    const deferred = await send('deferred@simulator.posthorn.test');
    expect(
      (await server.call('POST', '/v1/suppressions', { key, body: { email: 'blocked@example.org' } })).status,
    ).toBe(200);
    const suppressed = await send('blocked@example.org');
    for (const [type, id] of [
      ['email.delivered', delivered],
      ['email.complained', complained],
      ['email.deferred', deferred],
      ['email.failed', deferred],
      ['email.suppressed', suppressed],
    ]) {
      const hit = await waitForHit((h) => h.body.type === type && h.body.data.id === id);
      expect(verify(hit)).toBeTruthy();
    }
  });

  it('domain.failed when a verified domain loses its records', async () => {
    const domain = await server.runtime.ctx.db
      .selectFrom('domains')
      .select(['id', 'records'])
      .where('name', '=', 'hooks-domain.example')
      .executeTakeFirstOrThrow();
    for (const r of domain.records) dns.zone.delete(r.name);
    await recheckDomains(
      server.runtime.ctx,
      createDnsLookup([dns.address]),
      new Date(Date.now() + 25 * 3_600_000),
    );
    const hit = await waitForHit((h) => h.body.type === 'domain.failed' && h.body.data.id === domain.id);
    expect(hit.body.data.status).toBe('failed');
  });

  it('an endpoint failing for 5 days is disabled and the owner is told by email', async () => {
    const failing = await server.call('POST', '/v1/webhooks', {
      key,
      body: { url: `${url}?fail`, events: ['contact.created'] },
    });
    await server.runtime.ctx.db
      .updateTable('webhook_endpoints')
      .set({ failing_since: new Date(Date.now() - 6 * 86_400_000) })
      .where('id', '=', failing.body.id)
      .execute();
    await server.call('POST', '/v1/contacts', { key, body: { email: 'trigger-disable@example.com' } });
    const notice = await server.sink.waitFor(
      (m) => m.parsed.subject === 'Posthorn: a webhook endpoint was disabled',
      20_000,
    );
    expect(notice.parsed.text).toContain(failing.body.id);
    const after = await server.call('GET', `/v1/webhooks/${failing.body.id}`, { key });
    expect(after.body).toMatchObject({ enabled: false, disabled_reason: 'failing for 5 days' });
  }, 30_000);
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
    const log = await eventually(
      async () => {
        const { body } = await server.call('GET', `/v1/webhooks/${webhookId}/deliveries?limit=100`, { key });
        const statuses = body.data
          .filter((d: { message_id: string }) => d.message_id === success.headers['webhook-id'])
          .map((a: { status: string }) => a.status);
        expect(statuses).toContain('succeeded');
        return body;
      },
      { timeoutMs: 10_000, intervalMs: 100, message: 'the successful attempt is not in the delivery log' },
    );
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
