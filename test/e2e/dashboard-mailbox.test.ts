import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen } from '../helpers/dashboard.ts';
import { FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The dashboard's Mailbox (issue 30, item 4): with no relay, the mail the server sends is read in
 * the browser, signed out too (the sign-in page links to it), decoded: the text part first, the
 * HTML in a frame with sandbox="", the headers, at 1280×800 and 390×844 with axe.
 */

const CODE = /code(?: is)?: ([A-Z0-9]{6})/;

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer({ POSTHORN_SMTP_RELAY: '' }), launchBrowser()]);
  page = await browser.context.newPage();
  // a missing element fails the step that looks for it, well before the test's own timeout
  page.setDefaultTimeout(10_000);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const heading = (p: Page, name: string) => p.getByRole('heading', { level: 1, name }).waitFor();

/** Opens a captured message from the list (which asks for new mail every few seconds) by its recipient. */
async function openMessageTo(p: Page, address: string, subject: RegExp) {
  const link = p.getByRole('row').filter({ hasText: address }).getByRole('link', { name: subject }).first();
  await link.waitFor({ timeout: 30_000 });
  await link.click();
  const message = p.getByRole('region', { name: subject });
  await message.getByRole('tabpanel').waitFor();
  return message;
}

/** The code in the text part of the message shown. */
async function codeShown(message: ReturnType<Page['getByRole']>): Promise<string> {
  const text = (await message.getByRole('tabpanel').locator('pre').textContent()) ?? '';
  const code = CODE.exec(text)?.[1];
  expect(code, text).toMatch(/^[A-Z0-9]{6}$/);
  return code as string;
}

describe('the dev mailbox screen', () => {
  it('is linked from the sign-in page and shows a new account its signup code, signed out', async () => {
    account = await server.signup();
    const email = account.account.email;
    await page.goto(`${server.url}/sign-in`);
    // in a new tab, so the sign-in form stays: the mailbox is read there from now on
    const signIn = page;
    [page] = await Promise.all([
      browser.context.waitForEvent('page'),
      signIn.getByRole('link', { name: 'open the dev mailbox' }).click(),
    ]);
    page.setDefaultTimeout(10_000);
    await heading(page, 'Dev mailbox');
    await heading(signIn, 'Sign in to Posthorn');
    await signIn.close();
    await page.getByRole('link', { name: 'Sign in' }).waitFor();
    await checkScreen(page, 'mailbox list', (p) =>
      p.getByRole('row').filter({ hasText: email }).waitFor({ timeout: 30_000 }),
    );

    const message = await openMessageTo(page, email, /Your Posthorn code/);
    await message.getByText(email).first().waitFor();
    const code = await codeShown(message);
    await checkScreen(page, 'mailbox message (text)', () => message.getByRole('tabpanel').waitFor());

    const verified = await server.call('POST', '/v1/auth/verify-email/code', {
      key: account.project_key.key,
      body: { code },
    });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
  });

  it('reads an email sent through the API: its text, its HTML in a sandboxed frame, its headers', async () => {
    const to = `reader-${Date.now()}@example.org`;
    const sent = await server.call('POST', '/v1/emails', {
      key: account.project_key.key,
      body: {
        from: FROM,
        to,
        subject: 'Grüße — your parcel is on its way',
        text: `Your parcel is on its way. ${'Track it any time from your account page. '.repeat(3)}Reference: PARCEL-42`,
        html: '<h1>Your parcel is on its way</h1><p>Reference: <strong>PARCEL-42</strong></p><script>parent.document.title = "pwned"</script>',
      },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);

    await page.goto(`${server.url}/mailbox`);
    await page.getByLabel('Recipient', { exact: true }).fill(to);
    await page.getByRole('button', { name: 'Search' }).click();
    const message = await openMessageTo(page, to, /your parcel is on its way/);
    // the text part first, decoded: the soft line breaks of its quoted-printable are gone
    await message
      .getByRole('tabpanel')
      .getByText(/Track it any time from your account page\. Track it .* Reference: PARCEL-42/)
      .waitFor();
    await message
      .getByText(/Posthorn Tests"? <onboarding@posthorn\.localhost>/)
      .first()
      .waitFor();
    await checkScreen(page, 'mailbox message (text part)', () => message.getByRole('tabpanel').waitFor());

    await message.getByRole('tab', { name: 'Preview', exact: true }).click();
    const frame = message.locator('iframe');
    expect(await frame.getAttribute('sandbox')).toBe('');
    await eventually(
      async () =>
        expect(
          await page
            .frameLocator('iframe')
            .getByRole('heading', { name: 'Your parcel is on its way' })
            .count(),
        ).toBe(1),
      { timeoutMs: 2_000 },
    );
    expect(await page.title()).not.toBe('pwned');
    await checkScreen(page, 'mailbox message (HTML preview)', () => frame.waitFor());

    await message.getByRole('tab', { name: 'Headers', exact: true }).click();
    const headers = message.getByRole('tabpanel');
    await headers.getByText(/^Subject: =\?UTF-8\?Q\?/m).waitFor();
    await headers.getByText(/^X-Posthorn-Stream: transactional$/m).waitFor();
    await checkScreen(page, 'mailbox message (headers)', () => headers.waitFor());

    await message.getByRole('tab', { name: 'Raw source', exact: true }).click();
    await message
      .getByRole('tabpanel')
      .getByText(/Content-Transfer-Encoding: quoted-printable/)
      .waitFor();
  });

  it('gives the signed-in a Mailbox link, and reads the login code there on the way in', async () => {
    const email = account.account.email;
    await page.goto(`${server.url}/sign-in`);
    await page.getByLabel('Email', { exact: true }).fill(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.getByLabel('Code', { exact: true }).waitFor();

    // the code is read in another tab, as a person would, keeping the sign-in form as it is
    const mailbox = await browser.context.newPage();
    mailbox.setDefaultTimeout(10_000);
    await mailbox.goto(`${server.url}/mailbox`);
    const code = await codeShown(await openMessageTo(mailbox, email, /login code/i));
    await mailbox.close();

    await page.getByLabel('Code', { exact: true }).fill(code);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading(page, 'Overview');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Mailbox' }).click();
    await heading(page, 'Dev mailbox');
    await page.getByRole('link', { name: 'Back to the dashboard' }).waitFor();
    await checkScreen(page, 'mailbox list (signed in)', (p) => p.getByRole('table').waitFor());
  });
});

describe('on a server whose mail goes to a relay', () => {
  let relay: TestServer;
  beforeAll(async () => {
    relay = await startTestServer({}, ['api']);
  });
  afterAll(() => relay?.close());

  it('the Mailbox says there is none and why, and the sign-in page does not link to it', async () => {
    await page.goto(`${relay.url}/mailbox`);
    await heading(page, 'Dev mailbox');
    const notice = page.getByRole('status').filter({ hasText: 'no dev mailbox on this server' });
    await checkScreen(page, 'mailbox (none)', () => notice.waitFor());
    expect(await page.getByRole('table').count()).toBe(0);

    const status = page.waitForResponse((r) => r.url().endsWith('/api/mailbox/status'));
    await page.goto(`${relay.url}/sign-in`);
    expect((await (await status).json()).available).toBe(false);
    await heading(page, 'Sign in to Posthorn');
    expect(await page.getByRole('link', { name: 'open the dev mailbox' }).count()).toBe(0);
  });
});
