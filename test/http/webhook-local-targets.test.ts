import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverWebhook } from '../../src/domain/webhooks/delivery-attempts.ts';
import { webhookUrlRules } from '../../src/domain/webhooks/policy.ts';
import { expectError } from '../helpers/assertions.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * Webhooks tried on one's own machine (issue 48, build item 2): on a server whose public URL is
 * local (the default, http://localhost:PORT) an endpoint may point to this machine over plain
 * http; a server with a public address keeps the production rule, and a refusal says in words
 * what would allow it. Neither server has POSTHORN_WEBHOOK_ALLOW_PRIVATE.
 */

let local: TestServer;
let production: TestServer;
let dns: TestDnsServer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.zone.set('hooks.rebind.test', [{ type: 'A', address: '127.0.0.1' }]);
  receiver = await startWebhookReceiver();
  [local, production] = await Promise.all([
    startTestServer({ POSTHORN_DNS_SERVERS: dns.address }, ['api']),
    startTestServer(
      { POSTHORN_DNS_SERVERS: dns.address, POSTHORN_PUBLIC_URL: 'https://posthorn.example.com' },
      ['api'],
    ),
  ]);
});
afterAll(async () => {
  await local?.close();
  await production?.close();
  await receiver?.close();
  await dns?.close();
});

const endpointCount = async (server: TestServer) =>
  Number(
    (
      await server.runtime.ctx.db
        .selectFrom('webhook_endpoints')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('a server whose public URL is local', () => {
  it('takes an http endpoint on this machine, and its signed test event arrives', async () => {
    const { project_key } = await local.signup();
    const key = project_key.key;
    expect((await local.call('GET', '/v1/webhooks/url-rules', { key })).body).toEqual({
      object: 'webhook_url_rules',
      local_server: true,
      loopback_allowed: true,
      private_allowed: false,
    });
    const port = new URL(receiver.url).port;
    for (const url of [receiver.url, `http://localhost:${port}/hooks`]) {
      const created = await local.call('POST', '/v1/webhooks', {
        key,
        body: { url, events: ['email.delivered'] },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const before = receiver.hooks.length;
      const test = await local.call('POST', `/v1/webhooks/${created.body.id}/test`, { key });
      expect(test.body).toMatchObject({ status: 'succeeded', status_code: 200, event_type: 'webhook.test' });
      const got = receiver.hooks[before];
      expect(got.headers['webhook-id']).toBe(test.body.message_id);
      const headers = {
        'webhook-id': String(got.headers['webhook-id']),
        'webhook-timestamp': String(got.headers['webhook-timestamp']),
        'webhook-signature': String(got.headers['webhook-signature']),
      };
      expect(new Webhook(created.body.secret).verify(got.body, headers)).toMatchObject({
        type: 'webhook.test',
      });
      // the delivery log shows the request as it was sent, and the answer
      const log = await local.call('GET', `/v1/webhooks/${created.body.id}/deliveries`, { key });
      expect(log.body.data).toEqual([
        expect.objectContaining({
          id: test.body.id,
          payload: JSON.parse(got.body),
          status: 'succeeded',
          status_code: 200,
          next_retry_at: null,
        }),
      ]);
    }
    for (const url of ['http://[::1]:9/x', 'https://127.0.0.2/x', 'http://app.posthorn.localhost:9/x']) {
      const created = await local.call('POST', '/v1/webhooks', {
        key,
        body: { url, events: ['email.sent'] },
      });
      expect(created.status, `${url}: ${JSON.stringify(created.body)}`).toBe(200);
    }
  });

  it('still refuses other private addresses and names that resolve to loopback, saying what is allowed', async () => {
    const { project_key } = await local.signup();
    const key = project_key.key;
    const before = await endpointCount(local);
    const onlyHere =
      /allowed only to this computer \(localhost, 127\.0\.0\.1 or \[::1\]\).*POSTHORN_WEBHOOK_ALLOW_PRIVATE=1/;
    const cases: [string, RegExp][] = [
      ['http://10.1.2.3/x', /^The URL must use https \(got http\)\. This server runs on a local address/],
      [
        'https://10.1.2.3/x',
        /^The URL points to 10\.1\.2\.3, a private address: webhooks go to public addresses only\./,
      ],
      ['https://169.254.169.254/latest/meta-data', /a metadata address/],
      ['https://hooks.rebind.test/x', /hooks\.rebind\.test \(127\.0\.0\.1\), a loopback address/],
      ['http://hooks.rebind.test/x', /must use https/],
      ['ftp://127.0.0.1/x', /must use https \(got ftp\)/],
    ];
    for (const [url, message] of cases) {
      const res = await local.call('POST', '/v1/webhooks', { key, body: { url, events: ['email.sent'] } });
      expectError(res, 400, message);
      expect(res.body.error).toMatch(onlyHere);
      expect(res.body.error).not.toMatch(/`|\/v1\//);
    }
    const mine = await local.call('POST', '/v1/webhooks', {
      key,
      body: { url: receiver.url, events: ['email.sent'] },
    });
    expectError(
      await local.call('PATCH', `/v1/webhooks/${mine.body.id}`, {
        key,
        body: { url: 'http://192.168.1.1/x' },
      }),
      400,
      onlyHere,
    );
    expect(await endpointCount(local)).toBe(before + 1);
  });
});

describe('a test event', () => {
  it('takes the path of every delivery: a failed one is tried again on the schedule', async () => {
    const answer = { status: 503 };
    const busy = createServer((_req, res) =>
      res
        .writeHead(answer.status, { 'content-type': 'text/plain' })
        .end(answer.status === 200 ? 'ok' : 'busy'),
    );
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    try {
      const { project_key } = await local.signup();
      const key = project_key.key;
      const url = `http://127.0.0.1:${(busy.address() as AddressInfo).port}/hooks`;
      const created = await local.call('POST', '/v1/webhooks', {
        key,
        body: { url, events: ['email.sent'] },
      });
      const test = await local.call('POST', `/v1/webhooks/${created.body.id}/test`, { key });
      expect(test.body).toMatchObject({
        status: 'failed',
        status_code: 503,
        response_excerpt: 'busy',
        attempt: 1,
        event_type: 'webhook.test',
      });
      // the schedule's second step (5 s by default) from the attempt
      const retryAt = Date.parse(test.body.next_retry_at);
      expect(retryAt).toBeGreaterThan(Date.parse(test.body.created_at));
      const log = await local.call('GET', `/v1/webhooks/${created.body.id}/deliveries`, { key });
      expect(log.body.total).toBe(2);
      const queued = log.body.data.find((d: { id: string }) => d.id !== test.body.id);
      expect(queued).toMatchObject({
        status: 'pending',
        message_id: test.body.message_id,
        payload: test.body.payload,
      });
      // the queued attempt, as the webhook_deliver job runs it (this server has no worker)
      answer.status = 200;
      await deliverWebhook(local.runtime.ctx, queued.id);
      const after = await local.call('GET', `/v1/webhooks/${created.body.id}/deliveries`, { key });
      expect(after.body.data.find((d: { id: string }) => d.id === queued.id)).toMatchObject({
        status: 'succeeded',
        status_code: 200,
        attempt: 2,
        next_retry_at: null,
      });
    } finally {
      busy.closeAllConnections();
      await new Promise<void>((r) => busy.close(() => r()));
    }
  });
});

describe('a server with a public address keeps the production rule', () => {
  it('refuses http and this machine, and names the settings that would allow them', async () => {
    const { project_key } = await production.signup();
    const key = project_key.key;
    expect((await production.call('GET', '/v1/webhooks/url-rules', { key })).body).toEqual({
      object: 'webhook_url_rules',
      local_server: false,
      loopback_allowed: false,
      private_allowed: false,
    });
    const howToTry =
      /To try webhooks with a receiver on your own computer, run Posthorn on a local address \(POSTHORN_PUBLIC_URL such as http:\/\/localhost:3000, the default\), or with the server setting POSTHORN_WEBHOOK_ALLOW_PRIVATE=1/;
    const cases: [string, RegExp][] = [
      [receiver.url, /^The URL must use https \(got http\)\. To try/],
      ['http://localhost:9/x', /must use https/],
      [
        'https://127.0.0.1/x',
        /^The URL points to 127\.0\.0\.1, a loopback address: webhooks go to public addresses only\./,
      ],
      ['https://localhost/x', /loopback address/],
      ['https://app.posthorn.localhost/x', /loopback address/],
      ['https://[::1]/x', /loopback address/],
    ];
    for (const [url, message] of cases) {
      const res = await production.call('POST', '/v1/webhooks', {
        key,
        body: { url, events: ['email.sent'] },
      });
      expectError(res, 400, message);
      expect(res.body.error).toMatch(howToTry);
      expect(res.body.error).not.toMatch(/`|\/v1\//);
    }
    expect(await endpointCount(production)).toBe(0);
  });
});

describe('which public URLs are local', () => {
  const rules = (publicUrl: string, allowPrivate = false) =>
    webhookUrlRules({
      config: { publicUrl, webhookAllowPrivate: allowPrivate, dnsServers: [] },
      db: undefined,
    } as unknown as Parameters<typeof webhookUrlRules>[0]);
  it('localhost, a .localhost name and loopback addresses are; anything else is not', () => {
    for (const url of [
      'http://localhost:3000',
      'http://posthorn.localhost:3000',
      'http://127.0.0.1:3000',
      'http://127.1.2.3',
      'http://[::1]:3000',
    ])
      expect(rules(url), url).toMatchObject({ local_server: true, loopback_allowed: true });
    for (const url of [
      'https://posthorn.example.com',
      'http://192.168.1.10:3000',
      'http://localhost.example.com',
      'http://[::ffff:a00:1]',
    ])
      expect(rules(url), url).toMatchObject({ local_server: false, loopback_allowed: false });
    expect(rules('https://posthorn.example.com', true)).toEqual({
      object: 'webhook_url_rules',
      local_server: false,
      loopback_allowed: true,
      private_allowed: true,
    });
  });
});
