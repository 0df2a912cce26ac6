import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { FROM } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A new user's first campaign (issue 30, item 4): the builder's pre-send checklist (what /send
 * checks, from GET /v1/campaigns/{id}/checklist) with a link to the screen that fixes each item,
 * Send off with its reason while an item is not done, the template previewed with the campaign's
 * variables in a sandboxed frame, and the Over time chart after the send without a reload.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;
let key: string;
let list: string;
let campaignId: string;

const MJML =
  '<mjml><mj-body><mj-section><mj-column><mj-text>Your account: {{ account_url }} on the {{ plan_name }} plan</mj-text></mj-column></mj-section></mj-body></mjml>';

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  // confirmed, but the footer is still the placeholder
  account = await server.signupConfirmed({ name: 'Fresh Start' });
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  const template = await server.call('POST', '/v1/templates', {
    key,
    body: {
      name: 'Welcome',
      subject: 'Welcome aboard',
      mjml: MJML,
      variables: [
        { name: 'account_url', type: 'string' },
        { name: 'plan_name', type: 'string', default: 'Basic' },
      ],
    },
  });
  expect(template.status, JSON.stringify(template.body)).toBe(200);
  expect((await server.call('POST', `/v1/templates/${template.body.id}/publish`, { key })).status).toBe(200);
  const created = await server.call('POST', '/v1/campaigns', {
    key,
    body: { name: 'First mail', from: FROM, subject: 'Hello', html: '<p>Hello</p>', list_ids: [list] },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  campaignId = created.body.id;
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  await signInWithCode(page, server, account.account.email);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const checklist = () => page.getByRole('list', { name: 'Before sending' });
/** The item whose label is `label` (other items' messages may name it). */
const item = (label: string) =>
  checklist()
    .getByRole('listitem')
    .filter({ has: page.locator('strong', { hasText: new RegExp(`^${label}$`) }) });
const status = async (label: string) => (await item(label).locator('.badge').textContent())?.trim();

describe('the pre-send checklist', () => {
  it('lists what sending needs with links to fix it, and keeps Send off, saying why, until all is done', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${server.url}/campaigns/${campaignId}`);
    await page.getByRole('heading', { level: 1, name: 'First mail' }).waitFor();
    await item('Footer postal address').getByText('To do').waitFor();
    expect(await status('Account email')).toBe('Done');
    expect(await status('Sending domain')).toBe('Done');
    expect(await status('Audience')).toBe('To do');
    expect(await status('Plan allowance')).toBe('Not checked yet');
    expect(await item('Tracking').textContent()).toContain('Opens tracked, clicks tracked');
    // the server's message names the screen, and each item links to the screen that fixes it
    expect(await item('Footer postal address').textContent()).toContain('Settings → Footer address');
    for (const name of ['Lists', 'Segments', 'Contacts'])
      await item('Audience').getByRole('link', { name, exact: true }).waitFor();

    const send = page.getByRole('button', { name: 'Send now…' });
    expect(await send.isDisabled()).toBe(true);
    const reasonId = (await send.getAttribute('aria-describedby')) as string;
    expect(reasonId).toBeTruthy();
    expect(await page.locator(`[id="${reasonId}"]`).textContent()).toBe(
      'Sending waits for the checklist: Footer postal address, Audience, Plan allowance are not done yet.',
    );
    await page.getByLabel('Or send at').fill('2099-01-01T09:00');
    expect(await page.getByRole('button', { name: 'Schedule' }).isDisabled()).toBe(true);
    await checkScreen(page, 'campaign checklist (failing)', () => checklist().waitFor());

    // the footer, fixed where the link leads; back on the campaign, the item is done
    await item('Footer postal address')
      .getByRole('link', { name: 'Set the footer address in Settings' })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    await page
      .getByLabel('Postal address', { exact: true })
      .fill('Fresh Start Ltd, 9 Quay Street, Bristol BS1 4DJ');
    await page.getByRole('button', { name: 'Save address' }).click();
    await page.getByText('Footer address saved.').waitFor();
    await page.goBack();
    await item('Footer postal address').getByText('Done').waitFor();
    expect(await item('Footer postal address').textContent()).toContain('9 Quay Street');
  }, 90_000);

  it("previews the chosen template with the campaign's variables in a sandboxed frame", async () => {
    const form = page.getByRole('form', { name: 'Campaign' });
    await form.getByLabel('Content', { exact: true }).selectOption({ label: 'Template: Welcome' });
    const accountUrl = form.getByLabel('account_url', { exact: true });
    await accountUrl.waitFor();
    expect(await form.getByText('A string; required: no default.').count()).toBe(1);
    expect(await form.getByText('A string; default: Basic.').count()).toBe(1);
    const frame = page.locator('iframe[title="Preview of the campaign\'s message"]');
    expect(await frame.getAttribute('sandbox')).toBe('');
    // a sample stands in for the required value until it is given, and says so
    await page.getByText('Sample values stand in for account_url.').waitFor();
    const inside = page.frameLocator('iframe[title="Preview of the campaign\'s message"]');
    await inside.getByText('on the Basic plan').waitFor();
    await accountUrl.fill('https://app.example/account');
    await inside.getByText('Your account: https://app.example/account on the Basic plan').waitFor();
    await form.getByLabel('plan_name', { exact: true }).fill('Gold');
    await inside.getByText('Your account: https://app.example/account on the Gold plan').waitFor();
    expect(await page.getByText('Sample values stand in for').count()).toBe(0);
    await checkScreen(page, 'campaign builder with a template preview', () => frame.waitFor());

    await form.getByRole('button', { name: 'Save draft' }).click();
    // the checklist, read again after the save, checks the template now
    await item('Content').getByText('The subject and template (version 1) render').waitFor();
    expect(await status('Content')).toBe('Done');
    expect(await item('Template variables').textContent()).toContain(
      'Every variable of the template has a value or a default',
    );
    expect((await server.call('GET', `/v1/campaigns/${campaignId}`, { key })).body).toMatchObject({
      html: null,
      variables: { account_url: 'https://app.example/account', plan_name: 'Gold' },
    });
  }, 60_000);

  it('enables Send once the audience holds someone, and draws the send over time without a reload', async () => {
    const contact = await server.call('POST', '/v1/contacts', {
      key,
      body: { email: 'ann@readers.example' },
    });
    expect(contact.status).toBe(200);
    await server.call('POST', `/v1/lists/${list}/contacts`, {
      key,
      body: { emails: ['ann@readers.example'] },
    });
    await page.reload();
    await item('Audience').getByText('Done').waitFor();
    expect(await item('Audience').textContent()).toContain('1 recipient after suppressions and unsubscribes');
    expect(await status('Plan allowance')).toBe('Done');
    const send = page.getByRole('button', { name: 'Send now…' });
    // (once the audience count it confirms with has come too)
    await expect.poll(() => send.isDisabled(), { timeout: 15_000 }).toBe(false);
    expect(await send.getAttribute('aria-describedby')).toBeNull();
    expect(await page.getByText('Sending waits for the checklist').count()).toBe(0);
    await checkScreen(page, 'campaign checklist (ready)', () => checklist().waitFor());

    await page.setViewportSize({ width: 1280, height: 800 });
    await send.click();
    await page
      .getByRole('dialog', { name: 'Send to 1 recipients?' })
      .getByRole('button', { name: 'Send to 1 recipients' })
      .click();
    await page.getByText('Sent 1 of 1').waitFor({ timeout: 60_000 });
    // the chart follows the send (no reload): first "Nothing sent yet", then the bar
    const activity = page.getByRole('region', { name: 'Over time' });
    await activity.getByRole('img', { name: /Sent per minute: 1 in all/ }).waitFor({ timeout: 30_000 });
    await checkScreen(page, 'campaign sent, over time', () => activity.waitFor());
  }, 90_000);
});
