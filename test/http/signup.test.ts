import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

describe('POST /v1/signup', () => {
  it('creates account, workspace, starter project and two keys, and emails a six-character code', async () => {
    const email = `ann-${Date.now()}@example.com`;
    const res = await server.call('POST', '/v1/signup', { body: { email, name: 'Ann', accept_terms: true } });
    expect(res.status).toBe(200);
    expect(res.body.account).toMatchObject({ object: 'account', email, name: 'Ann', email_confirmed: false });
    expect(res.body.workspace).toMatchObject({ object: 'workspace', plan: 'free' });
    expect(res.body.project).toMatchObject({ object: 'project', workspace_id: res.body.workspace.id });
    expect(res.body.project_key).toMatchObject({
      scope: 'project',
      project_id: res.body.project.id,
      status: 'active',
    });
    expect(res.body.account_key).toMatchObject({ scope: 'all_access', project_id: null });
    expect(res.body.project_key.key).toMatch(/^ph_[0-9A-Za-z]{50}$/);
    expect(res.body.account_key.key).toMatch(/^ph_[0-9A-Za-z]{50}$/);

    const message = await server.sink.waitFor((m) => m.to.includes(email));
    expect(message.parsed.text).toMatch(/code is: [A-Z0-9]{6}/);

    // the secrets are not stored in clear
    const stored = await server.runtime.ctx.db.selectFrom('api_keys').select('secret_hash').execute();
    for (const row of stored)
      expect(row.secret_hash.toString('utf8')).not.toContain(res.body.project_key.key.slice(15, 47));
  });

  it.each([
    [{ email: 'x@example.com', name: 'X' }, /accept_terms.*required/],
    [{ email: 'x@example.com', name: 'X', accept_terms: false }, /accept_terms.*must be true/],
    [{ email: 'x@example.com', name: 'X', accept_terms: 'true' }, /accept_terms.*boolean/],
    [{ email: 'not-an-email', name: 'X', accept_terms: true }, /email.*valid email/],
    [{ name: 'X', accept_terms: true }, /email.*required/],
    [{ email: 'x@example.com', name: '', accept_terms: true }, /name/],
  ])('refuses %j with 400 and writes nothing', async (body, message) => {
    const before = await server.runtime.ctx.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const res = await server.call('POST', '/v1/signup', { body });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
    const after = await server.runtime.ctx.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
  });

  it('refuses a second signup with the same email (any case) with 409', async () => {
    const { account } = await server.signup();
    const res = await server.call('POST', '/v1/signup', {
      body: {
        email: account.email.toUpperCase().replace('EXAMPLE.COM', 'example.com'),
        name: 'Again',
        accept_terms: true,
      },
    });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.stringMatching(/already exists/) });
  });
});

describe('POST /v1/auth/verify-email/code', () => {
  it('confirms the email with the emailed code, using either key', async () => {
    const result = await server.signup();
    const code = await server.codeFor(result.account.email);
    const me = await server.call('GET', '/v1/me', { key: result.project_key.key });
    expect(me.body.sending).toMatchObject({ ready: false, email_confirmed: false });

    const res = await server.call('POST', '/v1/auth/verify-email/code', {
      key: result.account_key.key,
      body: { code: code.toLowerCase() },
    });
    expect(res.status).toBe(200);
    expect(res.body.email_confirmed).toBe(true);
    const after = await server.call('GET', '/v1/me', { key: result.project_key.key });
    expect(after.body.sending).toMatchObject({ ready: true, email_confirmed: true });
  });

  it('answers 400 for a wrong code and locks the code after five wrong tries', async () => {
    const result = await server.signup();
    const code = await server.codeFor(result.account.email);
    const wrong = code === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA';
    for (let i = 0; i < 5; i++) {
      const res = await server.call('POST', '/v1/auth/verify-email/code', {
        key: result.project_key.key,
        body: { code: wrong },
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/incorrect/);
    }
    const locked = await server.call('POST', '/v1/auth/verify-email/code', {
      key: result.project_key.key,
      body: { code },
    });
    expect(locked.status).toBe(400);
    expect(locked.body.error).toMatch(/locked/);
  });

  it('answers 400 for an expired code', async () => {
    const result = await server.signup();
    const code = await server.codeFor(result.account.email);
    await server.runtime.ctx.db
      .updateTable('email_codes')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('account_id', '=', result.account.id)
      .execute();
    const res = await server.call('POST', '/v1/auth/verify-email/code', {
      key: result.project_key.key,
      body: { code },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/expired/);
  });

  it('answers 400 for a malformed code and 401 without a key', async () => {
    const result = await server.signup();
    const bad = await server.call('POST', '/v1/auth/verify-email/code', {
      key: result.project_key.key,
      body: { code: '12' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/six-character/);
    const anonymous = await server.call('POST', '/v1/auth/verify-email/code', { body: { code: 'ABCDEF' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toMatch(/Missing API key/);
  });

  it('resends a new code that works, once a minute at most', async () => {
    const result = await server.signup();
    await server.codeFor(result.account.email);
    const tooSoon = await server.call('POST', '/v1/auth/verify-email/resend', {
      key: result.project_key.key,
    });
    expect(tooSoon.status).toBe(429);
    expect(tooSoon.body.error).toMatch(/minute/);
    await server.runtime.ctx.db
      .updateTable('email_codes')
      .set({ created_at: new Date(Date.now() - 120_000) })
      .where('account_id', '=', result.account.id)
      .execute();
    const count = server.sink.messages.length;
    const res = await server.call('POST', '/v1/auth/verify-email/resend', { key: result.project_key.key });
    expect(res.status).toBe(200);
    const code = await server.codeFor(result.account.email, count);
    const ok = await server.call('POST', '/v1/auth/verify-email/code', {
      key: result.project_key.key,
      body: { code },
    });
    expect(ok.status).toBe(200);
  });
});
