import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { campaignMessages, FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Issue 48, build item 6: a campaign from a template takes the template's subject unless the person
 * gives one. A campaign without a subject follows its template's (even a version published later);
 * choosing another template without giving a subject takes that template's, where before the old
 * subject silently replaced it; a subject given replaces the template's; null gives it back.
 */

const MJML =
  '<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{ contact.first_name }}</mj-text></mj-column></mj-section></mj-body></mjml>';

let server: TestServer;
let account: SignupResult;
let key: string;
let list: string;
let template: string;

async function publishedTemplate(name: string, subject: string): Promise<string> {
  const made = await server.call('POST', '/v1/templates', { key, body: { name, subject, mjml: MJML } });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  expect((await server.call('POST', `/v1/templates/${made.body.id}/publish`, { key })).status).toBe(200);
  return made.body.id;
}

async function create(body: Record<string, unknown>) {
  const res = await server.call('POST', '/v1/campaigns', {
    key,
    body: { name: 'Autumn', from: FROM, list_ids: [list], ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const patch = (id: string, body: Record<string, unknown>) =>
  server.call('PATCH', `/v1/campaigns/${id}`, { key, body });

/** Sends the campaign and gives the subject its one recipient got. */
async function sentSubject(id: string): Promise<string | undefined> {
  const started = await server.call('POST', `/v1/campaigns/${id}/send`, { key });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  await waitForCampaignStatus(server, key, id, 'sent');
  const message = await server.sink.waitFor((m) => campaignMessages([m], id).length === 1);
  return message.parsed.subject;
}

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  await server.call('PATCH', '/v1/me/footer', {
    key,
    body: { address: 'Posthorn Tests Ltd, 2 High Street, Leeds LS1 1AA' },
  });
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  await server.call('POST', '/v1/contacts', {
    key,
    body: { email: 'ada@readers.example', first_name: 'Ada' },
  });
  await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: ['ada@readers.example'] } });
  template = await publishedTemplate('Autumn news', 'Autumn news for {{ contact.first_name }}');
}, 60_000);
afterAll(() => server?.close());

describe("a campaign's subject and its template's", () => {
  it("a campaign created with a template and no subject is sent with the template's, its latest version's", async () => {
    const campaign = await create({ template_id: template });
    expect(campaign.subject).toBeNull();
    // a version published after the campaign was saved gives its subject too
    await server.call('PATCH', `/v1/templates/${template}`, {
      key,
      body: { subject: 'Autumn letter for {{ contact.first_name }}' },
    });
    expect((await server.call('POST', `/v1/templates/${template}/publish`, { key })).status).toBe(200);
    expect(await sentSubject(campaign.id)).toBe('Autumn letter for Ada');
  });

  it("choosing a template without giving a subject takes the template's: the HTML's subject does not stay", async () => {
    const campaign = await create({ subject: 'Written for the HTML', html: '<p>Hello</p>' });
    const switched = await patch(campaign.id, { template_id: template });
    expect(switched.status, JSON.stringify(switched.body)).toBe(200);
    expect(switched.body).toMatchObject({ subject: null, template_id: template, html: null });
    // and from one template to another
    const other = await publishedTemplate('Winter news', 'Winter news for {{ contact.first_name }}');
    const own = await patch(campaign.id, { subject: 'Our own subject' });
    expect(own.body.subject).toBe('Our own subject');
    const again = await patch(campaign.id, { template_id: other });
    expect(again.body.subject).toBeNull();
    expect(await sentSubject(campaign.id)).toBe('Winter news for Ada');
  });

  it("a subject the person gives replaces the template's, kept across edits of other fields; null gives the template's back", async () => {
    const campaign = await create({ template_id: template, subject: 'Just for {{ contact.first_name }}' });
    expect(campaign.subject).toBe('Just for {{ contact.first_name }}');
    // naming the same template again, or a subject with it, keeps the person's subject
    expect((await patch(campaign.id, { template_id: template, name: 'Autumn 2' })).body.subject).toBe(
      'Just for {{ contact.first_name }}',
    );
    expect((await patch(campaign.id, { subject: null })).body.subject).toBeNull();
    const mine = await patch(campaign.id, {
      template_id: template,
      subject: 'Mine, {{ contact.first_name }}',
    });
    expect(mine.body.subject).toBe('Mine, {{ contact.first_name }}');
    expect(await sentSubject(campaign.id)).toBe('Mine, Ada');
  });

  it('refuses an empty subject and a campaign of HTML without one, writing nothing', async () => {
    const before = (await server.call('GET', '/v1/campaigns', { key })).body.total;
    expectError(
      await server.call('POST', '/v1/campaigns', {
        key,
        body: { name: 'Empty', from: FROM, subject: '  ', template_id: template, list_ids: [list] },
      }),
      400,
      /subject/,
    );
    expectError(
      await server.call('POST', '/v1/campaigns', {
        key,
        body: { name: 'No subject', from: FROM, html: '<p>Hi</p>', list_ids: [list] },
      }),
      400,
      /subject/,
    );
    expect((await server.call('GET', '/v1/campaigns', { key })).body.total).toBe(before);
  });
});
