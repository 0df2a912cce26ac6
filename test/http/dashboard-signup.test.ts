import { tmpdir } from 'node:os';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { codeIn } from '../helpers/smtp-sink.ts';

/**
 * Sign-up from the dashboard (`POST /api/auth/signup`): one email with one code, which confirms the
 * address and signs in through `POST /api/auth/login/verify`; the same answer for an address that
 * has an account; bad input refused with `{error}` and nothing written. And `GET /api/session`
 * signed out: 200 with null, so a signed-out page load is no error.
 */

let server: TestServer;
let ann: SignupResult;
beforeAll(async () => {
  server = await startTestServer({ POSTHORN_TRUST_PROXY: 'loopback' });
  ann = await server.signupConfirmed({ name: 'Ann Existing' });
});
afterAll(() => server?.close());

const signUp = (body: unknown, ip = '198.51.100.7') =>
  server.call('POST', '/api/auth/signup', { body, headers: { 'x-forwarded-for': ip } });

/** What a sign-up may have written: accounts, signup jobs and system emails (to an address). */
async function written(email: string) {
  const db = server.runtime.ctx.db;
  const accounts = await db
    .selectFrom('accounts')
    .select(db.fn.countAll<string>().as('n'))
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirstOrThrow();
  const jobs = await sql<{ n: number }>`
    select count(*)::int as n from graphile_worker._private_jobs j
    join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'send_signup_code' and lower(j.payload->>'email') = ${email.toLowerCase()}`.execute(
    db,
  );
  const mails = await db
    .selectFrom('emails')
    .select(['subject'])
    .where('stream', '=', 'system')
    .where('recipients', '@>', sql<string[]>`array[${email.toLowerCase()}]`)
    .execute();
  return { accounts: Number(accounts.n), jobs: jobs.rows[0].n, mails: mails.map((m) => m.subject) };
}

describe('POST /api/auth/signup', () => {
  it('refuses bad input with {error} and writes nothing', async () => {
    const email = 'bad-input@example.com';
    const cases: [unknown, RegExp][] = [
      [{ email, name: 'Bea', accept_terms: false }, /accept_terms/],
      [{ email, name: 'Bea', accept_terms: 'true' }, /accept_terms/], // a string is not the person's true
      [{ email, name: 'Bea' }, /accept_terms/],
      [{ email, accept_terms: true }, /name/],
      [{ email, name: '', accept_terms: true }, /name/],
      [{ email, name: '   ', accept_terms: true }, /name/],
      [{ email, name: 'x'.repeat(201), accept_terms: true }, /name/],
      [{ email: 'not-an-address', name: 'Bea', accept_terms: true }, /email/],
      [{ email: 'Bea <bea@example.com>', name: 'Bea', accept_terms: true }, /email/],
      [{ name: 'Bea', accept_terms: true }, /email/],
      [{ email: `${'x'.repeat(250)}@example.com`, name: 'Bea', accept_terms: true }, /email/],
      [[email], /body must be a JSON object/],
    ];
    for (const [body, message] of cases) expectError(await signUp(body), 400, message);
    expectError(await signUp('{"email":'), 400);
    const form = await server.call('POST', '/api/auth/signup', {
      body: 'email=bad-input%40example.com&name=Bea&accept_terms=true',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectError(form, 415);
    expect(await written(email)).toEqual({ accounts: 0, jobs: 0, mails: [] });
  });

  it('a new address: one email with one code, which confirms the address and signs in', async () => {
    const email = 'New.Person@example.com';
    const since = server.sink.messages.length;
    const res = await signUp({ email, name: '  New Person ', accept_terms: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ sent: true, email: 'New.Person@example.com', expires_in_minutes: 30 });
    const message = await server.sink.waitFor(
      (m) => m.to.includes(email) && server.sink.messages.indexOf(m) >= since,
    );
    expect(message.parsed.subject).toMatch(/^Your Posthorn code: \w{6}$/);
    expect(message.parsed.text).toContain('confirms this address and signs you in');
    const after = await written(email);
    expect(after.accounts).toBe(1);
    expect(after.mails).toEqual([message.parsed.subject]); // one email, no second code

    const account = await server.runtime.ctx.db
      .selectFrom('accounts')
      .selectAll()
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    expect(account).toMatchObject({ name: 'New Person', email_confirmed_at: null });
    expect(account.terms_accepted_at).toBeInstanceOf(Date);
    // a workspace with its starter project, and no key nobody was shown
    const keys = await server.runtime.ctx.db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', account.id)
      .execute();
    expect(keys).toEqual([]);

    const verified = await server.call('POST', '/api/auth/login/verify', {
      body: { email, code: codeIn(message).toLowerCase() },
    });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    expect(verified.headers.get('set-cookie')).toContain(`posthorn_session=${verified.body.token}`);
    const session = await server.call('GET', '/api/session', {
      headers: { cookie: `posthorn_session=${verified.body.token}` },
    });
    expect(session.status).toBe(200);
    expect(session.body.account).toMatchObject({ email, name: 'New Person', email_confirmed: true });
    expect(session.body.projects).toHaveLength(1);
    expect(session.body.projects[0].role).toBe('owner');
    // the code is spent
    expectError(
      await server.call('POST', '/api/auth/login/verify', { body: { email, code: codeIn(message) } }),
      400,
    );
  });

  it('an address with an account: the same answer, the account unchanged, and a login code', async () => {
    const email = ann.account.email.toUpperCase();
    const before = await written(ann.account.email);
    const since = server.sink.messages.length;
    const res = await signUp({ email, name: 'Someone Else', accept_terms: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['email', 'expires_in_minutes', 'sent']);
    expect(res.body.sent).toBe(true);
    const message = await server.sink.waitFor(
      (m) => m.to.includes(ann.account.email) && server.sink.messages.indexOf(m) >= since,
    );
    expect(message.parsed.subject).toMatch(/^Your Posthorn login code: \w{6}$/);
    const after = await written(ann.account.email);
    expect(after.accounts).toBe(1);
    expect(after.mails).toHaveLength(before.mails.length + 1);
    const row = await server.runtime.ctx.db
      .selectFrom('accounts')
      .select('name')
      .where('id', '=', ann.account.id)
      .executeTakeFirstOrThrow();
    expect(row.name).toBe('Ann Existing');
    const verified = await server.call('POST', '/api/auth/login/verify', {
      body: { email: ann.account.email, code: codeIn(message) },
    });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    expect(verified.body.account_id).toBe(ann.account.id);
  });

  it('is refused (429) while the address is locked out of sign-in, and queues nothing', async () => {
    const email = 'locked-out@example.com';
    await server.runtime.ctx.db
      .insertInto('login_failures')
      .values(Array.from({ length: 5 }, () => ({ email, ip: '203.0.113.9' })))
      .execute();
    expectError(await signUp({ email, name: 'Locked', accept_terms: true }), 429, /Too many failed sign-ins/);
    expect(await written(email)).toEqual({ accounts: 0, jobs: 0, mails: [] });
  });
});

describe('GET /api/session', () => {
  it('signed out (no cookie, no Authorization): 200 with null', async () => {
    const res = await server.call('GET', '/api/session');
    expect(res.status).toBe(200);
    expect(res.body).toBeNull();
    expect(res.headers.get('content-type')).toContain('application/json');
  });

  it('a session that has ended is still 401, and an API key 403', async () => {
    expectError(
      await server.call('GET', '/api/session', { headers: { cookie: 'posthorn_session=phs_notasession' } }),
      401,
    );
    expectError(await server.call('GET', '/api/session', { key: 'phs_notasession' }), 401);
    expectError(await server.call('GET', '/api/session', { key: ann.account_key.key }), 403);
  });
});

describe('/terms, where the terms boxes link', () => {
  it('without POSTHORN_TERMS_URL: a page saying no terms are published, under the public pages’ policy', async () => {
    const res = await fetch(`${server.url}/terms`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(await res.text()).toContain('POSTHORN_TERMS_URL');
  });

  it('with POSTHORN_TERMS_URL: a redirect there', async () => {
    const other = await startTestServer({ POSTHORN_TERMS_URL: 'https://example.org/legal/terms' }, ['api']);
    try {
      const res = await fetch(`${other.url}/terms`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('https://example.org/legal/terms');
    } finally {
      await other.close();
    }
  });

  it('a POSTHORN_TERMS_URL that is not an http(s) URL stops the start', () => {
    const env = { POSTHORN_SECRET: 'x'.repeat(40), POSTHORN_DATA_DIR: tmpdir() };
    for (const bad of ['javascript:alert(1)', 'terms.html', 'ftp://example.org/terms'])
      expect(() => loadConfig({ ...env, POSTHORN_TERMS_URL: bad })).toThrow(
        /POSTHORN_TERMS_URL must be an http\(s\) URL/,
      );
    expect(loadConfig({ ...env, POSTHORN_TERMS_URL: '' }).termsUrl).toBeUndefined();
  });
});
