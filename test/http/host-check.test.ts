import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * DNS rebinding (issue 47, item 7a): a page the operator opens can point its own name at 127.0.0.1
 * and then read what this machine is served without signing in: the dev mailbox (everyone's
 * sign-in codes), /v1/admin/routes and /metrics. Those answer only when the Host header is the configured
 * host (POSTHORN_PUBLIC_URL's or POSTHORN_APP_URL's) or a loopback literal; any other is a 403
 * saying why. The client is on this machine throughout (inject's `remoteAddress`).
 */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer(
    {
      POSTHORN_SMTP_RELAY: '',
      POSTHORN_PUBLIC_URL: 'https://mail.example.test',
      POSTHORN_APP_URL: 'https://app.example.test/dashboard/',
    },
    ['api'],
  );
});
afterAll(() => server?.close());

async function local(url: string, host: string, headers: Record<string, string> = {}) {
  const res = await server.app.inject({
    method: 'GET',
    url,
    remoteAddress: '127.0.0.1',
    headers: { host, ...headers },
  });
  return { status: res.statusCode, body: res.json() };
}

const GUARDED = [
  '/api/mailbox',
  '/api/mailbox/00000000-0000-4000-8000-000000000000',
  '/v1/admin/routes',
  '/metrics',
];
const REBOUND = [
  'rebound.example',
  'rebound.example:3000',
  'attacker.example.test',
  'mail.example.test.evil',
];

describe('the local-only endpoints and the Host header', () => {
  it('answer for the configured hosts and loopback literals', async () => {
    for (const host of [
      'mail.example.test',
      'MAIL.example.test:443',
      'app.example.test',
      '127.0.0.1',
      '127.0.0.1:3000',
      '127.5.6.7:80',
      '[::1]:3000',
      'localhost:3000',
    ]) {
      expect((await local('/api/mailbox', host)).status, host).toBe(200);
      expect((await local('/v1/admin/routes', host)).status, host).toBe(200);
      const metrics = await server.app.inject({
        method: 'GET',
        url: '/metrics',
        remoteAddress: '127.0.0.1',
        headers: { host },
      });
      expect(metrics.statusCode, host).toBe(200);
      expect((await local('/api/mailbox/status', host)).body, host).toEqual({
        available: true,
        reason: null,
      });
    }
  });

  it('refuse any other Host with a 403 that says why, even from this machine', async () => {
    for (const host of REBOUND) {
      for (const url of GUARDED)
        expectError(await local(url, host), 403, /Host.*(mail\.example\.test|app\.example\.test).*loopback/);
      const status = await local('/api/mailbox/status', host);
      expect(status.status).toBe(200);
      expect(status.body).toEqual({ available: false, reason: expect.stringMatching(/Host/) });
    }
  });
});
