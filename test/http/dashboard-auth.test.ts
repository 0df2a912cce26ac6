import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { codeIn } from '../helpers/smtp-sink.ts';

/**
 * The dashboard session as a credential: the cookie (with its anti-forgery token) and the bearer
 * form on /v1 and {app_url}/api, project selection and isolation, passwords, the per-address and
 * per-IP sign-in limits, forgot-password links, sign-out and the session list.
 */

let server: TestServer;
let ann: SignupResult;
let eve: SignupResult; // another account: nothing of hers is reachable with Ann's session
beforeAll(async () => {
  // the tests are the proxy in front (loopback): each sign-in comes from the address it forwards
  server = await startTestServer({ POSTHORN_TRUST_PROXY: 'loopback' });
  [ann, eve] = await Promise.all([server.signupConfirmed(), server.signupConfirmed()]);
});
afterAll(() => server?.close());

interface Session {
  token: string;
  csrf: string;
  id: string;
  setCookie: string;
}

let ipCounter = 0;
/** A distinct client address per caller (the app trusts X-Forwarded-For), so limits do not mix. */
const freshIp = () => `198.51.100.${++ipCounter}`;

/** Signs in by emailed code, as the dashboard does. */
async function signIn(email: string, ip = freshIp()): Promise<Session> {
  const since = server.sink.messages.length;
  const start = await server.call('POST', '/api/auth/login', { body: { email } });
  expect(start.status).toBe(200);
  const message = await server.sink.waitFor(
    (m) =>
      m.to.includes(email) &&
      /login code/i.test(m.parsed.subject ?? '') &&
      server.sink.messages.indexOf(m) >= since,
  );
  const code = codeIn(message);
  const res = await server.call('POST', '/api/auth/login/verify', {
    body: { email, code },
    headers: { 'x-forwarded-for': ip },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return sessionFrom(res);
}

function sessionFrom(res: { body: any; headers: Headers }): Session {
  return {
    token: res.body.token,
    csrf: res.body.csrf_token,
    id: res.body.id,
    setCookie: res.headers.get('set-cookie') ?? '',
  };
}

/** Calls with the session cookie, as a browser would; `csrf` adds the anti-forgery header. */
function withCookie(
  s: Session,
  method: string,
  path: string,
  opts: { body?: unknown; csrf?: string | false; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { cookie: `posthorn_session=${s.token}`, ...(opts.headers ?? {}) };
  const csrf = opts.csrf === undefined ? s.csrf : opts.csrf;
  if (csrf) headers['x-csrf-token'] = csrf;
  return server.call(method, path, { body: opts.body, headers });
}

const loginWithPassword = (email: string, password: string, ip: string) =>
  server.call('POST', '/api/auth/login/password', {
    body: { email, password },
    headers: { 'x-forwarded-for': ip },
  });

describe('the session cookie', () => {
  let s: Session;
  beforeAll(async () => {
    s = await signIn(ann.account.email);
  });

  it('is httpOnly, SameSite=Lax, Path=/ and not Secure over http; the token and csrf_token come in the body too', () => {
    expect(s.token).toMatch(/^phs_[0-9A-Za-z]+$/);
    expect(s.csrf.length).toBeGreaterThan(20);
    expect(s.setCookie).toContain(`posthorn_session=${s.token}`);
    for (const part of ['HttpOnly', 'SameSite=Lax', 'Path=/']) expect(s.setCookie).toContain(part);
    expect(s.setCookie).not.toContain('Secure');
  });

  it('GET /api/session names the person, the same csrf_token, and the projects with the role', async () => {
    const res = await withCookie(s, 'GET', '/api/session');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'session',
      id: s.id,
      csrf_token: s.csrf,
      account: { id: ann.account.id, email: ann.account.email, has_password: false },
    });
    expect(res.body.projects).toEqual([expect.objectContaining({ id: ann.project.id, role: 'owner' })]);
  });

  it('acts on /v1 as the person: the only project is selected, reads need no anti-forgery token', async () => {
    const me = await withCookie(s, 'GET', '/v1/me', { csrf: false });
    expect(me.status).toBe(200);
    expect(me.body.project.id).toBe(ann.project.id);
  });

  it('a change without the anti-forgery token, or with a wrong one, is 403 and changes nothing', async () => {
    const email = `csrf-${Date.now()}@example.com`;
    expectError(
      await withCookie(s, 'POST', '/v1/contacts', { body: { email }, csrf: false }),
      403,
      /X-CSRF-Token/,
    );
    expectError(
      await withCookie(s, 'POST', '/v1/contacts', { body: { email }, csrf: `${s.csrf.slice(0, -2)}xx` }),
      403,
      /X-CSRF-Token/,
    );
    // the csrf token of another session does not fit this one
    const other = await signIn(ann.account.email);
    expectError(await withCookie(s, 'POST', '/v1/contacts', { body: { email }, csrf: other.csrf }), 403);
    const list = await server.call('GET', `/v1/contacts?email=${encodeURIComponent(email)}`, {
      key: ann.project_key.key,
    });
    expect(JSON.stringify(list.body)).not.toContain(email);

    const ok = await withCookie(s, 'POST', '/v1/contacts', { body: { email } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.email).toBe(email);
  });

  it('a form posted across sites with the cookie and no token is 403 (before its body is even read)', async () => {
    const res = await server.call('POST', `/api/teams/${ann.project.id}/api-keys`, {
      body: 'name=evil',
      headers: {
        cookie: `posthorn_session=${s.token}`,
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'https://evil.example',
      },
    });
    expectError(res, 403, /X-CSRF-Token/);
    const keys = await server.call('GET', `/v1/projects/${ann.project.id}/api-keys`, {
      key: ann.account_key.key,
    });
    expect(keys.body.data.map((k: { name: string }) => k.name)).not.toContain('evil');
  });

  it('the bearer form needs no anti-forgery token (no cookie, nothing a forged form could send)', async () => {
    const res = await server.call('POST', '/v1/contacts', {
      key: s.token,
      body: { email: `bearer-${Date.now()}@example.com` },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const key = await server.call('POST', `/v1/projects/${ann.project.id}/api-keys`, {
      key: s.token,
      body: { name: 'made with a session' },
    });
    expect(key.status).toBe(200);
    expect(key.body.key).toMatch(/^ph_/);
  });

  it('an API key keeps working with no cookie and no anti-forgery token', async () => {
    const res = await server.call('POST', '/v1/contacts', {
      key: ann.project_key.key,
      body: { email: `key-${Date.now()}@example.com` },
    });
    expect(res.status).toBe(200);
  });
});

describe('project isolation', () => {
  let s: Session;
  let eveContact: string;
  beforeAll(async () => {
    s = await signIn(ann.account.email);
    const c = await server.call('POST', '/v1/contacts', {
      key: eve.project_key.key,
      body: { email: `eve-contact-${Date.now()}@example.com` },
    });
    eveContact = c.body.id;
  });

  it("a session cannot reach another account's project: 404 on every door", async () => {
    expectError(await withCookie(s, 'GET', '/v1/me', { headers: { 'x-project-id': eve.project.id } }), 404);
    expectError(await withCookie(s, 'GET', `/v1/contacts/${eveContact}`), 404);
    expectError(await withCookie(s, 'GET', `/v1/projects/${eve.project.id}/api-keys`), 404);
    expectError(
      await withCookie(s, 'POST', `/v1/projects/${eve.project.id}/api-keys`, { body: { name: 'x' } }),
      404,
    );
    expectError(
      await withCookie(s, 'POST', `/api/teams/${eve.project.id}/api-keys`, { body: { name: 'x' } }),
      404,
    );
    expectError(await withCookie(s, 'GET', `/api/projects/${eve.project.id}/members`), 404);
    expectError(await withCookie(s, 'GET', '/v1/me', { headers: { 'x-project-id': 'not-a-uuid' } }), 400);
    const mine = await server.call('GET', `/v1/contacts/${eveContact}`, { key: eve.project_key.key });
    expect(mine.status).toBe(200);
  });

  it('with two projects X-Project-Id is required (400 listing them) and chooses the project', async () => {
    const second = await withCookie(s, 'POST', '/v1/projects', { body: { name: 'Ann two' } });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    const missing = await withCookie(s, 'GET', '/v1/me');
    expectError(missing, 400, /X-Project-Id/);
    for (const text of [ann.project.id, second.body.id, 'Ann two'])
      expect(missing.body.error).toContain(text);
    for (const id of [ann.project.id, second.body.id]) {
      const me = await withCookie(s, 'GET', '/v1/me', { headers: { 'x-project-id': id } });
      expect(me.status).toBe(200);
      expect(me.body.project.id).toBe(id);
    }
  });
});

describe('passwords and sign-in limits', () => {
  const password = 'correct horse battery';
  let dan: SignupResult;
  let s: Session;
  beforeAll(async () => {
    dan = await server.signupConfirmed();
    s = await signIn(dan.account.email);
  });

  it('sets a password (at least 10 characters) when signed in; it then signs in', async () => {
    expectError(
      await withCookie(s, 'POST', '/api/auth/password', { body: { password: 'short' } }),
      400,
      /password/,
    );
    expectError(await withCookie(s, 'POST', '/api/auth/password', { body: { password }, csrf: false }), 403);
    // a second device, signed out by the change
    const other = await signIn(dan.account.email);
    const set = await withCookie(s, 'POST', '/api/auth/password', { body: { password } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toMatchObject({ id: dan.account.id, has_password: true });
    expectError(await server.call('GET', '/api/session', { key: other.token }), 401);
    expect((await server.call('GET', '/api/session', { key: s.token })).status).toBe(200);

    const res = await loginWithPassword(dan.account.email.toUpperCase(), password, freshIp());
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.token).toMatch(/^phs_/);
    expect(res.headers.get('set-cookie')).toContain('HttpOnly');
    const session = await server.call('GET', '/api/session', { key: res.body.token });
    expect(session.body.account).toMatchObject({ id: dan.account.id, has_password: true });
  });

  it('answers a wrong password, an unknown address and an account without a password alike (401)', async () => {
    const ip = freshIp();
    const wrong = await loginWithPassword(dan.account.email, 'not the password', ip);
    const unknown = await loginWithPassword(`nobody-${Date.now()}@example.com`, password, ip);
    const noPassword = await loginWithPassword(eve.account.email, password, ip);
    expectError(wrong, 401);
    expectError(unknown, 401);
    expectError(noPassword, 401);
    expect(unknown.body.error).toBe(wrong.body.error);
    expect(noPassword.body.error).toBe(wrong.body.error);
  });

  it('after 5 failures for an address, even the right password is 429 with Retry-After; other addresses are not', async () => {
    const victim = await server.signupConfirmed();
    const vs = await signIn(victim.account.email);
    expect((await withCookie(vs, 'POST', '/api/auth/password', { body: { password } })).status).toBe(200);
    for (let i = 0; i < 5; i++)
      expectError(await loginWithPassword(victim.account.email, `wrong guess ${i}`, freshIp()), 401);
    const blocked = await loginWithPassword(victim.account.email, password, freshIp());
    expectError(blocked, 429, /Too many failed sign-ins/);
    const retry = Number(blocked.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(15 * 60);
    // wrong codes count for the address too
    expectError(
      await server.call('POST', '/api/auth/login/verify', {
        body: { email: victim.account.email, code: 'AAAAAA' },
        headers: { 'x-forwarded-for': freshIp() },
      }),
      429,
    );
    expect((await loginWithPassword(dan.account.email, password, freshIp())).status).toBe(200);
  });

  it('after 20 failures from one IP, that IP is refused (429) for any address; other IPs are not', async () => {
    const ip = freshIp();
    for (let i = 0; i < 20; i++)
      expectError(await loginWithPassword(`spray-${i}-${Date.now()}@example.com`, password, ip), 401);
    const blocked = await loginWithPassword(dan.account.email, password, ip);
    expectError(blocked, 429, /from this network/);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await loginWithPassword(dan.account.email, password, freshIp())).status).toBe(200);
  });
});

describe('forgot password', () => {
  let kim: SignupResult;
  beforeAll(async () => {
    kim = await server.signupConfirmed();
  });

  /** Asks for a reset link and returns its token, read from the email. */
  async function resetToken(email: string): Promise<string> {
    const since = server.sink.messages.length;
    const res = await server.call('POST', '/api/auth/forgot', { body: { email } });
    expect(res.status).toBe(200);
    const m = await server.sink.waitFor(
      (x) =>
        x.to.includes(email) &&
        /reset/i.test(x.parsed.subject ?? '') &&
        server.sink.messages.indexOf(x) >= since,
    );
    const link = new RegExp(`${server.runtime.ctx.config.appUrl}/reset\\?token=([0-9A-Za-z]+)`).exec(
      m.parsed.text ?? '',
    );
    expect(link, m.parsed.text).not.toBeNull();
    return (link as RegExpExecArray)[1];
  }

  it('answers 200 the same for an unknown address, and sends it nothing', async () => {
    const unknown = `nobody-reset-${Date.now()}@example.com`;
    const a = await server.call('POST', '/api/auth/forgot', { body: { email: unknown } });
    const b = await server.call('POST', '/api/auth/forgot', { body: { email: kim.account.email } });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(Object.keys(a.body).sort()).toEqual(Object.keys(b.body).sort());
    expect(a.body.expires_in_minutes).toBe(60);
    expectError(await server.call('POST', '/api/auth/forgot', { body: { email: 'not an address' } }), 400);
    expect(server.sink.messages.some((m) => m.to.includes(unknown))).toBe(false);
  });

  it('a link sets the password once, signs every session out; used again it says so', async () => {
    const s = await signIn(kim.account.email);
    // one link a minute per account: the previous test already asked for one
    await server.runtime.ctx.db
      .deleteFrom('password_resets')
      .where('account_id', '=', kim.account.id)
      .execute();
    const token = await resetToken(kim.account.email);
    expectError(
      await server.call('POST', '/api/auth/reset', { body: { token, password: 'short' } }),
      400,
      /password/,
    );
    const res = await server.call('POST', '/api/auth/reset', {
      body: { token, password: 'a brand new password' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ object: 'password_reset', account_id: kim.account.id });
    expectError(await server.call('GET', '/api/session', { key: s.token }), 401);
    expect((await loginWithPassword(kim.account.email, 'a brand new password', freshIp())).status).toBe(200);

    const again = await server.call('POST', '/api/auth/reset', {
      body: { token, password: 'yet another password' },
    });
    expectError(again, 400, /already been used/);
    expectError(await loginWithPassword(kim.account.email, 'yet another password', freshIp()), 401);
  });

  it('an expired link says it expired; a made-up one is refused', async () => {
    await server.runtime.ctx.db
      .deleteFrom('password_resets')
      .where('account_id', '=', kim.account.id)
      .execute();
    const token = await resetToken(kim.account.email);
    await server.runtime.ctx.db
      .updateTable('password_resets')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('account_id', '=', kim.account.id)
      .execute();
    expectError(
      await server.call('POST', '/api/auth/reset', { body: { token, password: 'expired link password' } }),
      400,
      /expired/,
    );
    expectError(
      await server.call('POST', '/api/auth/reset', {
        body: { token: 'x'.repeat(43), password: 'whatever password' },
      }),
      400,
      /not valid/,
    );
    expectError(await loginWithPassword(kim.account.email, 'expired link password', freshIp()), 401);
  });
});

describe('sign-out and sessions', () => {
  it('lists the sessions (current marked), revokes another, and signs out clearing the cookie', async () => {
    const lee = await server.signupConfirmed();
    const phone = await signIn(lee.account.email);
    const laptop = await signIn(lee.account.email);
    const list = await withCookie(laptop, 'GET', '/api/sessions');
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: { id: string }) => x.id).sort()).toEqual([phone.id, laptop.id].sort());
    expect(list.body.data.find((x: { id: string }) => x.id === laptop.id).current).toBe(true);
    expect(list.body.data.find((x: { id: string }) => x.id === phone.id)).toMatchObject({
      current: false,
      ip: expect.any(String),
    });

    // someone else's session, and no session at all, are 404
    const other = await signIn(eve.account.email);
    expectError(await withCookie(laptop, 'DELETE', `/api/sessions/${other.id}`), 404);
    expectError(await withCookie(laptop, 'DELETE', '/api/sessions/not-a-uuid'), 404);
    expect((await server.call('GET', '/api/session', { key: other.token })).status).toBe(200);

    expectError(await withCookie(laptop, 'DELETE', `/api/sessions/${phone.id}`, { csrf: false }), 403);
    expect((await withCookie(laptop, 'DELETE', `/api/sessions/${phone.id}`)).status).toBe(204);
    expectError(await withCookie(phone, 'GET', '/v1/me'), 401);

    expectError(await withCookie(laptop, 'POST', '/api/auth/logout', { csrf: false }), 403);
    const out = await withCookie(laptop, 'POST', '/api/auth/logout');
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/posthorn_session=;.*Max-Age=0/);
    expectError(await withCookie(laptop, 'GET', '/api/session'), 401);
    expectError(await withCookie(laptop, 'GET', '/v1/me'), 401);
  });
});

describe('over https', () => {
  let secure: TestServer;
  beforeAll(async () => {
    secure = await startTestServer({ POSTHORN_APP_URL: 'https://app.posthorn.test' });
  });
  afterAll(() => secure?.close());

  it('the session cookie is Secure', async () => {
    const who = await secure.signupConfirmed();
    const since = secure.sink.messages.length;
    await secure.call('POST', '/api/auth/login', { body: { email: who.account.email } });
    const code = await secure.codeFor(who.account.email, since);
    const res = await secure.call('POST', '/api/auth/login/verify', {
      body: { email: who.account.email, code },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toMatch(/posthorn_session=phs_\w+;.*; Secure/);
  });
});
