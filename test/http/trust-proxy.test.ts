import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { expectError } from '../helpers/assertions.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { codeIn } from '../helpers/smtp-sink.ts';

/**
 * X-Forwarded-For is believed only from the proxies POSTHORN_TRUST_PROXY names (off by default):
 * otherwise a client that writes a new address in each request escapes the per-IP limit on failed
 * sign-ins and puts forged addresses in session lists.
 */

const PASSWORD = 'not the password';
let counter = 0;
/** A password attempt for an address nobody has, claiming a new client address each time. */
const attempt = (server: TestServer) => {
  counter++;
  return server.call('POST', '/api/auth/login/password', {
    body: { email: `spray-${counter}@example.org`, password: PASSWORD },
    headers: { 'x-forwarded-for': `198.51.100.${counter % 250}, 203.0.113.${counter % 250}` },
  });
};

/** Signs in with an emailed code, the requests claiming `forwarded` as the client; returns the session's ip. */
async function sessionIp(server: TestServer, forwarded: string): Promise<string | null> {
  const { account } = await server.signupConfirmed();
  const since = server.sink.messages.length;
  const headers = { 'x-forwarded-for': forwarded };
  expect(
    (await server.call('POST', '/api/auth/login', { body: { email: account.email }, headers })).status,
  ).toBe(200);
  const message = await server.sink.waitFor(
    (m) =>
      m.to.includes(account.email) &&
      /login code/i.test(m.parsed.subject ?? '') &&
      server.sink.messages.indexOf(m) >= since,
  );
  const verified = await server.call('POST', '/api/auth/login/verify', {
    body: { email: account.email, code: codeIn(message) },
    headers,
  });
  expect(verified.status).toBe(200);
  const sessions = await server.call('GET', '/api/sessions', {
    headers: { authorization: `Bearer ${verified.body.token}` },
  });
  expect(sessions.status).toBe(200);
  return sessions.body.data[0].ip;
}

describe('off (the default): the TCP peer is the client', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  // first: the failures below block this machine's sign-ins for 15 minutes
  it('a session lists the address it came from, not the one a client wrote', async () => {
    expect(await sessionIp(server, '203.0.113.77')).toBe('127.0.0.1');
  });

  it('25 password attempts with a rotating X-Forwarded-For are refused with 429 after the 20 allowed per IP', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) {
      const res = await attempt(server);
      statuses.push(res.status);
      if (res.status === 429) expectError(res, 429, /from this network/);
    }
    expect(statuses).toEqual([...new Array(20).fill(401), ...new Array(5).fill(429)]);
  });
});

describe('with the proxy in front named (loopback here)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ POSTHORN_TRUST_PROXY: '127.0.0.1/8,::1' });
  });
  afterAll(() => server?.close());

  it("the address the proxy forwards is the client's: 25 attempts from 25 addresses are each a 401", async () => {
    for (let i = 0; i < 25; i++) expectError(await attempt(server), 401, /Wrong email or password/);
  });

  it('a session lists the forwarded address; of a forwarded chain, the one the proxy saw', async () => {
    // 198.51.100.9 was written by the client itself; the proxy appended the address it saw
    expect(await sessionIp(server, '198.51.100.9, 203.0.113.5')).toBe('203.0.113.5');
  });
});

describe('with a hop count (one proxy in front)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ POSTHORN_TRUST_PROXY: '1' });
  });
  afterAll(() => server?.close());

  it('the last forwarded address is the client (Fastify alone would trust no hop for a bare number)', async () => {
    expect(await sessionIp(server, '198.51.100.9, 203.0.113.6')).toBe('203.0.113.6');
  });
});

describe('POSTHORN_TRUST_PROXY', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-trust-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const trust = (value?: string) =>
    loadConfig({
      POSTHORN_DATA_DIR: dataDir,
      POSTHORN_SECRET: 'x'.repeat(40),
      ...(value === undefined ? {} : { POSTHORN_TRUST_PROXY: value }),
    }).trustProxy;

  it('is off unless set', () => {
    expect(trust()).toBe(false);
    for (const off of ['', '0', 'false', 'off', 'no']) expect(trust(off)).toBe(false);
  });

  it('takes a hop count, or addresses, CIDRs and range names', () => {
    expect(trust('2')).toBe(2);
    expect(trust('10.0.0.5, 10.1.0.0/16,fd00::/8, loopback')).toEqual([
      '10.0.0.5',
      '10.1.0.0/16',
      'fd00::/8',
      'loopback',
    ]);
  });

  it('refuses "true" and anything else it cannot read, saying what it takes', () => {
    for (const bad of ['true', '*', '10.0.0.0/33', 'proxy.internal', '::1/129', '10.0.0.1,', '50'])
      expect(() => trust(bad), bad).toThrow(ConfigError);
    expect(() => trust('true')).toThrow(/hop count such as 1, or comma-separated proxy addresses or CIDRs/);
  });
});
