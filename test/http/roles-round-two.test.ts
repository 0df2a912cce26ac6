import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { signInByCode } from '../helpers/sessions.ts';

/**
 * A project key acts for its project whoever made it, so keys record who made them and a member
 * who goes takes the project keys they made there with them (revoked), unless the remover keeps
 * them; the removal's confirmation can list those keys first.
 */

let server: TestServer;
let owner: SignupResult;
let ownerSession: string;

beforeAll(async () => {
  server = await startTestServer();
  owner = await server.signupConfirmed({ name: 'Olga Owner' });
  ownerSession = await signIn(owner.account.email);
});
afterAll(() => server?.close());

/** A dashboard session token (bearer) from an emailed login code. */
const signIn = async (email: string) => (await signInByCode(server, email)).token;

const asSession = (token: string, method: string, path: string) =>
  server.call(method, path, { headers: { authorization: `Bearer ${token}` } });

/** Adds a fresh account to the owner's project with a role; it makes a project key there. */
async function memberWithKey(role: 'admin' | 'member', name: string) {
  const person = await server.signupConfirmed({ name });
  const added = await server.call('POST', `/v1/projects/${owner.project.id}/members`, {
    key: owner.account_key.key,
    body: { email: person.account.email, role: 'admin' },
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
  // made while an Admin (only Owners and Admins make keys), whatever the role afterwards
  const made = await server.call('POST', `/v1/projects/${owner.project.id}/api-keys`, {
    key: person.account_key.key,
    body: { name: `${name}'s integration` },
  });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  if (role === 'member') {
    const changed = await server.call(
      'PATCH',
      `/api/projects/${owner.project.id}/members/${person.account.id}`,
      {
        headers: { authorization: `Bearer ${ownerSession}` },
        body: { role: 'member' },
      },
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
  }
  return { person, key: made.body as { id: string; key: string; name: string; created_by: string } };
}

const works = async (key: string) => (await server.call('GET', '/v1/me', { key })).status === 200;
const membersPath = (accountId: string) => `/api/projects/${owner.project.id}/members/${accountId}`;

describe('keys record who made them', () => {
  it('created_by is the account that made the key, through every door', async () => {
    const { person, key } = await memberWithKey('admin', 'Ada Admin');
    expect(key.created_by).toBe(person.account.id);
    const listed = await server.call('GET', `/v1/projects/${owner.project.id}/api-keys`, {
      key: owner.account_key.key,
    });
    const byName = new Map(listed.body.data.map((k: { name: string; created_by: string }) => [k.name, k]));
    expect(byName.get("Ada Admin's integration")).toMatchObject({ created_by: person.account.id });
    // the signup's own keys, and a key made from the dashboard
    expect(listed.body.data.find((k: { id: string }) => k.id === owner.project_key.id).created_by).toBe(
      owner.account.id,
    );
    const team = await server.call('POST', `/api/teams/${owner.project.id}/api-keys`, {
      headers: { authorization: `Bearer ${ownerSession}` },
      body: { name: 'from the dashboard' },
    });
    expect(team.body.created_by).toBe(owner.account.id);
  });
});

describe('removing a member revokes the project keys they made there', () => {
  it("an Admin's key stops working when the Admin is removed; others' keys do not", async () => {
    const { person, key } = await memberWithKey('admin', 'Ann Admin');
    const ownKey = await server.call('POST', `/v1/projects/${person.project.id}/api-keys`, {
      key: person.account_key.key,
      body: { name: 'in her own project' },
    });
    expect(await works(key.key)).toBe(true);

    // what the confirmation shows: the keys that go
    const going = await asSession(ownerSession, 'GET', `${membersPath(person.account.id)}/keys`);
    expect(going.status, JSON.stringify(going.body)).toBe(200);
    expect(going.body.data.map((k: { id: string }) => k.id)).toEqual([key.id]);
    expect(going.body.data[0]).toMatchObject({ name: "Ann Admin's integration", status: 'active' });
    expect(going.body.data[0]).not.toHaveProperty('key');

    const removed = await asSession(ownerSession, 'DELETE', membersPath(person.account.id));
    expect(removed.status, JSON.stringify(removed.body)).toBe(204);
    expectError(await server.call('GET', '/v1/me', { key: key.key }), 401, /revoked/);
    const listed = await server.call('GET', `/v1/projects/${owner.project.id}/api-keys`, {
      key: owner.account_key.key,
    });
    expect(listed.body.data.find((k: { id: string }) => k.id === key.id).status).toBe('revoked');
    // the owner's keys, and the removed person's keys elsewhere, are untouched
    expect(await works(owner.project_key.key)).toBe(true);
    expect(await works(ownKey.body.key)).toBe(true);
    // and the removed person's all-access key no longer reaches the project
    const chosen = await server.call('GET', '/v1/me', {
      key: person.account_key.key,
      headers: { 'x-project-id': owner.project.id },
    });
    expectError(chosen, 404);
  });

  it('keep_keys=true keeps them working', async () => {
    const { person, key } = await memberWithKey('admin', 'Bea Admin');
    const removed = await asSession(
      ownerSession,
      'DELETE',
      `${membersPath(person.account.id)}?keep_keys=true`,
    );
    expect(removed.status, JSON.stringify(removed.body)).toBe(204);
    expect(await works(key.key)).toBe(true);
    expectError(await asSession(ownerSession, 'GET', `${membersPath(person.account.id)}/keys`), 404);
  });

  it('a key made while Admin goes even when its maker was later made a Member', async () => {
    const { person, key } = await memberWithKey('member', 'Max Member');
    expect(await works(key.key)).toBe(true);
    expect(
      (await asSession(ownerSession, 'GET', `${membersPath(person.account.id)}/keys`)).body.data.map(
        (k: { id: string }) => k.id,
      ),
    ).toEqual([key.id]);
    expect((await asSession(ownerSession, 'DELETE', membersPath(person.account.id))).status).toBe(204);
    expect(await works(key.key)).toBe(false);
  });

  it('leaving revokes your own keys too, and you may see them first', async () => {
    const { person, key } = await memberWithKey('admin', 'Lee Leaver');
    const session = await signIn(person.account.email);
    const mine = await asSession(session, 'GET', `${membersPath(person.account.id)}/keys`);
    expect(mine.body.data.map((k: { id: string }) => k.id)).toEqual([key.id]);
    expect((await asSession(session, 'DELETE', membersPath(person.account.id))).status).toBe(204);
    expect(await works(key.key)).toBe(false);
  });

  it("a Member may not list another member's keys; the remove call documents keep_keys", async () => {
    const { person } = await memberWithKey('member', 'Mo Member');
    const session = await signIn(person.account.email);
    expectError(
      await asSession(session, 'GET', `${membersPath(owner.account.id)}/keys`),
      403,
      /Owner or Admin role/,
    );
    expect((await asSession(session, 'GET', `${membersPath(person.account.id)}/keys`)).status).toBe(200);
    expectError(await asSession(session, 'GET', `${membersPath('not-an-id')}/keys`), 404);
    const doc = (await server.call('GET', '/v1/openapi.json')).body;
    const remove = doc.paths['/api/projects/{project_id}/members/{account_id}'].delete;
    const keep = remove.parameters.find((p: { name: string }) => p.name === 'keep_keys');
    expect(keep).toMatchObject({ in: 'query', required: false });
    expect(keep.schema.type).toBe('boolean');
    expect(doc.paths['/api/projects/{project_id}/members/{account_id}/keys'].get.operationId).toBe(
      'listMemberKeys',
    );
  });
});
