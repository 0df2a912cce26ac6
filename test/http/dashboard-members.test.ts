import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { type Session, signInByCode } from '../helpers/sessions.ts';

/**
 * Members and roles through the dashboard: invitations (accepted by a new or an existing account),
 * what a Member may and may not do on /v1 and {app_url}/api, role changes, removal and leaving,
 * and the last-Owner rule on every door.
 */

let server: TestServer;
let owner: SignupResult;
let os: Session; // the owner's session
beforeAll(async () => {
  server = await startTestServer();
  owner = await server.signupConfirmed();
  os = await signIn(owner.account.email);
});
afterAll(() => server?.close());

const signIn = (email: string) => signInByCode(server, email);

/** A browser call: the session cookie and, for changes, the anti-forgery header. */
function as(s: Session, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return server.call(method, path, {
    body,
    headers: { cookie: `posthorn_session=${s.token}`, 'x-csrf-token': s.csrf, ...headers },
  });
}

/** Invites an address and returns the token of the link emailed to it. */
async function invite(by: Session, projectId: string, email: string, role: string): Promise<string> {
  const since = server.sink.messages.length;
  const res = await as(by, 'POST', `/api/projects/${projectId}/invitations`, { email, role });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body).toMatchObject({
    object: 'invitation',
    email,
    role,
    status: 'pending',
    project_id: projectId,
  });
  expect(res.body).not.toHaveProperty('token');
  const m = await server.sink.waitFor(
    (x) => x.to.includes(email) && server.sink.messages.indexOf(x) >= since,
  );
  const link = new RegExp(`${server.runtime.ctx.config.appUrl}/invite\\?token=([0-9A-Za-z]+)`).exec(
    m.parsed.text ?? '',
  );
  expect(link, m.parsed.text).not.toBeNull();
  return (link as RegExpExecArray)[1];
}

const accept = (token: string, body: unknown, s?: Session) =>
  s
    ? as(s, 'POST', `/api/invitations/${token}/accept`, body)
    : server.call('POST', `/api/invitations/${token}/accept`, { body });

const roleOf = async (projectId: string, accountId: string) =>
  (await as(os, 'GET', `/api/projects/${projectId}/members`)).body.data.find(
    (m: { account_id: string }) => m.account_id === accountId,
  )?.role;

describe('an invitation accepted by someone new', () => {
  const email = `newcomer-${Date.now()}@example.com`;
  let token: string;
  let ms: Session; // the new Member's session

  it('describes itself: project, role, inviter, and that the address has no account', async () => {
    token = await invite(os, owner.project.id, email, 'member');
    const res = await server.call('GET', `/api/invitations/${token}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'invitation',
      email,
      role: 'member',
      status: 'pending',
      project: { id: owner.project.id, name: owner.project.name },
      invited_by: { email: owner.account.email },
      account_exists: false,
    });
    expectError(await server.call('GET', `/api/invitations/${'x'.repeat(43)}`), 404);
  });

  it("creates the account only with the person's own accept_terms: true, and signs it in", async () => {
    expectError(await accept(token, {}), 400, /accept_terms/);
    expectError(await accept(token, { accept_terms: false }), 400, /accept_terms/);
    const res = await accept(token, { accept_terms: true, name: 'New Comer' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.account).toMatchObject({ email, name: 'New Comer', email_confirmed: true });
    expect(res.body.project).toMatchObject({ id: owner.project.id, role: 'member' });
    expect(res.body.session.token).toMatch(/^phs_/);
    expect(res.headers.get('set-cookie')).toContain(`posthorn_session=${res.body.session.token}`);
    ms = { token: res.body.session.token, csrf: res.body.session.csrf_token };
    expect(await roleOf(owner.project.id, res.body.account.id)).toBe('member');
    expectError(await accept(token, { accept_terms: true }), 400, /already been accepted/);
    expect((await server.call('GET', `/api/invitations/${token}`)).body.status).toBe('accepted');
  });

  it('the Member reads and sends, but cannot manage keys, domains, webhooks, members or settings (403)', async () => {
    const session = await as(ms, 'GET', '/api/session');
    expect(session.body.projects).toEqual([
      expect.objectContaining({ id: owner.project.id, role: 'member' }),
    ]);
    const me = await as(ms, 'GET', '/v1/me');
    expect(me.status).toBe(200);
    expect(me.body.project.id).toBe(owner.project.id);
    for (const path of ['/v1/contacts', '/v1/domains', '/v1/webhooks', '/v1/limits', '/v1/emails'])
      expect((await as(ms, 'GET', path)).status, path).toBe(200);
    const contact = await as(ms, 'POST', '/v1/contacts', { email: `by-member-${Date.now()}@example.com` });
    expect(contact.status, JSON.stringify(contact.body)).toBe(200);
    const list = await as(ms, 'POST', '/v1/lists', { name: 'Member list' });
    expect(list.status, JSON.stringify(list.body)).toBe(200);

    const p = owner.project.id;
    const refused: [string, string, unknown][] = [
      ['POST', `/v1/projects/${p}/api-keys`, { name: 'by member' }],
      ['GET', `/v1/projects/${p}/api-keys`, undefined],
      ['POST', `/api/teams/${p}/api-keys`, { name: 'by member' }],
      ['POST', '/v1/domains', { domain: 'member.example.com' }],
      ['POST', `/v1/projects/${p}/domains`, { domain: 'member.example.com' }],
      ['POST', '/v1/webhooks', { url: 'https://example.com/hook', events: ['email.sent'] }],
      ['PATCH', '/v1/me/footer', { address: '1 Member Street, Springfield' }],
      ['PATCH', '/v1/me/sending-rate', { per_second: 5 }],
      ['GET', `/api/projects/${p}/invitations`, undefined],
      ['POST', `/api/projects/${p}/invitations`, { email: 'friend@example.com', role: 'member' }],
      ['PATCH', `/api/projects/${p}/members/${owner.account.id}`, { role: 'member' }],
    ];
    for (const [method, path, body] of refused)
      expectError(await as(ms, method, path, body), 403, /needs the Owner or Admin role.*Member/);
    // a Member sees who is on the project, through either door, but not the pending invitations
    for (const path of [`/v1/projects/${p}/members`, `/api/projects/${p}/members`]) {
      const members = await as(ms, 'GET', path);
      expect(members.status, path).toBe(200);
      expect(members.body.data.map((m: { role: string }) => m.role).sort()).toEqual(['member', 'owner']);
    }
    const keys = await server.call('GET', `/v1/projects/${p}/api-keys`, { key: owner.account_key.key });
    expect(keys.body.data.map((k: { name: string }) => k.name)).not.toContain('by member');
    expectError(await as(ms, 'DELETE', `/api/projects/${p}/members/${owner.account.id}`), 403);
    expect(await roleOf(p, owner.account.id)).toBe('owner');
  });

  it('an expired invitation says so', async () => {
    const late = `late-${Date.now()}@example.com`;
    const t = await invite(os, owner.project.id, late, 'admin');
    await server.runtime.ctx.db
      .updateTable('invitations')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('email', '=', late)
      .execute();
    expect((await server.call('GET', `/api/invitations/${t}`)).body.status).toBe('expired');
    expectError(await accept(t, { accept_terms: true }), 400, /expired/);
  });
});

describe('pending invitations', () => {
  it('are listed for Owners and Admins (not expired or accepted ones) and can be withdrawn: the link then is 404', async () => {
    const p = owner.project.id;
    const waiting = `waiting-${Date.now()}@example.com`;
    const t = await invite(os, p, waiting, 'admin');
    const listed = await as(os, 'GET', `/api/projects/${p}/invitations`);
    expect(listed.status).toBe(200);
    const emails = listed.body.data.map((i: { email: string }) => i.email);
    expect(emails[0]).toBe(waiting);
    expect(listed.body.data.every((i: { status: string }) => i.status === 'pending')).toBe(true);
    const id = listed.body.data[0].id;
    expectError(
      await as(os, 'DELETE', `/api/projects/${p}/invitations/${id}`, undefined, { 'x-csrf-token': '' }),
      403,
    );
    expect((await as(os, 'DELETE', `/api/projects/${p}/invitations/${id}`)).status).toBe(204);
    expectError(await as(os, 'DELETE', `/api/projects/${p}/invitations/${id}`), 404);
    expectError(await as(os, 'DELETE', `/api/projects/${p}/invitations/not-an-id`), 404);
    expectError(await server.call('GET', `/api/invitations/${t}`), 404);
    expectError(await accept(t, { accept_terms: true }), 404);
    const after = await as(os, 'GET', `/api/projects/${p}/invitations`);
    expect(after.body.data.map((i: { email: string }) => i.email)).not.toContain(waiting);
  });
});

describe('an invitation to an existing account', () => {
  let mia: SignupResult;
  let token: string;

  it('needs the invited person signed in, as the invited address', async () => {
    mia = await server.signupConfirmed();
    token = await invite(os, owner.project.id, mia.account.email, 'admin');
    expect((await server.call('GET', `/api/invitations/${token}`)).body.account_exists).toBe(true);
    expectError(await accept(token, { accept_terms: true }), 409, /sign in/);
    const stranger = await server.signupConfirmed();
    const ss = await signIn(stranger.account.email);
    expectError(await accept(token, {}, ss), 403, /signed in as/);
    expectError(
      await accept(token, {}, { ...(await signIn(mia.account.email)), csrf: 'forged' }),
      403,
      /CSRF/,
    );

    const ms = await signIn(mia.account.email);
    const res = await accept(token, {}, ms);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.session).toBeNull();
    expect(res.body.project).toMatchObject({ id: owner.project.id, role: 'admin' });

    // an Admin creates keys and changes settings
    const key = await as(ms, 'POST', `/api/teams/${owner.project.id}/api-keys`, { name: 'by admin' });
    expect(key.status, JSON.stringify(key.body)).toBe(200);
    const me = await server.call('GET', '/v1/me', { key: key.body.key });
    expect(me.body.project.id).toBe(owner.project.id);
    // two projects now: the session names the one it acts in
    expectError(await as(ms, 'GET', '/v1/me'), 400, /X-Project-Id/);
    const footer = await as(
      ms,
      'PATCH',
      '/v1/me/footer',
      { address: '1 Admin Street, Springfield' },
      { 'x-project-id': owner.project.id },
    );
    expect(footer.status, JSON.stringify(footer.body)).toBe(200);
    expect(footer.body.address).toBe('1 Admin Street, Springfield');
  });

  it('inviting a member again is 409; only an Owner invites an Owner', async () => {
    expectError(
      await as(os, 'POST', `/api/projects/${owner.project.id}/invitations`, {
        email: mia.account.email,
        role: 'member',
      }),
      409,
      /already a member/,
    );
    const ms = await signIn(mia.account.email);
    expectError(
      await as(ms, 'POST', `/api/projects/${owner.project.id}/invitations`, {
        email: 'boss@example.com',
        role: 'owner',
      }),
      403,
      /Owner role/,
    );
    expectError(
      await as(os, 'POST', `/api/projects/${owner.project.id}/invitations`, {
        email: 'x@example.com',
        role: 'king',
      }),
      400,
      /role/,
    );
  });
});

describe('roles, removal and the last Owner', () => {
  it('the last Owner can neither leave nor be demoted, on the dashboard API and the account API (409)', async () => {
    const solo = await server.signupConfirmed();
    const ss = await signIn(solo.account.email);
    const p = solo.project.id;
    expectError(
      await as(ss, 'PATCH', `/api/projects/${p}/members/${solo.account.id}`, { role: 'admin' }),
      409,
      /last Owner/,
    );
    expectError(await as(ss, 'DELETE', `/api/projects/${p}/members/${solo.account.id}`), 409, /last Owner/);
    const viaKey = await server.call('POST', `/v1/projects/${p}/members`, {
      key: solo.account_key.key,
      body: { email: solo.account.email, role: 'member' },
    });
    expectError(viaKey, 409, /last Owner/);
    expect(await rolesIn(ss, p)).toEqual({ [solo.account.id]: 'owner' });
  });

  it('an Owner makes a second Owner; then one may leave, and the other is again the last', async () => {
    const first = await server.signupConfirmed();
    const second = await server.signupConfirmed();
    const fs = await signIn(first.account.email);
    const p = first.project.id;
    const t = await invite(fs, p, second.account.email, 'member');
    const ss = await signIn(second.account.email);
    expect((await accept(t, {}, ss)).status).toBe(200);

    // an Admin does not touch the Owner role
    expect(
      (await as(fs, 'PATCH', `/api/projects/${p}/members/${second.account.id}`, { role: 'admin' })).status,
    ).toBe(200);
    expectError(
      await as(
        ss,
        'PATCH',
        `/api/projects/${p}/members/${second.account.id}`,
        { role: 'owner' },
        { 'x-project-id': p },
      ),
      403,
      /Owner role/,
    );
    expectError(
      await as(ss, 'PATCH', `/api/projects/${p}/members/${first.account.id}`, { role: 'member' }),
      403,
      /Owner role/,
    );
    expectError(await as(ss, 'DELETE', `/api/projects/${p}/members/${first.account.id}`), 403, /Owner role/);

    const promoted = await as(fs, 'PATCH', `/api/projects/${p}/members/${second.account.id}`, {
      role: 'owner',
    });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({
      account_id: second.account.id,
      role: 'owner',
      object: 'project_member',
    });

    expect((await as(fs, 'DELETE', `/api/projects/${p}/members/${first.account.id}`)).status).toBe(204);
    expect(await rolesIn(ss, p)).toEqual({ [second.account.id]: 'owner' });
    expectError(await as(fs, 'GET', '/v1/me', undefined, { 'x-project-id': p }), 404);
    expectError(
      await as(ss, 'PATCH', `/api/projects/${p}/members/${second.account.id}`, { role: 'member' }),
      409,
    );
  });

  it('a Member may leave; an Admin removes a Member; an unknown member is 404', async () => {
    const boss = await server.signupConfirmed();
    const bs = await signIn(boss.account.email);
    const p = boss.project.id;
    const joiners = [await server.signupConfirmed(), await server.signupConfirmed()];
    const sessions: Session[] = [];
    for (const j of joiners) {
      const t = await invite(bs, p, j.account.email, 'member');
      const js = await signIn(j.account.email);
      expect((await accept(t, {}, js)).status).toBe(200);
      sessions.push(js);
    }
    const [a, b] = joiners;
    expectError(
      await as(sessions[0], 'DELETE', `/api/projects/${p}/members/${b.account.id}`, undefined, {
        'x-project-id': p,
      }),
      403,
    );
    expect((await as(sessions[0], 'DELETE', `/api/projects/${p}/members/${a.account.id}`)).status).toBe(204);
    expectError(await as(sessions[0], 'GET', '/v1/me', undefined, { 'x-project-id': p }), 404);
    expect((await as(bs, 'DELETE', `/api/projects/${p}/members/${b.account.id}`)).status).toBe(204);
    expectError(await as(sessions[1], 'GET', '/v1/me', undefined, { 'x-project-id': p }), 404);
    expectError(await as(bs, 'DELETE', `/api/projects/${p}/members/${b.account.id}`), 404);
    expectError(await as(bs, 'PATCH', `/api/projects/${p}/members/not-a-uuid`, { role: 'admin' }), 404);
    expect(await rolesIn(bs, p)).toEqual({ [boss.account.id]: 'owner' });
  });
});

async function rolesIn(s: Session, projectId: string) {
  const res = await as(s, 'GET', `/api/projects/${projectId}/members`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Object.fromEntries(
    res.body.data.map((m: { account_id: string; role: string }) => [m.account_id, m.role]),
  );
}
