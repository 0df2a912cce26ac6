import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Issue 50, build item 5 in the browser: the Topics screen makes a topic and previews the preference page; a contact's page shows
 * their topics with a switch each, and a switch turned there is recorded in the consent history
 * with the dashboard as its source, naming the topic; a campaign's form chooses its topic.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;
let key: string;
let readerId: string;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Tess Topics' });
  key = account.project_key.key;
  const reader = await server.call('POST', '/v1/contacts', { key, body: { email: 'ada@readers.example' } });
  expect(reader.status, JSON.stringify(reader.body)).toBe(200);
  readerId = reader.body.id;
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  await signInWithCode(page, server, account.account.email);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('topics in the dashboard', () => {
  it('makes a topic on the Topics screen, reached from the menu', async () => {
    await page.goto(`${server.url}/`);
    await page.getByRole('link', { name: 'Topics', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Topics' }).waitFor();
    await page.getByText('No topics yet').waitFor();
    await page.getByRole('button', { name: 'New topic' }).click();
    const dialog = page.getByRole('dialog', { name: 'New topic' });
    await dialog.getByLabel('Name', { exact: true }).fill('Product updates');
    await dialog.getByLabel('Description for readers').fill('New features, once a month');
    await dialog.getByLabel('Who gets it').selectOption({ label: 'Everyone gets it until they leave' });
    await checkScreen(page, 'new topic', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Create topic' }).click();
    const row = page.getByRole('row', { name: /Product updates/ });
    await row.waitFor();
    // the one contact gets it by default
    await row.getByRole('cell', { name: '1', exact: true }).waitFor();
    // what readers see: the public topic with its description and a switch, in the page's own markup
    const preview = page.frameLocator('iframe[title="Preference page preview"]');
    await preview.getByRole('checkbox', { name: /Product updates.*New features, once a month/ }).waitFor();
    await preview.getByRole('button', { name: 'Unsubscribe from all marketing emails' }).waitFor();
    await checkScreen(page, 'topics', () => row.waitFor());
    const topics = (await server.call('GET', '/v1/topics', { key })).body.data;
    expect(topics).toEqual([
      expect.objectContaining({
        name: 'Product updates',
        default_subscription: 'opt_in',
        visibility: 'public',
      }),
    ]);
  });

  it("turns a contact's topic off on their page, recorded as the dashboard's", async () => {
    await page.goto(`${server.url}/contacts/${readerId}`);
    const box = page.getByRole('checkbox', { name: /Product updates/ });
    await box.waitFor();
    expect(await box.isChecked()).toBe(true);
    await page.getByText("(the topic's default)").waitFor();
    await box.uncheck();
    await eventually(async () => {
      const mine = (await server.call('GET', `/v1/contacts/${readerId}/topics`, { key })).body.data;
      expect(mine).toEqual([expect.objectContaining({ subscription: 'opt_out', chosen: true })]);
    });
    await page.getByText('topic: Product updates · source: dashboard').waitFor();
    const history = (await server.call('GET', `/v1/contacts/${readerId}`, { key })).body.consent_history;
    expect(history).toEqual([expect.objectContaining({ status: 'withdrawn', source: 'dashboard' })]);
    await checkScreen(page, 'contact topics', () => box.waitFor());
  });

  it("sends a campaign for a topic: chosen on the campaign's form and saved with it", async () => {
    const topic = (await server.call('GET', '/v1/topics', { key })).body.data[0];
    const made = await server.call('POST', '/v1/campaigns', {
      key,
      body: { name: 'Spring updates', from: FROM, subject: 'New this spring', html: '<p>Hello</p>' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    await page.goto(`${server.url}/campaigns/${made.body.id}`);
    const form = page.getByRole('form', { name: 'Campaign' });
    await form.getByLabel('Topic', { exact: true }).selectOption({ label: 'Product updates' });
    await form.getByText('its unsubscribe link leaves this topic only').waitFor();
    await form.getByRole('button', { name: 'Save draft' }).click();
    await eventually(async () =>
      expect((await server.call('GET', `/v1/campaigns/${made.body.id}`, { key })).body.topic_id).toBe(
        topic.id,
      ),
    );
  });
});
