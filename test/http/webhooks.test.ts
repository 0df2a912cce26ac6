import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/** A real HTTP receiver on 127.0.0.1 that records what it gets and answers as told. */
async function startReceiver() {
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const state = { status: 200, hang: false };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      if (state.hang) return; // never answers
      res.writeHead(state.status, { 'content-type': 'text/plain' });
      res.end(state.status === 200 ? 'ok' : 'receiver says no');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    received,
    state,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let server: TestServer;
let strict: TestServer;
let dns: TestDnsServer;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.zone.set('hooks.rebind.test', [{ type: 'A', address: '127.0.0.1' }]);
  dns.zone.set('v6.rebind.test', [{ type: 'AAAA', address: '::1' }]);
  receiver = await startReceiver();
  // development mode (private targets and plain http allowed), and a production-like server
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1', POSTHORN_DNS_SERVERS: dns.address }, [
    'api',
  ]);
  // production-like: its public URL is not this machine (a local one lets webhooks reach it:
  // test/http/webhook-local-targets.test.ts)
  strict = await startTestServer(
    { POSTHORN_DNS_SERVERS: dns.address, POSTHORN_PUBLIC_URL: 'https://posthorn.example.com' },
    ['api'],
  );
  account = await server.signup();
  key = account.project_key.key;
});
afterAll(async () => {
  await server?.close();
  await strict?.close();
  await receiver?.close();
  await dns?.close();
});

describe('webhook endpoints', () => {
  it('creates an endpoint with a whsec_ secret shown once, and a signed test event verifies', async () => {
    const created = await server.call('POST', '/v1/webhooks', {
      key,
      body: { url: receiver.url, events: ['email.sent', 'contact.created'], description: 'my app' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({
      object: 'webhook',
      url: receiver.url,
      enabled: true,
      events: ['email.sent', 'contact.created'],
    });
    const secret = created.body.secret as string;
    expect(secret).toMatch(/^whsec_/);
    const listed = await server.call('GET', '/v1/webhooks', { key });
    expect(listed.body.data[0].secret).toBeUndefined();
    const row = await server.runtime.ctx.db
      .selectFrom('webhook_endpoints')
      .select('secret_enc')
      .executeTakeFirstOrThrow();
    expect(row.secret_enc.includes(Buffer.from(secret))).toBe(false); // encrypted at rest

    const test = await server.call('POST', `/v1/webhooks/${created.body.id}/test`, { key });
    expect(test.status).toBe(200);
    expect(test.body).toMatchObject({
      status: 'succeeded',
      status_code: 200,
      attempt: 1,
      event_type: 'webhook.test',
      response_excerpt: 'ok',
    });
    const got = receiver.received.at(-1) as { headers: IncomingHttpHeaders; body: string };
    const headers = {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    };
    expect(headers['webhook-id']).toBe(test.body.message_id);
    expect(new Webhook(secret).verify(got.body, headers)).toMatchObject({ type: 'webhook.test' });
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`).verify(got.body, headers),
    ).toThrow();

    const deliveries = await server.call('GET', `/v1/webhooks/${created.body.id}/deliveries`, { key });
    expect(deliveries.body).toMatchObject({ total: 1, limit: 25, offset: 0 });
  });

  it('after rotation both the old and the new secret verify during the overlap', async () => {
    const created = await server.call('POST', '/v1/webhooks', {
      key,
      body: { url: receiver.url, events: ['email.sent'] },
    });
    const rotated = await server.call('POST', `/v1/webhooks/${created.body.id}/secret/rotate`, { key });
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    await server.call('POST', `/v1/webhooks/${created.body.id}/test`, { key });
    const got = receiver.received.at(-1) as { headers: IncomingHttpHeaders; body: string };
    const headers = {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    };
    expect(() => new Webhook(created.body.secret).verify(got.body, headers)).not.toThrow();
    expect(() => new Webhook(rotated.body.secret).verify(got.body, headers)).not.toThrow();
  });

  it('records a failing receiver and cuts a hanging one at the timeout', async () => {
    const created = await server.call('POST', '/v1/webhooks', {
      key,
      body: { url: receiver.url, events: ['email.sent'] },
    });
    receiver.state.status = 500;
    const failed = await server.call('POST', `/v1/webhooks/${created.body.id}/test`, { key });
    expect(failed.body).toMatchObject({
      status: 'failed',
      status_code: 500,
      response_excerpt: 'receiver says no',
    });
    receiver.state.status = 200;
    receiver.state.hang = true;
    const hung = await server.call('POST', `/v1/webhooks/${created.body.id}/test`, { key });
    receiver.state.hang = false;
    expect(hung.body).toMatchObject({ status: 'failed', status_code: null });
    expect(hung.body.error).toMatch(/timed out after 10 s/);
  }, 20_000);

  it('refuses bad input with 400 naming the problem, and another project’s endpoint is 404', async () => {
    const cases: [unknown, RegExp][] = [
      [{ events: ['email.sent'] }, /`url` is required/],
      [{ url: 'not a url', events: ['email.sent'] }, /not a valid URL/],
      [{ url: 'ftp://example.com/x', events: ['email.sent'] }, /must use https/],
      [{ url: receiver.url, events: ['email.exploded'] }, /`events\[0\]` must be one of "email.sent", /],
      [{ url: receiver.url, events: [] }, /`events` must have at least 1 item/],
      [{ url: receiver.url }, /`events` is required/],
      [{ url: 'https://user:pw@example.com/x', events: ['email.sent'] }, /user name or password/],
    ];
    for (const [body, message] of cases)
      expectError(await server.call('POST', '/v1/webhooks', { key, body }), 400, message);
    const mine = await server.call('POST', '/v1/webhooks', {
      key,
      body: { url: receiver.url, events: ['email.sent'] },
    });
    const patches: [unknown, RegExp][] = [
      [{ enabled: 'yes' }, /`enabled` must be a boolean/],
      [{ description: 'x'.repeat(1001) }, /`description` must be at most 1000 characters/],
      [{ url: 'ftp://example.com/x' }, /must use https/],
    ];
    for (const [body, message] of patches)
      expectError(await server.call('PATCH', `/v1/webhooks/${mine.body.id}`, { key, body }), 400, message);
    const other = await server.signup();
    expectError(
      await server.call('GET', `/v1/webhooks/${mine.body.id}`, { key: other.project_key.key }),
      404,
    );
    expectError(
      await server.call('POST', `/v1/webhooks/${mine.body.id}/test`, { key: other.project_key.key }),
      404,
    );
    expect((await server.call('DELETE', `/v1/webhooks/${mine.body.id}`, { key })).status).toBe(204);
  });
});

describe('SSRF: private targets are refused unless POSTHORN_WEBHOOK_ALLOW_PRIVATE=1', () => {
  it('refuses loopback, IPv6 loopback, localhost and a name that resolves to 127.0.0.1', async () => {
    const other = await strict.signup();
    const k = other.project_key.key;
    const cases: [string, RegExp][] = [
      ['http://127.0.0.1:9/x', /must use https/],
      ['http://[::1]/x', /must use https/],
      ['http://localhost/x', /must use https/],
      ['https://127.0.0.1/x', /loopback address/],
      ['https://[::1]/x', /loopback address/],
      ['https://localhost/x', /loopback address/],
      ['https://hooks.rebind.test/x', /hooks\.rebind\.test \(127\.0\.0\.1\), a loopback address/],
      ['https://v6.rebind.test/x', /v6\.rebind\.test \(::1\), a loopback address/],
      ['https://10.1.2.3/x', /private address/],
      ['https://169.254.169.254/latest/meta-data', /metadata address/],
      ['https://[::ffff:127.0.0.1]/x', /loopback address/],
      ['https://nowhere.rebind.test/x', /does not resolve/],
    ];
    for (const [url, message] of cases) {
      expectError(
        await strict.call('POST', '/v1/webhooks', { key: k, body: { url, events: ['email.sent'] } }),
        400,
        message,
      );
    }
    expect((await strict.call('GET', '/v1/webhooks', { key: k })).body.data).toEqual([]);
  });
});
