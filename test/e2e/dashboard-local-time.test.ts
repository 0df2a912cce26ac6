import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signInWithCode } from '../helpers/dashboard.ts';
import { FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Local time in the dashboard (issue 50, items 4 and 5): the campaign's schedule step chooses each
 * recipient's local time, and Settings sets the project's time zone and quiet hours; both are what
 * the API then answers.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;
let key: string;
let campaignId: string;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Clock Keeper' });
  key = account.project_key.key;
  const created = await server.call('POST', '/v1/campaigns', {
    key,
    body: { name: 'Morning mail', from: FROM, subject: 'Hello', html: '<p>Hello</p>' },
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

const api = async (path: string) => (await server.call('GET', path, { key })).body;

describe('local time in the dashboard', () => {
  it('sets a campaign to each recipient’s local time, and the project’s zone and quiet hours', async () => {
    await page.goto(`${server.url}/campaigns/${campaignId}`);
    const choice = page.getByRole('group', { name: 'Delivery time' });
    await choice.getByRole('radio', { name: /Each recipient at a time of day/ }).check();
    await choice.getByText(/Each recipient gets it at 09:00/).waitFor();
    await choice.getByLabel('Local time').fill('07:30');
    await eventually(async () => (await api(`/v1/campaigns/${campaignId}`)).local_time === '07:30', {
      timeoutMs: 15_000,
      message: 'the local time saved',
    });
    await choice.getByRole('radio', { name: /Everyone as soon as/ }).check();
    await eventually(async () => (await api(`/v1/campaigns/${campaignId}`)).local_time === null, {
      timeoutMs: 15_000,
      message: 'the local time cleared',
    });

    await page.goto(`${server.url}/settings`);
    const form = page.getByRole('form', { name: 'Time zone and quiet hours' });
    await form.getByLabel('Time zone').fill('Europe/Berlin');
    await form.getByLabel('Quiet hours').check();
    await form.getByLabel('From').fill('22:00');
    await form.getByLabel('Until').fill('07:00');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByText('Time zone and quiet hours saved.').waitFor();
    expect(await api('/v1/me/local-time')).toMatchObject({
      time_zone: 'Europe/Berlin',
      quiet_hours: { from: '22:00', to: '07:00' },
    });
  }, 90_000);
});
