import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { marketingAccount, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The preference page in headless Chromium (issue 50, build item 3): the footer's link of a
 * message sent for a topic opens the reader's topics as switches; turning them and saving changes
 * the contact's topics, each change recorded with source preference_page.
 */

const READER = 'reader@browser-prefs.example';
let server: TestServer;
let browser: TestBrowser;
let key: string;
let contactId: string;
let footerLink: string;
const topics = { news: '', events: '' };

beforeAll(async () => {
  server = await startTestServer();
  key = (await marketingAccount(server, 'Prefs Browser Ltd, 2 Quay Street, Bristol BS1 4DB')).project_key.key;
  for (const [k, name, def] of [
    ['news', 'Newsletter', 'opt_in'],
    ['events', 'Events', 'opt_out'],
  ] as const) {
    const made = await server.call('POST', '/v1/topics', {
      key,
      body: { name, description: `${name} from us`, default_subscription: def },
    });
    topics[k] = made.body.id;
  }
  contactId = (await server.call('POST', '/v1/contacts', { key, body: { email: READER } })).body.id;
  const list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: [READER] } });
  const campaign = await server.call('POST', '/v1/campaigns', {
    key,
    body: {
      name: 'July',
      from: FROM,
      subject: 'July',
      html: '<p>July</p>',
      list_ids: [list],
      topic_id: topics.news,
    },
  });
  expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
  expect((await server.call('POST', `/v1/campaigns/${campaign.body.id}/send`, { key })).status).toBe(200);
  await waitForCampaignStatus(server, key, campaign.body.id, 'sent', 30_000);
  const message = await server.sink.waitFor((m) => m.to[0] === READER);
  const href = /<a href="(https?:\/\/[^"]+\/u\/[\w-]+)"[^>]*>Unsubscribe<\/a>/.exec(
    String(message.parsed.html),
  )?.[1];
  if (!href) throw new Error('no unsubscribe link in the footer');
  footerLink = `${server.url}${new URL(href).pathname}`;
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the preference page in headless Chromium', () => {
  it('switches topics from the footer link and records each change as the page’s', async () => {
    const page = await browser.context.newPage();
    expect((await page.goto(footerLink))?.status()).toBe(200);
    const news = page.getByRole('checkbox', { name: /Newsletter/ });
    const events = page.getByRole('checkbox', { name: /Events/ });
    expect(await news.isChecked()).toBe(true);
    expect(await events.isChecked()).toBe(false);
    await news.uncheck();
    await events.check();
    await page.getByRole('button', { name: 'Save my choices' }).click();
    await page.getByRole('status').getByText('Your choices are saved.').waitFor();
    expect(await page.getByRole('checkbox', { name: /Newsletter/ }).isChecked()).toBe(false);
    expect(await page.getByRole('checkbox', { name: /Events/ }).isChecked()).toBe(true);

    const contact = (await server.call('GET', `/v1/contacts/${contactId}`, { key })).body;
    expect(contact.subscribed).toBe(true);
    expect(contact.consent_history.filter((h: { topic_id: string | null }) => h.topic_id)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ status: 'withdrawn', source: 'preference_page', topic_id: topics.news }),
        expect.objectContaining({ status: 'granted', source: 'preference_page', topic_id: topics.events }),
      ]),
    );
    await page.close();
  });
});
