import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { UNSUPPORTED } from '../../src/http/resend/unsupported.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { signInByCode } from '../helpers/sessions.ts';

/**
 * One role rule on every door (issue 47, item 4): through /resend a Member could create a webhook
 * endpoint, read the admin's signing secret, repoint and delete it, which /v1 refuses. Every
 * operation of the Resend door, as the app has them registered (so a new one is walked too), is
 * called by a Member's dashboard session beside its /v1 counterparts: refused (403) exactly where
 * /v1 refuses.
 */

let server: TestServer;
let owner: SignupResult;
let member: SignupResult;
let memberToken: string;
/** The owner's resources, by the path segment that names them. */
const ids: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1' });
  owner = await server.signupConfirmed({ name: 'Olga Owner' });
  await setWorkspacePlan(server.runtime.ctx, owner.workspace.id, 'unlimited');
  member = await server.signupConfirmed({ name: 'Mo Member' });
  const added = await server.call('POST', `/v1/projects/${owner.project.id}/members`, {
    key: owner.account_key.key,
    body: { email: member.account.email, role: 'member' },
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
  memberToken = (await signInByCode(server, member.account.email)).token;
  await fixtures();
}, 90_000);
afterAll(() => server?.close());

/** Creates one of each resource as the owner, for the paths' ids. */
async function fixtures() {
  const key = owner.project_key.key;
  const made = async (path: string, body: unknown) => {
    const res = await server.call('POST', path, { key, body });
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    return res.body.id as string;
  };
  await insertVerifiedDomain(server, owner.project.id, 'roles.example');
  ids.emails = await made('/v1/emails', {
    from: 'a@roles.example',
    to: 'someone@example.org',
    subject: 'S',
    text: 'x',
    scheduled_at: new Date(Date.now() + 86_400_000).toISOString(),
  });
  ids.domains = await made('/v1/domains', { domain: 'other.example' });
  ids.webhooks = await made('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['contact.created'] });
  ids.contacts = await made('/v1/contacts', { email: 'reader@example.org' });
  ids.lists = await made('/v1/lists', { name: 'Readers' });
  ids.campaigns = await made('/v1/campaigns', {
    name: 'News',
    from: 'news@roles.example',
    subject: 'News',
    html: '<p>x</p>',
    list_ids: [ids.lists],
  });
  const keyMade = await server.call('POST', `/v1/projects/${owner.project.id}/api-keys`, {
    key: owner.account_key.key,
    body: { name: 'integration' },
  });
  ids['api-keys'] = keyMade.body.id;
  Object.assign(ids, {
    segments: ids.lists,
    audiences: ids.lists,
    broadcasts: ids.campaigns,
    project_id: owner.project.id,
  });
}

/** A route's path with the owner's ids: `:id` is the resource its first segment names. */
function concrete(url: string, root: '/resend' | '/v1'): string {
  const resource = url.slice(root.length + 1).split('/')[0];
  return url.replace(/:(\w+)/g, (_, name: string) => {
    if (name === 'id') return ids[resource];
    if (name === 'audience_id' || name === 'segment_id') return ids.lists;
    return ids[name];
  });
}

/** A call as the Member, in the owner's project; a body where the method takes one. */
function asMember(method: string, path: string) {
  return server.call(method, path, {
    headers: { authorization: `Bearer ${memberToken}`, 'x-project-id': owner.project.id },
    ...(method === 'POST' || method === 'PATCH' || method === 'PUT' ? { body: {} } : {}),
  });
}

describe('every Resend-door operation takes the role of its /v1 counterpart', () => {
  it('refuses a Member (403) exactly where /v1 refuses', async () => {
    const operations = server.app
      .declaredRoutes()
      .filter((r) => r.url.startsWith('/resend/') && r.method !== 'HEAD' && r.auth !== 'none');
    const walked = operations.filter((r) => r.counterparts);
    // every operation has its counterparts (the 405s of unsupported.ts stand for none)
    expect(operations.filter((r) => !r.counterparts).map((r) => `${r.method} ${r.url}`)).toEqual(
      UNSUPPORTED.map(([method, path]) => `${method} /resend${path}`),
    );
    expect(walked.length).toBeGreaterThan(50);

    const differences: string[] = [];
    for (const op of walked) {
      const door = await asMember(op.method, concrete(op.url, '/resend'));
      expect(door.status, `${op.method} ${op.url}: ${JSON.stringify(door.body)}`).toBeLessThan(500);
      const answers = [];
      for (const counterpart of op.counterparts ?? []) {
        const [method, url] = counterpart.split(' ');
        const v1 = await asMember(method, concrete(url, '/v1'));
        expect(v1.status, `${counterpart}: ${JSON.stringify(v1.body)}`).toBeLessThan(500);
        answers.push(`${counterpart} ${v1.status}`);
      }
      const v1Refuses = answers.some((a) => a.endsWith(' 403'));
      if ((door.status === 403) !== v1Refuses)
        differences.push(`${op.method} ${op.url} ${door.status} beside ${answers.join(', ')}`);
    }
    expect(differences, differences.join('\n')).toEqual([]);
    // what the issue saw through /resend/webhooks and /resend/domains is among the refusals
    const refused = walked.filter((r) => r.role === 'admin').map((r) => `${r.method} ${r.url}`);
    expect(refused).toEqual(
      expect.arrayContaining([
        'POST /resend/webhooks',
        'PATCH /resend/webhooks/:id',
        'DELETE /resend/webhooks/:id',
        'POST /resend/domains',
        'POST /resend/api-keys',
      ]),
    );
  });

  it("a Member neither creates, reads the secret of, repoints nor deletes the admin's endpoint", async () => {
    const session = { authorization: `Bearer ${memberToken}`, 'x-project-id': owner.project.id };
    const hook = `/resend/webhooks/${ids.webhooks}`;
    const created = await server.call('POST', '/resend/webhooks', {
      headers: session,
      body: { endpoint: 'http://127.0.0.1:9/mine', events: ['email.sent'] },
    });
    expect(created.status).toBe(403);
    expect(created.body).toMatchObject({ statusCode: 403, message: expect.stringMatching(/Owner or Admin/) });
    const read = await server.call('GET', hook, { headers: session });
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('signing_secret');
    const patched = await server.call('PATCH', hook, {
      headers: session,
      body: { endpoint: 'http://127.0.0.1:9/elsewhere' },
    });
    expect(patched.status).toBe(403);
    expect((await server.call('DELETE', hook, { headers: session })).status).toBe(403);

    // the owner's endpoint is as it was, and a key (not affected by roles) reads its secret
    const kept = await server.call('GET', hook, { key: owner.project_key.key });
    expect(kept.body).toMatchObject({ endpoint: 'http://127.0.0.1:9/hook', status: 'enabled' });
    expect(kept.body.signing_secret).toMatch(/^whsec_/);
    const listed = await server.call('GET', '/resend/webhooks', { key: owner.project_key.key });
    expect(listed.body.data.map((w: { id: string }) => w.id)).toEqual([ids.webhooks]);
  });
});
