import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import type { SinkMessage } from '../helpers/smtp-sink.ts';

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const APPLE_PROXY = 'Mozilla/5.0';
const SCANNER = 'Mozilla/5.0 (compatible; Barracuda Sentinel link scanner)';
const LINK = 'https://shop.example.com/spring';
const SIMULATED = ['delivered', 'bounced', 'complained'].map((o) => `${o}@simulator.posthorn.test`);

let server: TestServer;
let account: SignupResult;
let key: string;
let list: string;
const readers = ['ada', 'grace', 'edsger', 'barbara', 'alan', 'donald'].map((n) => `${n}@readers.example`);

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  await server.call('PATCH', '/v1/me/footer', {
    key,
    body: { address: 'Posthorn Tests Ltd, 2 High Street, Leeds LS1 1AA' },
  });
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'News' } })).body.id;
  const added = await server.call('POST', `/v1/lists/${list}/contacts`, {
    key,
    body: { emails: [...readers, ...SIMULATED] },
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
}, 60_000);
afterAll(() => server?.close());

async function sendCampaign(name: string): Promise<string> {
  const created = await server.call('POST', '/v1/campaigns', {
    key,
    body: {
      name,
      from: FROM,
      subject: 'Spring',
      html: `<html><body><p>Hello</p><p><a href="${LINK}">See the sale</a></p></body></html>`,
      list_ids: [list],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.id;
  expect((await server.call('POST', `/v1/campaigns/${id}/send`, { key })).status).toBe(200);
  await waitForCampaignStatus(server, key, id, 'sent');
  // two minutes old, so fetches are not taken for the machines that come within seconds of sending,
  // and the sending falls in an earlier minute than the deliveries even just after a minute turns
  await server.runtime.ctx.db
    .updateTable('emails')
    .set({ sent_at: new Date(Date.now() - 120_000) })
    .where('campaign_id', '=', id)
    .where('sent_at', 'is not', null)
    .execute();
  return id;
}

/** The campaign's message to one reader, as the sink received it. */
function messageTo(campaignId: string, to: string): SinkMessage {
  const found = server.sink.messages.find(
    (m) => m.to[0] === to && String(m.parsed.headers.get('feedback-id') ?? '').includes(campaignId),
  );
  if (!found) throw new Error(`no message of ${campaignId} to ${to}`);
  return found;
}

/** Follows a tracking URL of a received message (the pixel or a link) with a user agent. */
function fetchTracked(message: SinkMessage, kind: 'open' | 'click', userAgent: string) {
  const pattern = kind === 'open' ? /<img src="([^"]+\/t\/o\/[\w-]+)"/ : /href="([^"]+\/t\/c\/[\w-]+)"/;
  const url = pattern.exec(message.parsed.html as string)?.[1];
  if (!url) throw new Error(`no ${kind} tracking URL in the message`);
  return fetch(`${server.url}${new URL(url).pathname}`, {
    headers: { 'user-agent': userAgent },
    redirect: 'manual',
  });
}

async function unsubscribe(message: SinkMessage) {
  const head = message.raw
    .toString('latin1')
    .split('\r\n\r\n')[0]
    .replace(/\r\n[ \t]+/g, ' ');
  const oneClick = /^List-Unsubscribe: <([^>]+)>/m.exec(head)?.[1] as string;
  const res = await fetch(`${server.url}${new URL(oneClick).pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  });
  expect(res.status).toBe(200);
}

const track = (email: string, value?: number) =>
  server.call('POST', '/v1/events', {
    key,
    body: { email, event: 'purchase', ...(value === undefined ? {} : { value, currency: 'EUR' }) },
  });

const campaignOf = async (eventId: string) =>
  (
    await server.runtime.ctx.db
      .selectFrom('events')
      .select('campaign_id')
      .where('id', '=', Number(eventId))
      .executeTakeFirstOrThrow()
  ).campaign_id;

let campaignId: string;

describe('campaign stats', () => {
  it('count what happened to the emails: sent, delivered, bounced, complained, human opens and clicks, unsubscribes', async () => {
    campaignId = await sendCampaign('Stats');
    const [ada, grace, edsger, barbara] = readers.map((r) => messageTo(campaignId, r));
    // ada opens twice, and Apple's proxy fetches her pixel too (a machine: not counted)
    expect((await fetchTracked(ada, 'open', CHROME)).status).toBe(200);
    expect((await fetchTracked(ada, 'open', CHROME)).status).toBe(200);
    expect((await fetchTracked(ada, 'open', APPLE_PROXY)).status).toBe(200);
    expect((await fetchTracked(grace, 'open', CHROME)).status).toBe(200);
    // a link scanner clicks barbara's link: not counted; edsger clicks his
    expect((await fetchTracked(barbara, 'click', SCANNER)).status).toBe(302);
    expect((await fetchTracked(edsger, 'click', CHROME)).status).toBe(302);
    await unsubscribe(grace);

    const got = await server.call('GET', `/v1/campaigns/${campaignId}`, { key });
    expect(got.status).toBe(200);
    expect(got.body.stats).toEqual({
      recipients: readers.length + SIMULATED.length,
      // the six readers (handed to the relay) and the two simulated addresses that accepted it
      sent: readers.length + 2,
      delivered: 2,
      bounced: 1,
      complained: 1,
      opens: { unique: 2, total: 3 },
      clicks: { unique: 1, total: 1 },
      unsubscribed: 1,
      revenue: [],
    });
    expect(got.body.ab).toBeNull();
  });

  it('show the campaign over time, per minute, and its links clicked by people', async () => {
    const got = await server.call('GET', `/v1/campaigns/${campaignId}/activity`, { key });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(got.body).toMatchObject({ object: 'campaign_activity', bucket_seconds: 60 });
    const buckets = got.body.buckets as { start: string; sent: number; delivered: number; bounced: number }[];
    const sum = (k: 'sent' | 'delivered' | 'bounced') => buckets.reduce((n, b) => n + b[k], 0);
    expect({ sent: sum('sent'), delivered: sum('delivered'), bounced: sum('bounced') }).toEqual({
      sent: readers.length + 2,
      delivered: 2,
      bounced: 1,
    });
    // sent two minutes ago (aged above), delivered now: consecutive minutes, oldest first, none missing
    expect(buckets.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < buckets.length; i++)
      expect(Date.parse(buckets[i].start) - Date.parse(buckets[i - 1].start)).toBe(60_000);
    expect(buckets[0].sent).toBe(readers.length + 2);
    // edsger's click counts; the scanner's on barbara's link does not
    expect(got.body.top_links).toEqual([{ url: LINK, clicks_unique: 1, clicks_total: 1 }]);

    const draft = await server.call('POST', '/v1/campaigns', {
      key,
      body: { name: 'Not yet', from: FROM, subject: 'S', html: '<p>x</p>', list_ids: [list] },
    });
    expect((await server.call('GET', `/v1/campaigns/${draft.body.id}/activity`, { key })).body).toEqual({
      object: 'campaign_activity',
      // counted now: a draft is never counted ahead
      as_of: null,
      bucket_seconds: 60,
      buckets: [],
      top_links: [],
    });
    const other = await server.signupConfirmed();
    expect(
      (await server.call('GET', `/v1/campaigns/${campaignId}/activity`, { key: other.project_key.key }))
        .status,
    ).toBe(404);
  });

  it('attributes a purchase after a human click to the campaign, in its stats and the revenue report', async () => {
    const edsger = readers[2];
    const bought = await track(edsger, 30);
    expect(bought.status, JSON.stringify(bought.body)).toBe(200);
    expect(await campaignOf(bought.body.id)).toBe(campaignId);
    // an event without a value is nobody's revenue
    expect(await campaignOf((await track(edsger)).body.id)).toBeNull();

    const got = await server.call('GET', `/v1/campaigns/${campaignId}`, { key });
    expect(got.body.stats.revenue).toEqual([{ currency: 'EUR', amount: 30, events: 1 }]);
    const listed = await server.call('GET', '/v1/campaigns', { key });
    expect(listed.body.data.find((c: { id: string }) => c.id === campaignId).stats).toEqual({
      recipients: readers.length + SIMULATED.length,
      revenue: [{ currency: 'EUR', amount: 30, events: 1 }],
    });
    const report = await server.call('GET', '/v1/reports/revenue?group_by=campaign', { key });
    expect(report.status).toBe(200);
    expect(report.body.data).toContainEqual({
      campaign: campaignId,
      currency: 'EUR',
      revenue: 30,
      events: 1,
      quantity: 0,
    });
  });

  it('does not attribute purchases without a click, after a machine click only, or outside the window', async () => {
    const [ada, , , barbara, alan] = readers;
    // ada opened but never clicked; barbara's only click was a link scanner's; alan did nothing
    for (const email of [ada, barbara, alan]) {
      const res = await track(email, 12.5);
      expect(res.status).toBe(200);
      expect(await campaignOf(res.body.id)).toBeNull();
    }
    // donald clicks, but eight days ago: past the seven-day window
    const donald = messageTo(campaignId, readers[5]);
    expect((await fetchTracked(donald, 'click', CHROME)).status).toBe(302);
    const db = server.runtime.ctx.db;
    const email = await db
      .selectFrom('emails')
      .select('id')
      .where('campaign_id', '=', campaignId)
      .where('contact_id', 'in', db.selectFrom('contacts').select('id').where('email', '=', readers[5]))
      .executeTakeFirstOrThrow();
    await db
      .updateTable('email_events')
      .set({ created_at: new Date(Date.now() - 8 * 86_400_000) })
      .where('email_id', '=', email.id)
      .where('type', '=', 'clicked')
      .execute();
    const late = await track(readers[5], 99);
    expect(await campaignOf(late.body.id)).toBeNull();

    const got = await server.call('GET', `/v1/campaigns/${campaignId}`, { key });
    expect(got.body.stats.revenue).toEqual([{ currency: 'EUR', amount: 30, events: 1 }]);
    expect(got.body.stats.clicks).toEqual({ unique: 2, total: 2 });
    const report = await server.call('GET', '/v1/reports/revenue?group_by=campaign', { key });
    expect(report.body.data).toEqual(
      expect.arrayContaining([
        { campaign: campaignId, currency: 'EUR', revenue: 30, events: 1, quantity: 0 },
        { campaign: null, currency: 'EUR', revenue: 12.5 * 3 + 99, events: 4, quantity: 0 },
      ]),
    );
  });

  it('gives a purchase to the campaign the contact clicked last', async () => {
    const later = await sendCampaign('Later');
    const edsger = readers[2];
    expect((await fetchTracked(messageTo(later, edsger), 'click', CHROME)).status).toBe(302);
    const bought = await track(edsger, 5);
    expect(await campaignOf(bought.body.id)).toBe(later);
    const got = await server.call('GET', `/v1/campaigns/${later}`, { key });
    expect(got.body.stats).toMatchObject({
      clicks: { unique: 1, total: 1 },
      revenue: [{ currency: 'EUR', amount: 5, events: 1 }],
    });
  }, 90_000);
});
