import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNUPS_PER_EMAIL } from '../../src/domain/accounts/signup-guard.ts';
import { expectError } from '../helpers/assertions.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * POST /v1/signup says 409 when an address has an account (the spec's answer gives keys at once,
 * so it cannot hide that): issue 47, item 7c limits sign-up attempts per client address
 * (POSTHORN_SIGNUP_LIMIT an hour) and per email address (SIGNUPS_PER_EMAIL an hour), each a 429
 * with Retry-After that writes nothing, and tells the existing account by email that someone
 * tried to sign up with its address. The tests are the proxy in front (loopback): each request
 * comes from the address it forwards.
 */

const PER_IP = 3;
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ POSTHORN_TRUST_PROXY: 'loopback', POSTHORN_SIGNUP_LIMIT: String(PER_IP) });
});
afterAll(() => server?.close());

let ipCounter = 0;
const freshIp = () => `198.51.100.${++ipCounter}`;

const signUp = (email: string, ip: string) =>
  server.call('POST', '/v1/signup', {
    body: { email, name: 'Sam', accept_terms: true },
    headers: { 'x-forwarded-for': ip },
  });

const accounts = async () =>
  Number(
    (
      await server.runtime.ctx.db
        .selectFrom('accounts')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('POST /v1/signup limits', () => {
  it(`takes ${PER_IP} attempts an hour from one client address, then 429 with Retry-After, writing nothing`, async () => {
    const ip = freshIp();
    for (let i = 0; i < PER_IP; i++)
      expect((await signUp(`spree-${i}-${Date.now()}@example.com`, ip)).status).toBe(200);
    const before = await accounts();
    const refused = await signUp(`spree-last-${Date.now()}@example.com`, ip);
    expectError(refused, 429, /Too many sign-up attempts from this network.*try again in \d+ minutes?/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await accounts()).toBe(before);
    // another client is not held by it; bad input is still a 400 first and is not counted
    expectError(await signUp('not an address', ip), 400, /email/);
    expect((await signUp(`other-${Date.now()}@example.com`, freshIp())).status).toBe(200);
  });

  it('answers 409 for an address with an account and tells that account by email, then 429 per address', async () => {
    const email = `taken-${Date.now()}@example.com`;
    expect((await signUp(email, freshIp())).status).toBe(200);
    const since = server.sink.messages.length;
    for (let i = 1; i < SIGNUPS_PER_EMAIL; i++)
      expectError(await signUp(email.toUpperCase(), freshIp()), 409, /already exists/);
    const notice = await server.sink.waitFor(
      (m) =>
        m.to.includes(email) &&
        /sign up/i.test(m.parsed.subject ?? '') &&
        server.sink.messages.indexOf(m) >= since,
    );
    expect(notice.parsed.text).toMatch(/Someone tried to create a Posthorn account with this address/);
    expect(notice.parsed.text).toMatch(/198\.51\.100\.\d+/);
    const refused = await signUp(email, freshIp());
    expectError(refused, 429, /Too many sign-up attempts for this address/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
