import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { FROM, insertVerifiedDomain, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/** The overview's delivery chart and rates (GET /v1/emails/stats) and a message's raw source. */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;
const sent: { id: string; message_id: string }[] = [];

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Olive Overview' });
  // two messages through the API, delivered and bounced by the simulator
  for (const to of ['delivered@simulator.posthorn.test', 'bounced@simulator.posthorn.test']) {
    const res = await server.call('POST', '/v1/emails', {
      key: account.project_key.key,
      body: { from: FROM, to, subject: `Overview ${to.split('@')[0]}`, text: 'Hello' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const email = await waitForStatus(server, account.project_key.key, res.body.id, to.split('@')[0]);
    sent.push({ id: email.id, message_id: email.message_id });
  }
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** The visible text of the `Name: value` pair of the totals list. */
const total = (name: string) => page.locator('dt', { hasText: new RegExp(`^${name}$`) }).locator('+ dd');

describe('the overview', () => {
  it('draws sent, delivered, bounced and complained per day, with the numbers and the rates against the thresholds', async () => {
    await signInWithCode(page, server, account.account.email);
    const chart = page.getByRole('img', { name: /^Line chart of sent, delivered, bounced and complained/ });
    await chart.waitFor();
    // the chart library (a chunk of its own) drew one line per series
    await eventually(async () => expect(await chart.locator('.recharts-line-curve').count()).toBe(4), {
      timeoutMs: 15_000,
    });
    expect(await total('Sent').textContent()).toBe('2');
    expect(await total('Delivered').textContent()).toBe('1');
    expect(await total('Bounced').textContent()).toBe('1');
    expect(await total('Complained').textContent()).toBe('0');

    // two messages are too few to judge (issue 30, item 6): the words instead of a verdict, the
    // figure beside its count, no meter, and the thresholds written out
    const bounce = page.locator('.usage', { hasText: 'Bounce rate' });
    await eventually(async () => expect(await bounce.textContent()).toMatch(/Too few messages to judge/), {
      timeoutMs: 15_000,
    });
    expect(await bounce.textContent()).not.toMatch(/Critical/);
    expect(await bounce.textContent()).toContain('50% of 2 messages so far');
    expect(await bounce.textContent()).toContain('Keep it below 2%; 5% or more is critical.');
    expect(await bounce.getByRole('meter').count()).toBe(0);
    const complaint = page.locator('.usage', { hasText: 'Complaint rate' });
    expect(await complaint.textContent()).toMatch(/Too few messages to judge/);
    expect(await complaint.textContent()).toContain('0% of 1 message so far');
    expect(await complaint.textContent()).toContain('Keep it below 0.1%; 0.3% or more is critical.');

    // today's numbers in the table (newest first)
    await page.getByText('Numbers per day').click();
    const table = page.getByRole('table', { name: 'Emails per day (UTC)' });
    const today = table.getByRole('row').nth(1);
    expect(await today.getByRole('cell').allTextContents()).toEqual(['2', '1', '1', '0']);
    await checkScreen(page, 'overview with the delivery chart', () => chart.waitFor());

    // from 100 messages a rate is judged: 99 more delivered today make 1 bounce of 101 (good, with
    // its meter) and no complaint of 100
    await server.runtime.ctx.db
      .insertInto('email_events')
      .values(
        Array.from({ length: 99 }, () => ({
          email_id: sent[0].id,
          project_id: account.project.id,
          type: 'delivered',
          recipient: 'delivered@simulator.posthorn.test',
          detail: JSON.stringify({}),
        })),
      )
      .execute();
    await page.reload();
    await eventually(async () => expect(await bounce.textContent()).toMatch(/0\.99%\s*Good/), {
      timeoutMs: 15_000,
    });
    expect(await bounce.getByRole('meter', { name: 'Bounce rate' }).count()).toBe(1);
    expect(await complaint.textContent()).toMatch(/0%\s*Good/);
    await checkScreen(page, 'overview with judged rates', () => bounce.waitFor());

    await page.getByText('Numbers per day').click();
    await page.getByLabel('Period', { exact: true }).selectOption('7');
    await eventually(async () => expect(await table.getByRole('row').count()).toBe(8), { timeoutMs: 15_000 });
    await eventually(async () => expect(await chart.locator('.recharts-line-curve').count()).toBe(4), {
      timeoutMs: 15_000,
    });
  });

  it('says what sending needs, item by item, with links to the screens that fix them, and ready only when all pass', async () => {
    await page.goto(`${server.url}/`);
    const sending = page.getByRole('region', { name: 'Sending', exact: true });
    // the footer is the placeholder and no domain is verified: not "Ready to send" (issue 30, item 4)
    await sending.getByText('Partly ready to send').waitFor();
    const checks = sending.getByRole('list', { name: 'What sending needs' });
    const item = (label: string) => checks.getByRole('listitem').filter({ hasText: label });
    expect(await item('Account email').textContent()).toMatch(/^Done/);
    expect(await item('Footer postal address').textContent()).toMatch(/^To do/);
    expect(await item('Sending domain').textContent()).toMatch(/^To do.*onboarding@posthorn\.localhost/);
    expect(await sending.textContent()).not.toMatch(/POST \/v1|PATCH \/v1/);
    await item('Sending domain').getByRole('link', { name: 'Add a domain in Domains' }).waitFor();
    await checkScreen(page, 'overview sending checklist', () => checks.waitFor());
    await item('Footer postal address').getByRole('link', { name: 'Set it in Settings' }).click();
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();

    await server.call('PATCH', '/v1/me/footer', {
      key: account.project_key.key,
      body: { address: 'Overview Tests Ltd, 2 High Street, Leeds LS1 1AA' },
    });
    await insertVerifiedDomain(server, account.project.id, 'overview.example');
    await page.goto(`${server.url}/`);
    await sending.getByText('Ready to send', { exact: true }).waitFor();
    expect(await item('Sending domain').textContent()).toMatch(/^Done.*overview\.example/);
    expect(await item('Footer postal address').textContent()).toContain('2 High Street');
  });

  it("shows a message's raw source, with its Message-ID", async () => {
    await page.goto(`${server.url}/emails/${sent[0].id}`);
    await page.getByRole('heading', { level: 1, name: 'Overview delivered' }).waitFor();
    await page.getByRole('tab', { name: 'Raw source' }).click();
    const panel = page.getByRole('tabpanel', { name: 'Raw source' });
    await panel.getByText(`Message-ID: ${sent[0].message_id}`).waitFor();
    expect(await panel.locator('pre').textContent()).not.toContain('DKIM-Signature');
    await panel.getByRole('link', { name: 'Download the message (.eml)' }).waitFor();
    await checkScreen(page, 'raw source', () => panel.waitFor());
  });
});
