import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatKey, newKeyId, newSecret } from '../../src/domain/keys/token.ts';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let owner: SignupResult;
beforeAll(async () => {
  server = await startTestServer();
  owner = await server.signup();
});
afterAll(() => server?.close());

/** Creates a project key in a project through the account API (with the account's all-access key). */
async function createKey(account: SignupResult, projectId: string, body: Record<string, unknown> = {}) {
  const res = await server.call('POST', `/v1/projects/${projectId}/api-keys`, {
    key: account.account_key.key,
    body: { name: `key-${Math.random().toString(36).slice(2, 8)}`, ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { id: string; key: string; name: string; token_prefix: string; project_id: string };
}

const me = (key?: string, headers?: Record<string, string>) => server.call('GET', '/v1/me', { key, headers });

describe('API key authentication', () => {
  it('accepts both keys of a fresh signup (the baseline the refusals below are measured against)', async () => {
    const a = await me(owner.project_key.key);
    expect(a.status).toBe(200);
    expect(a.body.project.id).toBe(owner.project.id);
    const b = await me(owner.account_key.key);
    expect(b.status).toBe(200);
    expect(b.body.project.id).toBe(owner.project.id);
  });

  it('answers 401 {error} without an Authorization header', async () => {
    expectError(await me(), 401, /Missing API key/);
  });

  it.each([
    ['Basic dXNlcjpwYXNz'],
    ['Bearer'],
    ['Bearer two tokens'],
    ['Token ph_abc'],
  ])('answers 401 {error} for the malformed Authorization header %j', async (header) => {
    expectError(await me(undefined, { authorization: header }), 401, /Malformed Authorization header/);
  });

  it('accepts the Bearer scheme case-insensitively (so the header check is not simply refusing all)', async () => {
    const res = await me(undefined, { authorization: `bearer ${owner.project_key.key}` });
    expect(res.status).toBe(200);
  });

  it.each([
    ['garbage', /start with "ph_"/],
    ['phs_notakeyatall', /start with "ph_"/],
    ['ph_short', /malformed/],
    [`ph_${'!'.repeat(50)}`, /malformed/],
    [`ph_${'a'.repeat(51)}`, /malformed/],
  ])('answers 401 {error} for the garbled key %j', async (token, message) => {
    expectError(await me(token), 401, message);
  });

  it('answers 401 {error} naming the checksum when one character of a valid key is changed', async () => {
    const key = owner.project_key.key;
    for (const index of [3, 20, key.length - 1]) {
      const flipped = key.slice(0, index) + (key[index] === 'a' ? 'b' : 'a') + key.slice(index + 1);
      expect(flipped).not.toBe(key);
      expectError(await me(flipped), 401, /checksum/);
    }
    expect((await me(key)).status).toBe(200);
  });

  it('answers 401 {error} for a well-formed key that does not exist, and for a known key id with the wrong secret', async () => {
    expectError(await me(formatKey(newKeyId(), newSecret())), 401, /no active key matches/);
    const keyId = owner.project_key.key.slice(3, 15);
    expectError(await me(formatKey(keyId, newSecret())), 401, /no active key matches/);
  });

  it('answers 401 {error} saying "expired" once expires_at is in the past', async () => {
    const created = await createKey(owner, owner.project.id, { expires_in_days: 30 });
    expect((await me(created.key)).status).toBe(200);
    await server.runtime.ctx.db
      .updateTable('api_keys')
      .set({ expires_at: new Date(Date.now() - 60_000) })
      .where('id', '=', created.id)
      .execute();
    const res = await me(created.key);
    expectError(res, 401, /expired/);
    expect(res.body.error).not.toMatch(/revoked/);
  });

  it('refuses a revoked key with 401 {error} on the very next request', async () => {
    const created = await createKey(owner, owner.project.id);
    expect((await me(created.key)).status).toBe(200);
    const del = await server.call('DELETE', `/v1/api-keys/${created.id}`, { key: owner.account_key.key });
    expect(del.status).toBe(204);
    expectError(await me(created.key), 401, /revoked/);
    // revoking again is harmless; the key stays refused
    expect(
      (await server.call('DELETE', `/v1/api-keys/${created.id}`, { key: owner.account_key.key })).status,
    ).toBe(204);
    expectError(await me(created.key), 401, /revoked/);
  });

  it('an all-access key revoking itself is refused on its very next request', async () => {
    const other = await server.signup();
    const del = await server.call('DELETE', `/v1/api-keys/${other.account_key.id}`, {
      key: other.account_key.key,
    });
    expect(del.status).toBe(204);
    expectError(await server.call('GET', '/v1/workspaces', { key: other.account_key.key }), 401, /revoked/);
    expectError(await me(other.account_key.key), 401, /revoked/);
    // the account's other key is untouched
    expect((await me(other.project_key.key)).status).toBe(200);
  });

  it('concurrent requests with different keys (lookups share queries) each get their own answer', async () => {
    const good = await Promise.all([1, 2, 3].map(() => createKey(owner, owner.project.id)));
    const revoked = await createKey(owner, owner.project.id);
    await server.call('DELETE', `/v1/api-keys/${revoked.id}`, { key: owner.account_key.key });
    const unknown = formatKey(newKeyId(), newSecret());
    const calls = Array.from({ length: 60 }, (_, i) => {
      const which = i % 5;
      const key = which < 3 ? good[which].key : which === 3 ? revoked.key : unknown;
      return me(key).then((res) => ({ which, res }));
    });
    for (const { which, res } of await Promise.all(calls)) {
      if (which < 3) expect(res.status).toBe(200);
      else if (which === 3) expectError(res, 401, /revoked/);
      else expectError(res, 401, /no active key matches/);
    }
  });

  it('rotation: the old secret is refused at once, the new one works, same id, name and key id', async () => {
    const created = await createKey(owner, owner.project.id, { name: 'rotate me' });
    const res = await server.call('POST', `/v1/api-keys/${created.id}/rotate`, {
      key: owner.account_key.key,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: created.id,
      name: 'rotate me',
      token_prefix: created.token_prefix,
      status: 'active',
    });
    expect(res.body.rotated_at).toEqual(expect.any(String));
    expect(res.body.key).toMatch(/^ph_[0-9A-Za-z]{50}$/);
    expect(res.body.key).not.toBe(created.key);
    expect(res.body.key.slice(0, 15)).toBe(created.key.slice(0, 15));

    expectError(await me(created.key), 401, /Invalid API key/);
    const ok = await me(res.body.key);
    expect(ok.status).toBe(200);
    expect(ok.body.project.id).toBe(owner.project.id);
  });

  it.each([
    '/v1/workspaces',
    '/v1/projects',
  ])('a project key on GET %s is 403 {error} naming the all-access scope', async (path) => {
    expectError(await server.call('GET', path, { key: owner.project_key.key }), 403, /all-access/);
    expect((await server.call('GET', path, { key: owner.account_key.key })).status).toBe(200);
  });

  it('a project key cannot create, rotate or revoke keys (403 {error} naming the all-access scope)', async () => {
    const key = owner.project_key.key;
    const create = await server.call('POST', `/v1/projects/${owner.project.id}/api-keys`, {
      key,
      body: { name: 'x' },
    });
    expectError(create, 403, /all-access/);
    expectError(
      await server.call('POST', `/v1/api-keys/${owner.project_key.id}/rotate`, { key }),
      403,
      /all-access/,
    );
    expectError(
      await server.call('DELETE', `/v1/api-keys/${owner.project_key.id}`, { key }),
      403,
      /all-access/,
    );
    expect((await me(key)).status).toBe(200);
  });

  it('a dashboard session token is not an API key (401 {error})', async () => {
    expectError(await me(`phs_${'a'.repeat(40)}`), 401);
  });
});

describe('all-access keys and project selection', () => {
  let alice: SignupResult;
  let bob: SignupResult;
  let second: { id: string; name: string };

  beforeAll(async () => {
    alice = await server.signup();
    bob = await server.signup();
  });

  it('auto-selects the only project on GET /v1/me', async () => {
    const res = await me(alice.account_key.key);
    expect(res.status).toBe(200);
    expect(res.body.project).toEqual({ id: alice.project.id, name: alice.project.name, object: 'project' });
  });

  it('with a second project, GET /v1/me without X-Project-Id is 400 listing both ids and names', async () => {
    const created = await server.call('POST', '/v1/projects', {
      key: alice.account_key.key,
      body: { name: 'Second Alice project' },
    });
    expect(created.status).toBe(200);
    second = created.body;
    const res = await me(alice.account_key.key);
    expectError(res, 400, /X-Project-Id/);
    for (const text of [alice.project.id, alice.project.name, second.id, 'Second Alice project']) {
      expect(res.body.error).toContain(text);
    }
    // an empty header counts as missing
    expectError(await me(alice.account_key.key, { 'x-project-id': '' }), 400, /X-Project-Id/);
  });

  it('with X-Project-Id of each project, GET /v1/me acts in that project', async () => {
    for (const project of [alice.project, second]) {
      const res = await me(alice.account_key.key, { 'x-project-id': project.id });
      expect(res.status).toBe(200);
      expect(res.body.project).toMatchObject({ id: project.id, name: project.name });
    }
  });

  it("X-Project-Id of another account's project is 404 {error}; a random UUID too", async () => {
    expectError(await me(alice.account_key.key, { 'x-project-id': bob.project.id }), 404);
    expectError(
      await me(alice.account_key.key, { 'x-project-id': '00000000-0000-4000-8000-000000000000' }),
      404,
    );
  });

  it('X-Project-Id that is not a UUID is 400 {error}', async () => {
    expectError(await me(alice.account_key.key, { 'x-project-id': 'not-a-uuid' }), 400, /X-Project-Id/);
    expectError(
      await me(alice.account_key.key, { 'x-project-id': `${alice.project.id}x` }),
      400,
      /X-Project-Id/,
    );
  });

  it('a project where the user is only a member is 404; once made admin it is selectable', async () => {
    const add = await server.call('POST', `/v1/projects/${bob.project.id}/members`, {
      key: bob.account_key.key,
      body: { email: alice.account.email, role: 'member' },
    });
    expect(add.status).toBe(200);
    expect(add.body.data).toEqual(
      expect.arrayContaining([expect.objectContaining({ email: alice.account.email, role: 'member' })]),
    );
    const res = await me(alice.account_key.key, { 'x-project-id': bob.project.id });
    expectError(res, 404);
    // the 400 listing never offers a project where the user is only a member
    const listing = await me(alice.account_key.key);
    expectError(listing, 400);
    expect(listing.body.error).not.toContain(bob.project.id);

    const promote = await server.call('POST', `/v1/projects/${bob.project.id}/members`, {
      key: bob.account_key.key,
      body: { email: alice.account.email, role: 'admin' },
    });
    expect(promote.status).toBe(200);
    const ok = await me(alice.account_key.key, { 'x-project-id': bob.project.id });
    expect(ok.status).toBe(200);
    expect(ok.body.project.id).toBe(bob.project.id);
  });

  it('a project key never reaches another project through X-Project-Id', async () => {
    const res = await me(bob.project_key.key, { 'x-project-id': alice.project.id });
    expect(res.body?.project?.id).not.toBe(alice.project.id);
    if (res.status === 200) expect(res.body.project.id).toBe(bob.project.id);
    else expectError(res, res.status);
  });
});
