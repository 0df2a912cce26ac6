import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Keys and projects across doors (issue 47, item 5), the Resend door's part: an application
 * written for Resend sends no `X-Project-Id`, so an all-access key there acts in its account's
 * default project (the starter project made at sign-up) once the account has a second project,
 * unless the header names another; /v1 keeps asking for the header.
 */

let server: TestServer;
let account: SignupResult;
/** Another account, signed up first: its project is older than any of `account`'s. */
let elder: SignupResult;
let second: { id: string };
const EMAIL = { from: 'onboarding@posthorn.localhost', to: 'ada@example.org', subject: 'Hi', text: 'Hello' };

beforeAll(async () => {
  server = await startTestServer({}, ['api']);
  elder = await server.signup();
  account = await server.signup();
  await server.runtime.ctx.db
    .updateTable('accounts')
    .set({ email_confirmed_at: new Date() })
    .where('id', '=', account.account.id)
    .execute();
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  const workspace = await server.call('POST', '/v1/workspaces', {
    key: account.account_key.key,
    body: { name: 'Second' },
  });
  expect(workspace.status, JSON.stringify(workspace.body)).toBe(200);
  second = workspace.body.project;
}, 60_000);
afterAll(() => server?.close());

const projectOfEmail = async (id: string) =>
  (
    await server.runtime.ctx.db
      .selectFrom('emails')
      .select('project_id')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  ).project_id;

describe('an all-access key at the Resend door once the account has two projects', () => {
  it('/v1 asks which project; /resend sends from the default project', async () => {
    const key = account.account_key.key;
    expectError(
      await server.call('POST', '/v1/emails', { key, body: EMAIL }),
      400,
      /X-Project-Id` is required/,
    );
    const sent = await server.call('POST', '/resend/emails', { key, body: EMAIL });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await projectOfEmail(sent.body.id)).toBe(account.project.id);
    // reads act there too
    const read = await server.call('GET', `/resend/emails/${sent.body.id}`, { key });
    expect(read.status).toBe(200);
    const listed = await server.call('GET', '/resend/domains', { key });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
  });

  it('X-Project-Id still names another project, and one the key cannot reach is 404', async () => {
    const key = account.account_key.key;
    const sent = await server.call('POST', '/resend/emails', {
      key,
      body: EMAIL,
      headers: { 'x-project-id': second.id },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await projectOfEmail(sent.body.id)).toBe(second.id);
    const other = await server.signup();
    const refused = await server.call('POST', '/resend/emails', {
      key,
      body: EMAIL,
      headers: { 'x-project-id': other.project.id },
    });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ name: 'not_found' });
  });

  it('the default project stays the sign-up one when the key administers an older project', async () => {
    // another account's older project, where this account is made an Admin
    const added = await server.call('POST', `/v1/projects/${elder.project.id}/members`, {
      key: elder.account_key.key,
      body: { email: account.account.email, role: 'admin' },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const sent = await server.call('POST', '/resend/emails', { key: account.account_key.key, body: EMAIL });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await projectOfEmail(sent.body.id)).toBe(account.project.id);
  });
});
