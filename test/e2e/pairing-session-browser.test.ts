import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { startCliLogin } from '../helpers/cli-login.ts';
import { checkScreen } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The browser page of `posthorn login` (issue 48, build item 7), on a server in development (no
 * relay: its mail is kept in the dev mailbox): a person already signed in to the dashboard only
 * confirms, and the code step points to the dev mailbox in a new tab, so the form stays.
 */

let server: TestServer;
let browser: TestBrowser;
let configDir: string;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer({ POSTHORN_SMTP_RELAY: '' }), launchBrowser()]);
  configDir = mkdtempSync(path.join(tmpdir(), 'posthorn-pair-session-'));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  rmSync(configDir, { recursive: true, force: true });
});

/** The login code the dev mailbox holds for `email`, read through the dashboard's mailbox API. */
async function loginCodeInMailbox(email: string, after: Set<string>): Promise<string> {
  return eventually(
    async () => {
      const list = await server.call('GET', '/api/mailbox?limit=100');
      const found = (list.body.data as { id: string; envelope: { to: string[] }; subject: string }[]).find(
        (m) => m.envelope.to.includes(email) && !after.has(m.id) && /login code/i.test(m.subject),
      );
      const code = found && /code(?: is)?: ([A-Z0-9]{6})/.exec(found.subject)?.[1];
      if (!code) throw new Error(`no new code for ${email} in ${JSON.stringify(list.body)}`);
      return code;
    },
    { timeoutMs: 30_000, message: 'the login code did not reach the dev mailbox' },
  );
}

async function mailboxIds(): Promise<Set<string>> {
  const list = await server.call('GET', '/api/mailbox?limit=100');
  return new Set((list.body.data as { id: string }[]).map((m) => m.id));
}

describe('the pairing page of posthorn login', () => {
  it('points the code step to the dev mailbox in a new tab, and the form is kept', async () => {
    const account = await server.signup();
    const email = account.account.email;
    const login = await startCliLogin(`${server.url}/v1`, configDir);
    await browser.context.clearCookies();
    const page = await browser.context.newPage();
    page.setDefaultTimeout(15_000);
    try {
      await page.goto(`${server.url}${login.url.pathname}${login.url.search}`);
      const before = await mailboxIds();
      const signIn = page.locator('form', { has: page.getByRole('button', { name: 'Email me a code' }) });
      await signIn.getByLabel('Email').fill(email);
      await signIn.getByRole('button').click();
      await page.getByRole('heading', { level: 1, name: 'Enter the code from your email' }).waitFor();

      await checkScreen(page, 'pairing code step with the dev mailbox', (p) =>
        p.getByRole('link', { name: 'open the dev mailbox' }).waitFor(),
      );
      const pointer = page.getByRole('link', { name: 'open the dev mailbox' });
      expect(await pointer.getAttribute('target')).toBe('_blank');
      expect(await pointer.getAttribute('href')).toBe('/mailbox');
      const [mailbox] = await Promise.all([browser.context.waitForEvent('page'), pointer.click()]);
      await mailbox.getByRole('heading', { level: 1, name: 'Dev mailbox' }).waitFor();
      await mailbox.close();

      // the form is where it was: the code goes in and the pairing goes on
      const code = await loginCodeInMailbox(email, before);
      await page.getByLabel('Code').fill(code);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByRole('heading', { level: 1, name: 'Authorise the Posthorn CLI' }).waitFor();
      await page.getByRole('button', { name: 'Authorise' }).click();
      await page.getByRole('heading', { level: 1, name: 'Authorised' }).waitFor();
    } finally {
      await page.close();
    }
    expect(await login.exited).toBe(0);
  }, 90_000);

  it('asks a person signed in to the dashboard only to confirm, without a sign-in form', async () => {
    const account = await server.signup();
    const email = account.account.email;
    await browser.context.clearCookies();
    const page = await browser.context.newPage();
    page.setDefaultTimeout(15_000);
    try {
      // signed in to the dashboard as the dashboard signs in (its session cookie, in this browser)
      const before = await mailboxIds();
      const asked = await page.request.post(`${server.url}/api/auth/login`, { data: { email } });
      expect(asked.status(), await asked.text()).toBe(200);
      const code = await loginCodeInMailbox(email, before);
      const verified = await page.request.post(`${server.url}/api/auth/login/verify`, {
        data: { email, code },
      });
      expect(verified.status()).toBe(200);
      const cookies = await browser.context.cookies(server.url);
      expect(cookies.map((c) => c.name)).toEqual(['posthorn_session']);

      const login = await startCliLogin(`${server.url}/v1`, configDir);
      await page.goto(`${server.url}${login.url.pathname}${login.url.search}`);
      await checkScreen(page, 'pairing with a dashboard session', (p) =>
        p.getByRole('heading', { level: 1, name: 'Authorise the Posthorn CLI' }).waitFor(),
      );
      expect(await page.textContent('body')).toContain(login.code);
      expect(await page.textContent('body')).toContain(`Signed in as ${email}`);
      expect(await page.locator('input[type="email"], input[name="login_code"]').count()).toBe(0);
      // someone else's session in this browser: a way to sign in as oneself instead
      expect(await page.getByRole('link', { name: 'Use another account' }).getAttribute('href')).toBe(
        `/pair?code=${encodeURIComponent(login.code)}&account=another`,
      );
      await page.getByRole('button', { name: 'Authorise' }).click();
      await page.getByRole('heading', { level: 1, name: 'Authorised' }).waitFor();
      expect(await login.exited).toBe(0);
      expect(login.stdout()).toContain('Logged in');
    } finally {
      await page.close();
    }
  }, 90_000);
});
