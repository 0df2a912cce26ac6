import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let unset: TestServer;
beforeAll(async () => {
  server = await startTestServer({ POSTHORN_DEFAULT_PLAN: 'pro' });
  // the test servers start on free (the spec's 402s); an empty value is no setting at all
  unset = await startTestServer({ POSTHORN_DEFAULT_PLAN: '' });
});
afterAll(() => Promise.all([server?.close(), unset?.close()]));

describe('POSTHORN_DEFAULT_PLAN unset', () => {
  it('puts new workspaces on unlimited, so a flow activates with no operator step', async () => {
    const { workspace, project_key } = await unset.signup();
    expect((workspace as { plan?: string }).plan).toBe('unlimited');
    const limits = await unset.call('GET', '/v1/limits', { key: project_key.key });
    expect(limits.body.plan).toBe('unlimited');
    expect(limits.body.features).toMatchObject({ automations: true, inbound: true, webhooks: true });
  });
});

describe('POSTHORN_DEFAULT_PLAN=pro', () => {
  it('puts a signup workspace on pro, so its project has inbound mail and webhooks at once', async () => {
    const { workspace, project_key } = await server.signup();
    const row = await server.runtime.ctx.db
      .selectFrom('workspaces')
      .select('plan')
      .where('id', '=', workspace.id)
      .executeTakeFirstOrThrow();
    expect(row.plan).toBe('pro');
    expect((workspace as { plan?: string }).plan).toBe('pro');
    const limits = await server.call('GET', '/v1/limits', { key: project_key.key });
    expect(limits.status).toBe(200);
    expect(limits.body.plan).toBe('pro');
    expect(limits.body.features).toMatchObject({ inbound: true, webhooks: true });
  });

  it('puts a workspace made with POST /v1/workspaces on pro too', async () => {
    const { account_key } = await server.signup();
    const res = await server.call('POST', '/v1/workspaces', {
      key: account_key.key,
      body: { name: 'Second' },
    });
    expect(res.status).toBe(200);
    expect(res.body.plan).toBe('pro');
    const list = await server.call('GET', '/v1/workspaces', { key: account_key.key });
    expect(list.body.data.map((w: { plan: string }) => w.plan)).toEqual(['pro', 'pro']);
  });
});
