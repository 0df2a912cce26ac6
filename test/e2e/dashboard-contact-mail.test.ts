import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { campaignMessages, FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Issue 48, build items 5 and 6 in the browser: a campaign made from a template in the dashboard is
 * sent with the template's subject; a contact's page lists the campaign email they were sent,
 * delivered to the SMTP sink, then opened and clicked through the tracking URLs in that message.
 */

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const TEMPLATE_SUBJECT = 'Autumn news for {{ contact.first_name }}';
const MJML =
  '<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{ contact.first_name }}</mj-text></mj-column></mj-section></mj-body></mjml>';
const LINK = 'https://shop.example.com/autumn';

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;
let key: string;
let list: string;
let readerId: string;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Cora Contact' });
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  await server.call('PATCH', '/v1/me/footer', {
    key,
    body: { address: 'Posthorn Tests Ltd, 2 High Street, Leeds LS1 1AA' },
  });
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  const reader = await server.call('POST', '/v1/contacts', {
    key,
    body: { email: 'ada@readers.example', first_name: 'Ada' },
  });
  expect(reader.status, JSON.stringify(reader.body)).toBe(200);
  readerId = reader.body.id;
  await server.call('POST', `/v1/lists/${list}/contacts`, { key, body: { emails: ['ada@readers.example'] } });
  const template = await server.call('POST', '/v1/templates', {
    key,
    body: { name: 'Autumn news', subject: TEMPLATE_SUBJECT, mjml: MJML },
  });
  expect(template.status, JSON.stringify(template.body)).toBe(200);
  expect((await server.call('POST', `/v1/templates/${template.body.id}/publish`, { key })).status).toBe(200);
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  await signInWithCode(page, server, account.account.email);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("a contact's mail and a campaign from a template", () => {
  it("sends a campaign made from a template with the template's subject", async () => {
    await page.goto(`${server.url}/campaigns`);
    await page.getByRole('button', { name: 'New campaign' }).click();
    const dialog = page.getByRole('dialog', { name: 'New campaign' });
    await dialog.getByLabel('Name', { exact: true }).fill('Autumn');
    await dialog.getByLabel('From', { exact: true }).fill(FROM);
    await dialog.getByLabel('Content', { exact: true }).selectOption({ label: 'Template: Autumn news' });
    // choosing the template fills the subject with the template's, which stays editable
    const subject = dialog.getByLabel('Subject', { exact: true });
    await eventually(async () => expect(await subject.inputValue()).toBe(TEMPLATE_SUBJECT));
    expect(await subject.isEditable()).toBe(true);
    await checkScreen(page, 'new campaign from a template', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Create draft' }).click();
    await page.getByRole('heading', { level: 1, name: 'Autumn' }).waitFor();

    const form = page.getByRole('form', { name: 'Campaign' });
    const shown = form.getByLabel('Subject', { exact: true });
    await eventually(async () => expect(await shown.inputValue()).toBe(TEMPLATE_SUBJECT));
    await form.getByRole('checkbox', { name: 'Readers' }).check();
    await form.getByRole('button', { name: 'Save draft' }).click();
    await page.getByText('1 recipient after suppressions and unsubscribes').waitFor();
    const campaignId = new URL(page.url()).pathname.split('/').pop() as string;
    // the campaign keeps no subject of its own: it follows the template's
    const saved = await server.call('GET', `/v1/campaigns/${campaignId}`, { key });
    expect(saved.body).toMatchObject({ subject: null, html: null });

    await page.getByRole('button', { name: 'Send now…' }).click();
    const confirm = page.getByRole('dialog', { name: /^Send to 1 recipients?\?$/ });
    await confirm.getByRole('button', { name: /^Send to 1 recipients?$/ }).click();
    await waitForCampaignStatus(server, key, campaignId, 'sent');
    const message = await server.sink.waitFor(
      (m) => campaignMessages([m], campaignId).length === 1 && m.to[0] === 'ada@readers.example',
    );
    expect(message.parsed.subject).toBe('Autumn news for Ada');
  }, 120_000);

  it('lists on the contact page a campaign email that was delivered, opened and clicked', async () => {
    const created = await server.call('POST', '/v1/campaigns', {
      key,
      body: {
        name: 'Winter sale',
        from: FROM,
        subject: 'Winter sale, {{ contact.first_name }}',
        html: `<html><body><p>Hello</p><p><a href="${LINK}">See the sale</a></p></body></html>`,
        list_ids: [list],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const campaignId = created.body.id;
    expect((await server.call('POST', `/v1/campaigns/${campaignId}/send`, { key })).status).toBe(200);
    await waitForCampaignStatus(server, key, campaignId, 'sent');
    const message = await server.sink.waitFor((m) => campaignMessages([m], campaignId).length === 1);
    const html = message.parsed.html as string;
    const pixel = /<img src="([^"]+\/t\/o\/[\w-]+)"/.exec(html)?.[1] as string;
    const click = /href="([^"]+\/t\/c\/[\w-]+)"/.exec(html)?.[1] as string;
    expect(pixel && click, html).toBeTruthy();
    // the reader opens it a minute later (a fetch in the first seconds is taken for a machine's)
    await server.runtime.ctx.db
      .updateTable('emails')
      .set({ sent_at: new Date(Date.now() - 60_000) })
      .where('campaign_id', '=', campaignId)
      .execute();
    const reader = (url: string) =>
      fetch(`${server.url}${new URL(url).pathname}`, {
        headers: { 'user-agent': CHROME },
        redirect: 'manual',
      });
    expect((await reader(pixel)).status).toBe(200);
    expect((await reader(click)).headers.get('location')).toBe(LINK);

    await page.goto(`${server.url}/contacts/${readerId}`);
    await page.getByRole('heading', { level: 1, name: 'ada@readers.example' }).waitFor();
    const messages = page.getByRole('region', { name: 'Messages' });
    const row = messages.getByRole('row', { name: /Winter sale, Ada/ });
    await row.waitFor();
    await row.getByRole('link', { name: 'Winter sale', exact: true }).waitFor();
    expect(await row.locator('[data-label="Status"]').textContent()).toContain('sent');
    expect((await row.locator('[data-label="Opens"]').textContent())?.trim()).toMatch(/^1\b/);
    expect((await row.locator('[data-label="Clicks"]').textContent())?.trim()).toMatch(/^1\b/);
    // the campaign from the template is there too, newest first after it
    await messages.getByRole('row', { name: /Autumn news for Ada/ }).waitFor();
    await messages.getByText('2 messages · page 1 of 1').waitFor();
    // the list and the consent history are on the same page
    await page.getByRole('region', { name: 'Lists' }).getByRole('link', { name: 'Readers' }).waitFor();
    await page.getByRole('region', { name: 'Consent history' }).waitFor();
    await checkScreen(page, 'contact page with messages', () => row.waitFor());

    // the subject leads to the message itself
    await row.getByRole('link', { name: 'Winter sale, Ada' }).click();
    await page.getByRole('heading', { level: 1, name: /Winter sale, Ada/ }).waitFor();
  }, 120_000);
});
