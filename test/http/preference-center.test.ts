import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_CSP } from '../../src/http/html.ts';
import { FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { marketingAccount, type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import type { SinkMessage } from '../helpers/smtp-sink.ts';

/**
 * The preference page without JavaScript (issue 50, build item 3): GET /u/{token} shows the
 * reader's public topics with a switch each, who sends, and "unsubscribe from everything"; its
 * plain form, posted as a browser without scripts posts it, changes the topics (each change in the
 * consent history with source preference_page) and answers with the page again.
 */

let server: TestServer;
let account: SignupResult;
let key: string;
let contactId: string;
let page: string;
const topics = { news: '', events: '', internal: '' };
const READER = 'reader@prefs.example';

/** The page's URL on the test server, from the List-Unsubscribe header of the delivered message. */
function pageUrl(message: SinkMessage): string {
  const header = message.parsed.headerLines.find((h) => h.key === 'list-unsubscribe')?.line ?? '';
  const url = /<(https?:\/\/[^>]+)>/.exec(header)?.[1];
  if (!url) throw new Error(`no http URI in List-Unsubscribe: ${header}`);
  return `${server.url}${new URL(url).pathname}`;
}

/** Posts the form as a browser does: urlencoded fields in document order. */
const post = (fields: [string, string][]) =>
  fetch(page, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });

/** Each switch of the page: its topic id and whether it is on. */
function switches(html: string): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const m of html.matchAll(/<input type="checkbox" name="topic_([0-9a-f-]+)" value="on"( checked)?>/g))
    out[m[1]] = m[2] !== undefined;
  return out;
}

async function reader() {
  const contact = (await server.call('GET', `/v1/contacts/${contactId}`, { key })).body;
  const mine = (await server.call('GET', `/v1/contacts/${contactId}/topics`, { key })).body.data;
  return {
    subscribed: contact.subscribed as boolean,
    history: contact.consent_history as { status: string; source: string; topic_id: string | null }[],
    topics: Object.fromEntries(mine.map((t: { id: string; subscription: string }) => [t.id, t.subscription])),
  };
}

beforeAll(async () => {
  server = await startTestServer();
  account = await marketingAccount(server, 'Prefs Tests Ltd, 1 High Street, York YO1 7HH');
  key = account.project_key.key;
  for (const [k, body] of [
    [
      'news',
      {
        name: 'Newsletter',
        description: 'Once a month, the best of the blog',
        default_subscription: 'opt_in',
      },
    ],
    ['events', { name: 'Events', description: 'Invitations to meet-ups', default_subscription: 'opt_out' }],
    ['internal', { name: 'Staff notes', default_subscription: 'opt_in', visibility: 'private' }],
  ] as const) {
    const made = await server.call('POST', '/v1/topics', { key, body });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    topics[k] = made.body.id;
  }
  contactId = (await server.call('POST', '/v1/contacts', { key, body: { email: READER } })).body.id;
  const list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: [READER] } });
  const campaign = await server.call('POST', '/v1/campaigns', {
    key,
    body: {
      name: 'June',
      from: FROM,
      subject: 'June',
      html: '<p>June</p>',
      list_ids: [list],
      topic_id: topics.news,
    },
  });
  expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
  expect((await server.call('POST', `/v1/campaigns/${campaign.body.id}/send`, { key })).status).toBe(200);
  await waitForCampaignStatus(server, key, campaign.body.id, 'sent', 30_000);
  page = pageUrl(await server.sink.waitFor((m) => m.to[0] === READER));
}, 60_000);
afterAll(async () => {
  await server?.close();
});

describe('the preference page without JavaScript', () => {
  it('shows who sends and the public topics with their state, under the strict policy', async () => {
    const res = await fetch(page);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe(PAGE_CSP);
    const html = await res.text();
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain(account.project.name);
    expect(html).toContain('onboarding@posthorn.localhost');
    expect(html).toContain('Once a month, the best of the blog');
    expect(html).toMatch(/Newsletter<\/strong> <span class="muted">\(this email\)/);
    expect(switches(html)).toEqual({ [topics.news]: true, [topics.events]: false });
    expect(html).toContain('Unsubscribe from all marketing emails');
    // opening the page changes nothing
    expect((await reader()).history.filter((h) => h.topic_id)).toEqual([]);
  });

  it('the form switches topics, records each change with its source, and answers with the page', async () => {
    const res = await post([
      ['scope', 'topics'],
      [`topic_${topics.events}`, 'off'],
      [`topic_${topics.events}`, 'on'],
      [`topic_${topics.news}`, 'off'],
      // a private topic is not the page's to change, even when a form names it
      [`topic_${topics.internal}`, 'off'],
    ]);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('Your choices are saved.');
    expect(switches(html)).toEqual({ [topics.news]: false, [topics.events]: true });
    const after = await reader();
    expect(after.subscribed).toBe(true);
    expect(after.topics).toEqual({
      [topics.news]: 'opt_out',
      [topics.events]: 'opt_in',
      [topics.internal]: 'opt_in',
    });
    const changes = after.history.filter((h) => h.topic_id);
    expect(changes).toHaveLength(2);
    expect(changes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ status: 'withdrawn', source: 'preference_page', topic_id: topics.news }),
        expect.objectContaining({ status: 'granted', source: 'preference_page', topic_id: topics.events }),
      ]),
    );
    // the same form again changes nothing and records nothing
    await post([
      ['scope', 'topics'],
      [`topic_${topics.events}`, 'off'],
      [`topic_${topics.events}`, 'on'],
      [`topic_${topics.news}`, 'off'],
    ]);
    expect((await reader()).history.filter((h) => h.topic_id)).toHaveLength(2);
  });

  it('"unsubscribe from all" leaves all marketing, recorded as the page’s, and then offers Resubscribe', async () => {
    const res = await post([['scope', 'all']]);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('will no longer receive marketing emails');
    const after = await reader();
    expect(after.subscribed).toBe(false);
    expect(after.history.at(-1)).toMatchObject({
      status: 'withdrawn',
      source: 'preference_page',
      topic_id: null,
    });
    const again = await (await fetch(page)).text();
    expect(again).toContain('is unsubscribed from marketing emails');
    expect(switches(again)).toEqual({});
    expect(again).toContain('Resubscribe');
  });

  it('a form for a token not ours changes nothing', async () => {
    const res = await fetch(`${page.slice(0, -3)}AAA`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `scope=topics&topic_${topics.events}=off`,
    });
    expect(res.status).toBe(404);
    expect((await reader()).topics[topics.events]).toBe('opt_in');
  });
});
