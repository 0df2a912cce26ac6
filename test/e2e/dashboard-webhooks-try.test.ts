import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * Webhooks tried on one's own machine (issue 48, build item 2), as a new user does it: a server
 * on its default local address (no development setting), a receiver on 127.0.0.1 over plain
 * http, the new-webhook form left as it comes, a test event sent from the webhook's page,
 * received and verified, and its delivery shown with the request and the answer.
 */

let server: TestServer;
let browser: TestBrowser;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let page: Page;
let owner: SignupResult;

beforeAll(async () => {
  [receiver, browser] = await Promise.all([startWebhookReceiver(), launchBrowser()]);
  // webhooks are a plan feature; POSTHORN_WEBHOOK_ALLOW_PRIVATE is deliberately not set
  // (a failed attempt's next try an hour on, so the log stays as the test reads it)
  server = await startTestServer({ POSTHORN_DEFAULT_PLAN: 'pro', POSTHORN_WEBHOOK_SCHEDULE: '0,3600' }, [
    'api',
    'worker',
  ]);
  owner = await server.signupConfirmed({ name: 'Tina Tryout' });
  page = await browser.context.newPage();
  // a missing element fails the step that looks for it, well before the test's own timeout
  page.setDefaultTimeout(10_000);
  await signInWithCode(page, server, owner.account.email);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await receiver?.close();
});

describe('a webhook tried with a local receiver', () => {
  it('is created with the form as it comes, takes a test event and shows its delivery', async () => {
    await page.goto(`${server.url}/webhooks`);
    await page.getByText('No webhooks yet.').waitFor();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a webhook' });
    // the form says this local server takes a receiver on this computer over plain http
    await dialog.getByText(/This server runs on your own computer, so you can try webhooks/).waitFor();
    // the delivery events come ticked, the others not
    for (const event of ['email.sent', 'email.delivered', 'email.bounced', 'email.complained'])
      expect(await dialog.getByRole('checkbox', { name: event }).isChecked(), event).toBe(true);
    for (const event of ['email.opened', 'contact.created'])
      expect(await dialog.getByRole('checkbox', { name: event }).isChecked(), event).toBe(false);
    await checkScreen(page, 'create webhook dialog (local server)', () => dialog.waitFor());

    // another private address is refused in words, saying what is allowed
    const url = dialog.getByLabel('URL', { exact: true });
    await url.fill('http://192.168.1.10/hooks');
    await dialog.getByRole('button', { name: 'Create webhook' }).click();
    const refusal = dialog.getByRole('alert');
    await refusal
      .getByText(/^The URL must use https \(got http\)\. This server runs on a local address/)
      .waitFor();
    const words = (await refusal.textContent()) ?? '';
    expect(words).toMatch(/only to this computer \(localhost, 127\.0\.0\.1 or \[::1\]\)/);
    expect(words).not.toMatch(/`|\/v1\//);

    // no event at all is refused in the form's words; the shortcut ticks the delivery events again
    await dialog.getByRole('button', { name: 'Clear' }).click();
    await dialog.getByRole('button', { name: 'Create webhook' }).click();
    await dialog.getByRole('alert').getByText('Tick at least one event to deliver.').waitFor();
    await dialog.getByRole('button', { name: 'Delivery events only' }).click();
    expect(await dialog.getByRole('checkbox', { name: 'email.complained' }).isChecked()).toBe(true);

    await url.fill(receiver.url);
    await dialog.getByRole('button', { name: 'Create webhook' }).click();
    const shown = page.getByRole('dialog', { name: 'Your new webhook' });
    const secret = await shown.getByLabel('Signing secret', { exact: true }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    await shown.getByRole('link', { name: 'Open the webhook' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhook' }).waitFor();
    await page.getByText('email.sent, email.delivered, email.bounced, email.complained').waitFor();
    await page.getByText('No deliveries yet.').waitFor();

    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText(/^The test event was delivered: your endpoint answered with 200/).waitFor();
    const got = await eventually(() => receiver.hooks.at(-1) ?? false);
    expect(receiver.hooks).toHaveLength(1);
    const headers = {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    };
    expect(new Webhook(secret).verify(got.body, headers)).toMatchObject({ type: 'webhook.test' });

    const deliveries = page.getByRole('region', { name: 'Deliveries' });
    const row = deliveries.getByRole('row', { name: /webhook\.test/ });
    await row.getByText('succeeded', { exact: true }).waitFor();
    await row.getByText(/HTTP 200/).waitFor();
    await checkScreen(page, 'webhook page with a test delivery', () => row.waitFor());
    await row.locator('summary', { hasText: 'Request' }).click();
    const request = row.locator('pre');
    await request.getByText(`webhook-id: ${headers['webhook-id']}`).waitFor();
    const shownRequest = (await request.textContent()) ?? '';
    expect(shownRequest).toContain(`POST ${receiver.url}`);
    expect(JSON.parse(shownRequest.slice(shownRequest.indexOf('{')))).toEqual(JSON.parse(got.body));
  });

  it('shows a failed test event with its answer and its next try', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const created = await server.call('POST', '/v1/webhooks', {
      key: owner.project_key.key,
      body: { url: `http://127.0.0.1:${port}/hooks`, events: ['email.sent'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    await page.goto(`${server.url}/webhooks/${created.body.id}`);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page
      .getByText(/^The test event was not delivered: .*ECONNREFUSED.*It will be tried again at /)
      .waitFor();
    const deliveries = page.getByRole('region', { name: 'Deliveries' });
    const failed = deliveries.getByRole('row', { name: /webhook\.test/ }).filter({ hasText: 'failed' });
    await failed.getByText(/ECONNREFUSED/).waitFor();
    expect(await failed.getByText('no answer').count()).toBe(1);
    // its next try is a time, not "none"
    expect(await failed.getByText('none', { exact: true }).count()).toBe(0);
    const queued = deliveries.getByRole('row', { name: /webhook\.test/ }).filter({ hasText: 'not sent yet' });
    await queued.getByText('queued', { exact: true }).waitFor();
    await queued.getByRole('cell', { name: '2', exact: true }).waitFor(); // the second attempt
    await checkScreen(page, 'webhook page with a failed test delivery', () => failed.waitFor());
  });
});
