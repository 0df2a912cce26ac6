import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { codeIn } from '../helpers/smtp-sink.ts';

let server: TestServer;
let ann: SignupResult;
let eve: SignupResult; // another account: everything of hers is 404 to Ann
beforeAll(async () => {
  server = await startTestServer();
  [ann, eve] = await Promise.all([server.signup(), server.signup()]);
});
afterAll(() => server?.close());

const as = (who: SignupResult) => ({
  get: (path: string, headers?: Record<string, string>) =>
    server.call('GET', path, { key: who.account_key.key, headers }),
  post: (path: string, body?: unknown) => server.call('POST', path, { key: who.account_key.key, body }),
  del: (path: string) => server.call('DELETE', path, { key: who.account_key.key }),
});

/** The request log is written in batches: reads it until `check` passes. */
const logged = <T>(check: () => Promise<T>) =>
  eventually(check, { timeoutMs: 5_000, intervalMs: 100, message: 'the request log did not catch up' });

const DAY = 86_400_000;
const NIL = '00000000-0000-4000-8000-000000000000';
const ids = (r: { body: any }) => r.body.data.map((x: { id: string }) => x.id);

function expectExpiry(key: { expires_at: string | null }, days?: number | null) {
  if (!days) return expect(key.expires_at).toBeNull();
  expect(Math.abs(Date.parse(key.expires_at as string) - (Date.now() + days * DAY))).toBeLessThan(60_000);
}

describe('workspaces', () => {
  it('lists the signup workspace, and creates one with its starter project (unknown fields ignored)', async () => {
    const list = await as(ann).get('/v1/workspaces');
    expect(list.status).toBe(200);
    expect(ids(list)).toEqual([ann.workspace.id]);

    const res = await as(ann).post('/v1/workspaces', {
      name: 'Side business',
      colour: 'blue',
      plan: 'scale',
    });
    expect(res.status).toBe(200);
    // unknown fields (and fields the caller may not set, like plan) are ignored
    expect(res.body).toMatchObject({
      object: 'workspace',
      name: 'Side business',
      plan: list.body.data[0].plan,
    });
    expect(res.body.project).toMatchObject({ object: 'project', workspace_id: res.body.id });
    expect(res.body.project.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body).not.toHaveProperty('colour');

    const after = await as(ann).get('/v1/workspaces');
    expect(ids(after)).toEqual([ann.workspace.id, res.body.id]);
    for (const w of after.body.data) expect(w).not.toHaveProperty('colour');
    // the starter project is usable at once
    const me = await as(ann).get('/v1/me', { 'x-project-id': res.body.project.id });
    expect(me.status).toBe(200);
  });

  it.each([
    [{}],
    [{ name: '' }],
    [{ name: '   ' }],
    [{ name: 42 }],
  ])('POST /v1/workspaces %j is 400 {error}', async (body) => {
    const before = (await as(eve).get('/v1/workspaces')).body.data.length;
    expectError(await as(eve).post('/v1/workspaces', body), 400, /name/);
    expect((await as(eve).get('/v1/workspaces')).body.data.length).toBe(before);
  });
});

describe('projects', () => {
  it('workspace_id is optional with one workspace, required with two; unknown workspace is 404', async () => {
    const solo = await server.signup();
    const p = await as(solo).post('/v1/projects', { name: 'Second', tier: 'gold', role: 'member' });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({
      object: 'project',
      name: 'Second',
      workspace_id: solo.workspace.id,
      role: 'owner',
    });
    expect(p.body).not.toHaveProperty('tier');
    expectError(await as(solo).post('/v1/projects', {}), 400, /name/);

    const ws = await as(solo).post('/v1/workspaces', { name: 'Two' });
    expectError(await as(solo).post('/v1/projects', { name: 'Where?' }), 400, /workspace_id/);
    const inTwo = await as(solo).post('/v1/projects', { name: 'In two', workspace_id: ws.body.id });
    expect(inTwo.status).toBe(200);
    expect(inTwo.body.workspace_id).toBe(ws.body.id);
    for (const workspace_id of [NIL, eve.workspace.id]) {
      expectError(await as(solo).post('/v1/projects', { name: 'X', workspace_id }), 404);
    }
    expectError(
      await as(solo).post('/v1/projects', { name: 'X', workspace_id: 'not-a-uuid' }),
      400,
      /workspace_id.*uuid/,
    );

    const list = await as(solo).get('/v1/projects');
    expect(list.status).toBe(200);
    expect(ids(list).sort()).toEqual([solo.project.id, p.body.id, ws.body.project.id, inTwo.body.id].sort());
    for (const x of list.body.data) expect(x).not.toHaveProperty('tier');
  });

  it('GET /v1/projects/{id} includes its keys and never a secret', async () => {
    const res = await as(ann).get(`/v1/projects/${ann.project.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: ann.project.id, object: 'project', role: 'owner' });
    expect(res.body.keys.map((k: { id: string }) => k.id)).toContain(ann.project_key.id);
    for (const k of res.body.keys) expect(k).not.toHaveProperty('key');
    expect(JSON.stringify(res.body)).not.toContain(ann.project_key.key.slice(15));
  });

  it("another account's project is 404 {error} for the project, members, key list and key creation", async () => {
    const p = `/v1/projects/${eve.project.id}`;
    for (const path of [
      p,
      `${p}/members`,
      `${p}/api-keys`,
      `/v1/projects/${NIL}`,
      '/v1/projects/not-a-uuid',
    ]) {
      expectError(await as(ann).get(path), 404);
    }
    expectError(await as(ann).post(`${p}/api-keys`, { name: 'sneaky' }), 404);
    const keys = await as(eve).get(`${p}/api-keys`);
    expect(keys.body.data.map((k: { name: string }) => k.name)).not.toContain('sneaky');
    expect((await as(eve).get(`${p}/members`)).status).toBe(200);
  });
});

describe('project API keys', () => {
  it.each([
    30,
    90,
    365,
    undefined,
    null,
  ])('creates a key with expires_in_days=%s; the secret is shown once and works', async (days) => {
    const body =
      days === undefined
        ? { name: `k${days}`, extra: 'x', expires_at: '2000-01-01T00:00:00Z' }
        : { name: `k${days}`, expires_in_days: days, extra: 'x' };
    const res = await as(ann).post(`/v1/projects/${ann.project.id}/api-keys`, body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'api_key',
      name: `k${days}`,
      scope: 'project',
      project_id: ann.project.id,
      status: 'active',
    });
    expect(res.body).not.toHaveProperty('extra');
    expect(res.body.key).toMatch(/^ph_[0-9A-Za-z]{50}$/);
    expectExpiry(res.body, days);
    const me = await server.call('GET', '/v1/me', { key: res.body.key });
    expect(me.status).toBe(200);
    expect(me.body.project.id).toBe(ann.project.id);
    const list = await as(ann).get(`/v1/projects/${ann.project.id}/api-keys`);
    const listed = list.body.data.find((k: { id: string }) => k.id === res.body.id);
    expect(listed).toMatchObject({ name: `k${days}`, status: 'active' });
    for (const k of list.body.data) expect(k).not.toHaveProperty('key');
    expect(JSON.stringify(list.body)).not.toContain(res.body.key);
  });

  it.each([
    'all_access',
    'bogus',
  ])('ignores an unknown `scope: %j`: the account API creates a project key', async (scope) => {
    const res = await as(ann).post(`/v1/projects/${ann.project.id}/api-keys`, {
      name: `scoped ${scope}`,
      scope,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ scope: 'project', project_id: ann.project.id });
    expectError(await server.call('GET', '/v1/workspaces', { key: res.body.key }), 403, /all-access/);
  });

  it.each([
    [{ name: 'k', expires_in_days: 7 }, /expires_in_days/],
    [{ name: 'k', expires_in_days: '30' }, /expires_in_days/],
    [{ name: 'k', expires_in_days: 30.5 }, /expires_in_days/],
    [{ expires_in_days: 30 }, /name/],
    [{ name: '' }, /name/],
  ])('POST api-keys %j is 400 {error} and creates nothing', async (body, message) => {
    const before = (await as(ann).get(`/v1/projects/${ann.project.id}/api-keys`)).body.data.length;
    expectError(await as(ann).post(`/v1/projects/${ann.project.id}/api-keys`, body), 400, message);
    expect((await as(ann).get(`/v1/projects/${ann.project.id}/api-keys`)).body.data.length).toBe(before);
  });

  it('lists statuses active, expired and revoked', async () => {
    const make = async (name: string) =>
      (await as(ann).post(`/v1/projects/${ann.project.id}/api-keys`, { name, expires_in_days: 90 })).body;
    const [live, old, dead] = [await make('live'), await make('old'), await make('dead')];
    await server.runtime.ctx.db
      .updateTable('api_keys')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', old.id)
      .execute();
    expect((await as(ann).del(`/v1/api-keys/${dead.id}`)).status).toBe(204);
    const list = await as(ann).get(`/v1/projects/${ann.project.id}/api-keys`);
    const status = (id: string) => list.body.data.find((k: { id: string }) => k.id === id)?.status;
    expect([status(live.id), status(old.id), status(dead.id)]).toEqual(['active', 'expired', 'revoked']);
    expectError(await as(ann).post(`/v1/api-keys/${dead.id}/rotate`), 409);
  });

  it("rotating or revoking another account's key is 404 {error} and leaves it working", async () => {
    for (const id of [eve.project_key.id, eve.account_key.id]) {
      expectError(await as(ann).post(`/v1/api-keys/${id}/rotate`), 404);
      expectError(await as(ann).del(`/v1/api-keys/${id}`), 404);
      expectError(await as(ann).get(`/v1/api-keys/${id}/requests`), 404);
    }
    expectError(await as(ann).del('/v1/api-keys/not-a-uuid'), 404);
    expect((await server.call('GET', '/v1/me', { key: eve.project_key.key })).status).toBe(200);
    expect((await server.call('GET', '/v1/me', { key: eve.account_key.key })).status).toBe(200);
  });

  it("a project 'member' cannot create keys there (404); an admin can", async () => {
    const owner = await server.signup();
    const mate = await server.signup();
    const grant = (role: string) =>
      as(owner).post(`/v1/projects/${owner.project.id}/members`, { email: mate.account.email, role });
    // a project has one owner, its creator: no one is made owner through this route
    expectError(await grant('owner'), 400, /role.*"admin", "member"/);
    expect((await grant('member')).status).toBe(200);
    expectError(await as(mate).post(`/v1/projects/${owner.project.id}/api-keys`, { name: 'by member' }), 404);
    expectError(await as(mate).get(`/v1/projects/${owner.project.id}/api-keys`), 404);
    expect((await grant('admin')).status).toBe(200);
    const ok = await as(mate).post(`/v1/projects/${owner.project.id}/api-keys`, { name: 'by admin' });
    expect(ok.status).toBe(200);
    expect(ok.body.project_id).toBe(owner.project.id);
  });
});

describe('request history', () => {
  it('logs project calls with method, path, status, latency and key name, paginated; sets last_used_at', async () => {
    const k = (await as(ann).post(`/v1/projects/${ann.project.id}/api-keys`, { name: 'logged' })).body;
    expect(k.last_used_at).toBeNull();
    await server.call('GET', '/v1/me', { key: k.key });
    await server.call('GET', '/v1/limits', { key: k.key });
    await server.call('GET', '/v1/workspaces', { key: k.key }); // refused (403) but still part of its history
    const res = await logged(async () => {
      const r = await as(ann).get(`/v1/api-keys/${k.id}/requests`);
      expect(r.body?.total).toBeGreaterThanOrEqual(3);
      return r;
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 3, limit: 25, offset: 0 });
    const byPath = Object.fromEntries(res.body.data.map((e: { path: string }) => [e.path, e]));
    expect(byPath['/v1/me'], JSON.stringify(res.body.data)).toMatchObject({
      method: 'GET',
      status: 200,
      key_name: 'logged',
      project_id: ann.project.id,
    });
    expect(byPath['/v1/limits']).toMatchObject({ method: 'GET', status: 200 });
    expect(byPath['/v1/workspaces']).toMatchObject({ method: 'GET', status: 403 });
    for (const e of res.body.data) expect(e.latency_ms).toEqual(expect.any(Number));

    const page = await as(ann).get(`/v1/api-keys/${k.id}/requests?limit=1&offset=1`);
    expect(page.body).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect(page.body.data).toHaveLength(1);
    expect(page.body.data[0].id).toBe(res.body.data[1].id);
    expect((await as(ann).get(`/v1/api-keys/${k.id}/requests?limit=100`)).body).toMatchObject({ limit: 100 });

    const used = await logged(async () => {
      const r = await as(ann).get(`/v1/projects/${ann.project.id}/api-keys`);
      const lastUsed = r.body.data.find((x: { id: string }) => x.id === k.id)?.last_used_at;
      expect(lastUsed).toEqual(expect.any(String));
      return lastUsed as string;
    });
    expect(Math.abs(Date.parse(used) - Date.now())).toBeLessThan(30_000);

    // rotation keeps the history: calls with the new secret join the same log
    const rotated = await as(ann).post(`/v1/api-keys/${k.id}/rotate`);
    expect(rotated.status).toBe(200);
    await server.call('GET', '/v1/me', { key: rotated.body.key });
    const after = await logged(async () => {
      const r = await as(ann).get(`/v1/api-keys/${k.id}/requests`);
      expect(r.body?.total).toBeGreaterThanOrEqual(4);
      return r;
    });
    expect(after.body.total).toBe(4);
    expect(ids(after)).toEqual(expect.arrayContaining(ids(res)));
  });

  it('account-API calls by an all-access key go to /account-requests, not /requests', async () => {
    const solo = await server.signup();
    const key = solo.account_key;
    await as(solo).get('/v1/workspaces');
    await as(solo).get('/v1/me');
    const account = await logged(async () => {
      const r = await as(solo).get(`/v1/api-keys/${key.id}/account-requests`);
      expect(r.body?.data?.map((e: { path: string }) => e.path)).toContain('/v1/workspaces');
      return r;
    });
    expect(account.status).toBe(200);
    const entry = account.body.data.find((e: { path: string }) => e.path === '/v1/workspaces');
    expect(entry).toMatchObject({ method: 'GET', status: 200, key_name: expect.any(String) });
    expect(account.body.data.map((e: { path: string }) => e.path)).not.toContain('/v1/me');
    const project = await logged(async () => {
      const r = await as(solo).get(`/v1/api-keys/${key.id}/requests`);
      expect(r.body?.total).toBeGreaterThanOrEqual(1);
      return r;
    });
    expect(project.body.data.map((e: { path: string }) => e.path)).toEqual(['/v1/me']);
    expect(project.body.data[0].project_id).toBe(solo.project.id);
  });

  it.each([
    'limit=0',
    'limit=101',
    'offset=-1',
    'limit=abc',
    'offset=xyz',
  ])('GET /requests?%s is 400 {error}', async (query) => {
    expectError(
      await as(ann).get(`/v1/api-keys/${ann.project_key.id}/requests?${query}`),
      400,
      /limit|offset/,
    );
  });
});

describe('dashboard API (/api)', () => {
  let dan: SignupResult;
  let token: string;

  async function loginCode(email: string, since: number) {
    const m = await server.sink.waitFor(
      (x) =>
        x.to.includes(email) &&
        /login code/i.test(x.parsed.subject ?? '') &&
        server.sink.messages.indexOf(x) >= since,
    );
    return codeIn(m);
  }

  const verify = (body: object) => server.call('POST', '/api/auth/login/verify', { body });
  const team = (id: string, key: string | undefined, body: object) =>
    server.call('POST', `/api/teams/${id}/api-keys`, { key, body });

  beforeAll(async () => {
    dan = await server.signupConfirmed();
  });

  it('login answers 200 the same for a known and an unknown email', async () => {
    const since = server.sink.messages.length;
    const known = await server.call('POST', '/api/auth/login', { body: { email: dan.account.email } });
    const unknown = await server.call('POST', '/api/auth/login', {
      body: { email: 'nobody-here@example.com' },
    });
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(Object.keys(unknown.body).sort()).toEqual(Object.keys(known.body).sort());
    expect(unknown.body).toMatchObject({ sent: true, email: 'nobody-here@example.com' });
    expect(unknown.body.expires_in_minutes).toBe(known.body.expires_in_minutes);
    expectError(await server.call('POST', '/api/auth/login', { body: { email: 'not an email' } }), 400);
    // the known address got its code (waited for, so the next test's snapshot comes after it)
    expect(await loginCode(dan.account.email, since)).toMatch(/^[A-Z0-9]{6}$/);
    expect(server.sink.messages.some((m) => m.to.includes('nobody-here@example.com'))).toBe(false);
  });

  it('a wrong code is 400 {error}; the emailed code gives a phs_ session token', async () => {
    const since = server.sink.messages.length;
    expect(
      (await server.call('POST', '/api/auth/login', { body: { email: dan.account.email } })).status,
    ).toBe(200);
    const code = await loginCode(dan.account.email, since);
    const wrong = code === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA';
    expectError(await verify({ email: dan.account.email, code: wrong }), 400, /incorrect/);
    expectError(await verify({ email: 'nobody-here@example.com', code }), 400);
    const res = await verify({ email: dan.account.email, code });
    expect(res.status).toBe(200);
    expect(res.body.token).toMatch(/^phs_[0-9A-Za-z]+$/);
    token = res.body.token;
    // a code works once
    expectError(await verify({ email: dan.account.email, code }), 400);
  });

  it.each([
    30,
    90,
    365,
    undefined,
  ])('creates a team key with expires_in_days=%s that works on GET /v1/me', async (days) => {
    const extra = days ? { expires_in_days: days } : {};
    const res = await team(dan.project.id, token, { name: `dash ${days}`, ...extra, junk: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      name: `dash ${days}`,
      scope: 'project',
      project_id: dan.project.id,
      status: 'active',
    });
    expect(res.body).not.toHaveProperty('junk');
    expectExpiry(res.body, days);
    const me = await server.call('GET', '/v1/me', { key: res.body.key });
    expect(me.status).toBe(200);
    expect(me.body.project.id).toBe(dan.project.id);
  });

  it('team key creation refuses expires_in_days 7 (400), an API key as session (403), no auth (401), another team (404)', async () => {
    const id = dan.project.id;
    expectError(await team(id, token, { name: 'x', expires_in_days: 7 }), 400, /expires_in_days/);
    expectError(await team(id, token, {}), 400, /name/);
    for (const key of [dan.account_key.key, dan.project_key.key]) {
      expectError(await team(id, key, { name: 'x' }), 403, /dashboard session/);
    }
    for (const key of [undefined, `phs_${'x'.repeat(40)}`]) {
      expectError(await team(id, key, { name: 'x' }), 401);
    }
    expectError(await team(eve.project.id, token, { name: 'x' }), 404);
    expectError(await team('not-a-uuid', token, { name: 'x' }), 404);
    const eveKeys = await as(eve).get(`/v1/projects/${eve.project.id}/api-keys`);
    expect(eveKeys.body.data.map((k: { name: string }) => k.name)).not.toContain('x');
  });
});
