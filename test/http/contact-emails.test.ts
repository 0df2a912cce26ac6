import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { SIMULATOR_DOMAIN } from '../../src/mail/simulator.ts';
import { expectError } from '../helpers/assertions.ts';
import { campaignMessages, FROM, waitForCampaignStatus, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * GET /v1/contacts/{id}/emails (issue 48, build item 5): the messages a contact was sent, with the
 * campaign they came from, their status, bounce, and opens and clicks made through the real
 * tracking URLs of the delivered message.
 */

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const READER = 'reader@example.org';
const BOUNCER = `bounced@${SIMULATOR_DOMAIN}`;
const LINK = 'https://shop.example.com/sale';

let server: TestServer;
let account: SignupResult;
let key: string;
let contactId: string;
let campaignId: string;
let transactionalId: string;

const emailsOf = (contact: string, query = '') =>
  server.call('GET', `/v1/contacts/${encodeURIComponent(contact)}/emails${query}`, { key });

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  await server.call('PATCH', '/v1/me/footer', {
    key,
    body: { address: 'Posthorn Tests Ltd, 2 High Street, Leeds LS1 1AA' },
  });
  const list = (await server.call('POST', '/v1/lists', { key, body: { name: 'News' } })).body.id;
  for (const email of [READER, BOUNCER]) {
    const made = await server.call('POST', '/v1/contacts', { key, body: { email } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    if (email === READER) contactId = made.body.id;
  }
  await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: [READER, BOUNCER] } });
  const campaign = await server.call('POST', '/v1/campaigns', {
    key,
    body: {
      name: 'Spring news',
      from: FROM,
      subject: 'Spring is here',
      html: `<html><body><p>Hello</p><p><a href="${LINK}">See the sale</a></p></body></html>`,
      list_ids: [list],
    },
  });
  expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
  campaignId = campaign.body.id;
  expect((await server.call('POST', `/v1/campaigns/${campaignId}/send`, { key })).status).toBe(200);
  await waitForCampaignStatus(server, key, campaignId, 'sent');
  const sent = await server.call('POST', '/v1/emails', {
    key,
    body: { from: FROM, to: READER, subject: 'Your receipt', html: '<p>Thanks</p>' },
  });
  transactionalId = sent.body.id;
  await waitForStatus(server, key, transactionalId, 'sent');
}, 120_000);
afterAll(() => server?.close());

describe('GET /v1/contacts/{id}/emails', () => {
  it('lists a delivered campaign email with the opens and clicks made through its tracking URLs', async () => {
    const [message] = campaignMessages(server.sink.messages, campaignId).filter((m) => m.to[0] === READER);
    const html = message.parsed.html as string;
    const pixel = /<img src="([^"]+\/t\/o\/[\w-]+)"/.exec(html)?.[1] as string;
    const click = /href="([^"]+\/t\/c\/[\w-]+)"/.exec(html)?.[1] as string;
    expect(pixel && click, html).toBeTruthy();
    // a person reads it a minute later (a fetch in the first seconds is taken for a machine's)
    await server.runtime.ctx.db
      .updateTable('emails')
      .set({ sent_at: new Date(Date.now() - 60_000) })
      .where('campaign_id', '=', campaignId)
      .execute();
    const get = (url: string, ua: string) =>
      fetch(`${server.url}${new URL(url).pathname}`, { headers: { 'user-agent': ua }, redirect: 'manual' });
    expect((await get(pixel, CHROME)).status).toBe(200);
    expect((await get(pixel, 'curl/8.5.0')).status).toBe(200);
    const clicked = await get(click, CHROME);
    expect(clicked.status).toBe(302);
    expect(clicked.headers.get('location')).toBe(LINK);

    const res = await eventually(async () => {
      const r = await emailsOf(contactId);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.data[1].clicks.people).toBe(1);
      return r;
    });
    expect(res.body).toMatchObject({ total: 2, limit: 25, offset: 0 });
    // newest first: the receipt, then the campaign's message
    const [receipt, news] = res.body.data;
    expect(receipt).toMatchObject({
      id: transactionalId,
      object: 'contact_email',
      stream: 'transactional',
      subject: 'Your receipt',
      campaign: null,
      flow: null,
      opens: { people: 0, machines: 0, last_at: null },
    });
    expect(news).toMatchObject({
      object: 'contact_email',
      stream: 'marketing',
      status: 'sent',
      subject: 'Spring is here',
      campaign: { id: campaignId, name: 'Spring news' },
      flow: null,
      opens: { people: 1, machines: 1 },
      clicks: { people: 1, machines: 0 },
      bounce: null,
      complained_at: null,
    });
    expect(news.opens.last_at).not.toBeNull();
    expect(news.sent_at).not.toBeNull();
    // by address as well as by id, and one page at a time
    const byAddress = await emailsOf(READER.toUpperCase(), '?limit=1&offset=1');
    expect(byAddress.status).toBe(200);
    expect(byAddress.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(byAddress.body.data.map((e: { id: string }) => e.id)).toEqual([news.id]);
  });

  it('shows a bounce with its type and the answer', async () => {
    const res = await eventually(async () => {
      const r = await emailsOf(BOUNCER);
      expect(r.body.data[0]?.status).toBe('bounced');
      return r;
    });
    expect(res.body.data[0]).toMatchObject({
      campaign: { id: campaignId },
      bounce: { type: 'hard', at: expect.any(String) },
    });
    expect(res.body.data[0].bounce.response).toMatch(/550|bounce/i);
  });

  it("names the flow and the send step of a flow's message", async () => {
    const flow = await server.call('POST', '/v1/flows', {
      key,
      body: {
        name: 'Welcome',
        trigger: { type: 'manual' },
        steps: [{ id: 'hello', type: 'send', subject: 'Welcome aboard', html: '<p>Glad you are here</p>' }],
      },
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(200);
    const activated = await server.call('POST', `/v1/flows/${flow.body.id}/activate`, { key });
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);
    const enrolled = await server.call('POST', `/v1/flows/${flow.body.id}/enrollments`, {
      key,
      body: { email: READER },
    });
    expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(200);
    const welcome = await eventually(
      async () => {
        const found = (await emailsOf(contactId)).body.data.find((e: { flow: unknown }) => e.flow);
        expect(found).toBeDefined();
        return found;
      },
      { timeoutMs: 30_000, message: "the flow's message never showed" },
    );
    expect(welcome).toMatchObject({
      stream: 'automation',
      subject: 'Welcome aboard',
      campaign: null,
      flow: { id: flow.body.id, name: 'Welcome', step: 'hello' },
    });
  });

  it('is 404 for an unknown contact or another project’s, and 400 for a bad page', async () => {
    expectError(await emailsOf('nobody@example.org'), 404, /Contact/);
    expectError(await emailsOf('00000000-0000-4000-8000-000000000000'), 404, /Contact/);
    const other = await server.signupConfirmed({ email: 'other@example.net' });
    const theirs = await server.call('GET', `/v1/contacts/${contactId}/emails`, {
      key: other.project_key.key,
    });
    expectError(theirs, 404, /Contact/);
    expectError(await emailsOf(contactId, '?limit=0'), 400, /limit/);
    expectError(await emailsOf(contactId, '?offset=-1'), 400, /offset/);
  });
});
