import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, focusedText, scriptCookies, signInWithCode } from '../helpers/dashboard.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { signInByCode } from '../helpers/sessions.ts';

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Dana Dashboard' });
  page = await browser.context.newPage();
  // a missing element fails the step that looks for it, well before the test's own timeout
  page.setDefaultTimeout(10_000);
});

/** Signs in through the dashboard API and returns the session token (for `Authorization: Bearer`). */
const apiSession = async (email: string) => (await signInByCode(server, email, 60_000)).token;

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the dashboard, signed in', () => {
  it('signs in with the emailed code and shows the overview of the project', async () => {
    await signInWithCode(page, server, account.account.email);
    expect(new URL(page.url()).pathname).toBe('/');
    // the session is an httpOnly cookie: no script of the page can read it
    expect(await scriptCookies(page)).not.toContain('posthorn_session');
    await checkScreen(page, 'overview', (p) =>
      p.getByRole('heading', { level: 2, name: /^Plan: / }).waitFor(),
    );
    await eventually(
      async () =>
        expect(await page.getByLabel('Project', { exact: true }).inputValue()).toBe(account.project.id),
      { timeoutMs: 1_000 },
    );
  });

  it('moves between screens by keyboard: skip link first, then the navigation', async () => {
    await page.goto(`${server.url}/`);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await focusedText(page)).toBe('Skip to content');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    // focus lands on the new page's title, so a screen reader announces it
    await eventually(async () => expect(await focusedText(page)).toBe('API keys'), { timeoutMs: 15_000 });
  });

  it('creates a key: the secret is shown once with a copy button, and never again', async () => {
    await page.goto(`${server.url}/keys`);
    await checkScreen(page, 'API keys', (p) => p.getByRole('table').waitFor());
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.getByLabel('Name', { exact: true }).fill('Dashboard test key');
    await dialog.getByRole('radio', { name: /^This project/ }).check();
    await dialog.getByLabel('Expires', { exact: true }).selectOption('90');
    await checkScreen(page, 'create key dialog', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Create key' }).click();

    const shown = page.getByRole('dialog', { name: 'Your new key' });
    const secret = await shown.getByLabel('Secret key', { exact: true }).inputValue();
    expect(secret).toMatch(/^ph_/);
    await shown.getByRole('button', { name: 'Copy' }).waitFor();
    await checkScreen(page, 'new key secret', () => shown.waitFor());

    // the secret works: it is a real key of this project, expiring in 90 days
    const me = await server.call('GET', '/v1/me', { key: secret });
    expect(me.status).toBe(200);
    expect(me.body.project.id).toBe(account.project.id);

    await shown.getByRole('button', { name: 'I have copied it' }).click();
    const row = page.getByRole('row', { name: /Dashboard test key/ });
    await row.waitFor();
    expect(await page.content()).not.toContain(secret);
    await page.reload();
    await page.getByRole('row', { name: /Dashboard test key/ }).waitFor();
    expect(await page.content()).not.toContain(secret);
    const keys = await server.call('GET', `/v1/projects/${account.project.id}/api-keys`, {
      key: account.account_key.key,
    });
    const created = keys.body.data.find((k: { name: string }) => k.name === 'Dashboard test key');
    expect(created.expires_at).not.toBeNull();
    expect(created.key).toBeUndefined();
  });

  it('finds an email sent through the API in the log, with its event timeline', async () => {
    const subject = `Dashboard log ${Date.now()}`;
    const sent = await server.call('POST', '/v1/emails', {
      key: account.project_key.key,
      body: {
        from: FROM,
        to: 'delivered@simulator.posthorn.test',
        subject,
        html: '<h1 style="color:#333">Hello from the log</h1><script>parent.document.title = "pwned"</script>',
      },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await waitForStatus(server, account.project_key.key, sent.body.id, 'delivered');

    await page.goto(`${server.url}/emails`);
    await checkScreen(page, 'emails log', (p) => p.getByRole('link', { name: subject }).waitFor());
    await page.getByLabel('Status', { exact: true }).selectOption('bounced');
    await page.getByText('No emails match').waitFor();
    await page.getByLabel('Status', { exact: true }).selectOption('delivered');
    await page.getByRole('link', { name: subject }).click();

    await page.getByRole('heading', { level: 1, name: subject }).waitFor();
    const timeline = page.getByRole('region', { name: 'Timeline' });
    for (const event of ['queued', 'delivered']) await timeline.getByText(event, { exact: true }).waitFor();
    const frame = page.locator('iframe[title="Preview of the email\'s HTML"]');
    expect(await frame.getAttribute('sandbox')).toBe('');
    await eventually(
      async () =>
        expect(
          await page.frameLocator('iframe').getByRole('heading', { name: 'Hello from the log' }).count(),
        ).toBe(1),
      { timeoutMs: 1_000 },
    );
    // the email's script never runs: the frame has no scripts and an opaque origin
    expect(await page.title()).not.toBe('pwned');
    await checkScreen(page, 'message page', (p) => p.getByRole('region', { name: 'Timeline' }).waitFor());
    await page.getByRole('tab', { name: 'HTML source' }).click();
    await page.getByText('<h1 style="color:#333">Hello from the log</h1>', { exact: false }).waitFor();
  });

  it('signs out: the app and the API no longer take the session', async () => {
    await page.goto(`${server.url}/`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to Posthorn' }).waitFor();
    await page.goto(`${server.url}/keys`);
    await page.getByRole('heading', { level: 1, name: 'Sign in to Posthorn' }).waitFor();
    expect(new URL(page.url()).searchParams.get('next')).toBe('/keys');
  });

  it('an invited person accepts in the browser (the terms box theirs to tick) and, as a Member, cannot manage keys', async () => {
    const owner = await apiSession(account.account.email);
    const email = `member-${Date.now().toString(36)}@example.com`;
    const since = server.sink.messages.length;
    const invited = await server.call('POST', `/api/projects/${account.project.id}/invitations`, {
      headers: { authorization: `Bearer ${owner}` },
      body: { email, role: 'member' },
    });
    expect(invited.status, JSON.stringify(invited.body)).toBe(200);
    const mail = await server.sink.waitFor(
      (m) => m.to.includes(email) && server.sink.messages.indexOf(m) >= since,
    );
    const token = /\/invite\?token=([0-9A-Za-z]+)/.exec(mail.parsed.text ?? '')?.[1];
    expect(token, mail.parsed.text).toBeDefined();

    await page.goto(`${server.url}/invite?token=${token}`);
    await checkScreen(page, 'invitation', (p) => p.getByLabel('Your name', { exact: true }).waitFor());
    const terms = page.getByRole('checkbox', { name: 'I accept the terms of service' });
    expect(await terms.isChecked()).toBe(false);
    await page.getByLabel('Your name', { exact: true }).fill('Mia Member');
    // unticked, the form does not go: the box is required
    await page.getByRole('button', { name: 'Create account and join' }).click();
    expect(
      await page.evaluate(() => (globalThis as any).document.querySelector('form').checkValidity()),
    ).toBe(false);
    await terms.check();
    await page.getByRole('button', { name: 'Create account and join' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await page.getByLabel('Project', { exact: true }).inputValue()).toBe(account.project.id);

    await page.goto(`${server.url}/keys`);
    await checkScreen(page, 'API keys as a Member', (p) => p.getByText('As a Member').waitFor());
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Revoke/ }).count()).toBe(0);
  });
});
