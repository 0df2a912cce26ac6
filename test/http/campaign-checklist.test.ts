import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { addUsageToday, insertVerifiedDomain } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * GET /v1/campaigns/{id}/checklist (issue 30, item 4): the checks POST /send runs, each on its own,
 * so every problem shows at once. Each item is walked from failing to ok on a fresh project, and
 * at every step the send refuses with the message of the first failing item, or starts once the
 * checklist is ready: the dashboard (which reads the checklist) and the API agree.
 */

const ADDRESS = 'Checklist Tests Ltd, 7 Mill Lane, York YO1 7HH';
const MJML = (body: string) =>
  `<mjml><mj-body><mj-section><mj-column><mj-text>${body}</mj-text></mj-column></mj-section></mj-body></mjml>`;

let server: TestServer;
let account: SignupResult;
let key: string;
let list: string;
let template: string;
let domainId: string;

type Item = { id: string; status: string; message: string };
const checklist = async (id: string, k = key) => {
  const res = await server.call('GET', `/v1/campaigns/${id}/checklist`, { key: k });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const byId = Object.fromEntries((res.body.items as Item[]).map((i) => [i.id, i])) as Record<string, Item>;
  return { ...res.body, byId } as { ready: boolean; items: Item[]; byId: Record<string, Item> };
};
const statuses = (c: { items: Item[] }) => Object.fromEntries(c.items.map((i) => [i.id, i.status]));
const send = (id: string) => server.call('POST', `/v1/campaigns/${id}/send`, { key });
const escaped = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));

beforeAll(async () => {
  server = await startTestServer();
  // not confirmed, no footer address: what a new account starts with
  account = await server.signup();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'free');
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  domainId = (await insertVerifiedDomain(server, account.project.id, 'checklist.example')).id;
  const made = await server.call('POST', '/v1/templates', {
    key,
    body: {
      name: 'Welcome',
      subject: 'Welcome',
      mjml: MJML('Your account: {{ account_url }}'),
      variables: [{ name: 'account_url', type: 'string' }],
    },
  });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  template = made.body.id;
  expect((await server.call('POST', `/v1/templates/${template}/publish`, { key })).status).toBe(200);
}, 60_000);
afterAll(() => server?.close());

describe('GET /v1/campaigns/{id}/checklist', () => {
  it('walks each item from failing to ok, the send refusing with the first failing one until it is ready', async () => {
    const created = await server.call('POST', '/v1/campaigns', {
      key,
      body: {
        name: 'First news',
        from: 'News <news@checklist.example>',
        template_id: template,
        variables: { account_url: 'https://checklist.example/account' },
        list_ids: [list],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    // since the campaign was saved: the domain lost its verification and the template's new
    // version requires a variable the campaign does not give
    await server.runtime.ctx.db
      .updateTable('domains')
      .set({ status: 'failed' })
      .where('id', '=', domainId)
      .execute();
    const edited = await server.call('PATCH', `/v1/templates/${template}`, {
      key,
      body: {
        mjml: MJML('Your account: {{ account_url }} on {{ plan_name }}'),
        variables: [
          { name: 'account_url', type: 'string' },
          { name: 'plan_name', type: 'string' },
        ],
      },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect((await server.call('POST', `/v1/templates/${template}/publish`, { key })).status).toBe(200);

    let c = await checklist(id);
    expect(c.items.map((i) => i.id)).toEqual([
      'status',
      'account',
      'footer',
      'variables',
      'content',
      'sender',
      'audience',
      'allowance',
      'gate',
      'tracking',
    ]);
    expect(statuses(c)).toEqual({
      status: 'ok',
      account: 'failing',
      footer: 'failing',
      variables: 'failing',
      content: 'unchecked',
      sender: 'failing',
      audience: 'failing',
      allowance: 'unchecked',
      // the bulk-sender checks wait for the content and sender (test/http/bulk-gate.test.ts runs them)
      gate: 'unchecked',
      tracking: 'ok',
    });
    expect(c.ready).toBe(false);
    expect(c.byId.account.message).toMatch(/account email is not confirmed.*signs in to the dashboard/);
    expect(c.byId.footer.message).toMatch(/set it in Settings → Footer address \(PATCH \/v1\/me\/footer\)/);
    expect(c.byId.variables.message).toMatch(/`plan_name` \(a string\) has no value and no default/);
    expect(c.byId.variables.message).not.toMatch(/account_url/);
    expect(c.byId.sender.message).toMatch(
      /`from` news@checklist\.example is not on a verified domain.*in Domains \(POST \/v1\/domains\)/,
    );
    expect(c.byId.audience.message).toMatch(/has no recipients/);
    expect(c.byId.tracking.message).toBe('Opens tracked, clicks tracked');
    // the send refuses with the account and footer messages, as the checklist words them
    const refused = await send(id);
    expectError(refused, 400, escaped(c.byId.account.message));
    expect(refused.body.error).toContain(c.byId.footer.message);

    await server.runtime.ctx.db
      .updateTable('accounts')
      .set({ email_confirmed_at: new Date() })
      .where('id', '=', account.account.id)
      .execute();
    c = await checklist(id);
    expect(c.byId.account).toMatchObject({ status: 'ok', message: 'The account email is confirmed' });
    expect(c.byId.footer.status).toBe('failing');
    expectError(await send(id), 400, escaped(c.byId.footer.message));

    expect((await server.call('PATCH', '/v1/me/footer', { key, body: { address: ADDRESS } })).status).toBe(
      200,
    );
    c = await checklist(id);
    expect(c.byId.footer).toEqual({
      id: 'footer',
      status: 'ok',
      message: `The footer carries your postal address: ${ADDRESS}`,
    });

    await server.runtime.ctx.db
      .updateTable('domains')
      .set({ status: 'verified' })
      .where('id', '=', domainId)
      .execute();
    c = await checklist(id);
    expect(c.byId.sender).toMatchObject({
      status: 'ok',
      message: 'news@checklist.example is on checklist.example, a verified domain of this project',
    });
    // the content is checked before the sender, as the send does
    expect(c.byId.variables.status).toBe('failing');
    expectError(await send(id), 400, /`plan_name` \(a string\) is required and has no default/);

    const given = await server.call('PATCH', `/v1/campaigns/${id}`, {
      key,
      body: { variables: { account_url: 'https://checklist.example/account', plan_name: 'Gold' } },
    });
    expect(given.status, JSON.stringify(given.body)).toBe(200);
    c = await checklist(id);
    expect(c.byId.variables).toMatchObject({
      status: 'ok',
      message: 'Every variable of the template has a value or a default',
    });
    expect(c.byId.content).toMatchObject({
      status: 'ok',
      message: 'The subject and template (version 2) render',
    });
    expect(c.byId.audience.status).toBe('failing');
    expect(c.byId.allowance.status).toBe('unchecked');
    expectError(await send(id), 400, escaped(c.byId.audience.message));

    const contact = await server.call('POST', '/v1/contacts', {
      key,
      body: { email: 'ann@readers.example' },
    });
    expect(contact.status).toBe(200);
    await server.call('POST', `/v1/lists/${list}/contacts`, {
      key,
      body: { emails: ['ann@readers.example'] },
    });
    c = await checklist(id);
    expect(c.byId.audience).toMatchObject({
      status: 'ok',
      message: '1 recipient after suppressions and unsubscribes',
    });
    expect(c.byId.allowance.status).toBe('ok');
    expect(c.ready).toBe(true);

    // the Free plan's monthly allowance used up: the 402 the send gives
    await addUsageToday(server, account.project.id, { sent: 3_000, shard: 1 });
    c = await checklist(id);
    expect(c.byId.allowance.status).toBe('failing');
    expect(c.ready).toBe(false);
    const over = await send(id);
    expect(over.status, JSON.stringify(over.body)).toBe(402);
    expect(over.body).toMatchObject({ feature: 'sending_overage', error: c.byId.allowance.message });
    await sql`delete from sending_usage where project_id = ${account.project.id} and shard = 1`.execute(
      server.runtime.ctx.db,
    );

    // the tracking settings are told as they are; then the send starts, and a second one is a 409
    await server.call('PATCH', `/v1/campaigns/${id}`, {
      key,
      body: { tracking: { opens: false, clicks: true } },
    });
    c = await checklist(id);
    expect(c.byId.tracking).toMatchObject({ status: 'ok', message: 'Opens not tracked, clicks tracked' });
    expect(c.ready).toBe(true);
    const sent = await send(id);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    c = await checklist(id);
    // (sending or already sent, as the worker goes)
    expect(c.byId.status).toMatchObject({
      status: 'failing',
      message: expect.stringMatching(/cannot be sent again/),
    });
    expectError(await send(id), 409, /cannot be sent again/);
  }, 60_000);

  it('passes an inline campaign from the shared address, saying its daily cap applies', async () => {
    const created = await server.call('POST', '/v1/campaigns', {
      key,
      body: {
        name: 'Inline news',
        from: `onboarding@${server.runtime.ctx.config.sharedDomain}`,
        subject: 'Hello',
        html: '<p>Hello</p>',
        list_ids: [list],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const c = await checklist(created.body.id);
    expect(c.ready).toBe(true);
    expect(c.byId.variables.message).toBe('Inline HTML: no template variables to give');
    expect(c.byId.content.message).toBe('The subject and HTML render');
    expect(c.byId.sender.message).toMatch(/shared domain's default address: its daily cap applies/);
    // the shared domain's daily cap (100 on Free) would be passed: the 429 the send gives
    await addUsageToday(server, account.project.id, { sent: 100, shared_domain_sent: 100, shard: 2 });
    const capped = await checklist(created.body.id);
    expect(capped.byId.allowance).toMatchObject({ status: 'failing' });
    expect(capped.byId.allowance.message).toMatch(/shared domain allows 100 messages a day.*in Domains/);
    expectError(await send(created.body.id), 429, escaped(capped.byId.allowance.message));
  });

  it("is a 404 for another project's campaign or an unknown id, a 401 without a key", async () => {
    const mine = await server.call('GET', '/v1/campaigns', { key });
    const id = mine.body.data[0].id;
    const other = await server.signupConfirmed();
    expectError(
      await server.call('GET', `/v1/campaigns/${id}/checklist`, { key: other.project_key.key }),
      404,
    );
    expectError(await server.call('GET', '/v1/campaigns/not-an-id/checklist', { key }), 404);
    expectError(await server.call('GET', `/v1/campaigns/${id}/checklist`), 401);
  });
});
