import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { startCliLogin } from '../helpers/cli-login.ts';
import { checkScreen } from '../helpers/dashboard.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let configDir: string;

beforeAll(async () => {
  server = await startTestServer();
  configDir = mkdtempSync(path.join(tmpdir(), 'posthorn-pair-'));
});
afterAll(async () => {
  await server?.close();
  rmSync(configDir, { recursive: true, force: true });
});

describe('posthorn login in a real headless Chromium (from the npm package @sparticuz/chromium, driven by playwright-core)', () => {
  it('creates the account on the page, authorises all access, and the CLI holds a working key', async () => {
    const login = await startCliLogin(`${server.url}/v1`, configDir);
    const { code, exited } = login;
    const shown = login.url;

    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      await page.goto(`${server.url}${shown.pathname}${shown.search}`);
      expect(await page.textContent('body')).toContain(code);
      // the page looks like the dashboard and passes the same checks, at laptop and phone width
      await checkScreen(page, 'pairing sign-in', (p) =>
        p.getByRole('heading', { level: 1, name: 'Sign in to pair the Posthorn CLI' }).waitFor(),
      );
      // the terms are a link beside the box, to the server's /terms
      const terms = page.getByRole('link', { name: 'terms of service' });
      expect(await terms.getAttribute('href')).toBe('/terms');
      const termsPage = await browser.context.newPage();
      await termsPage.goto(`${server.url}/terms`);
      await termsPage.getByRole('heading', { level: 1, name: 'Terms of service' }).waitFor();
      await termsPage.close();

      const email = 'browser-person@example.com';
      const signupForm = page.locator('form', { has: page.locator('input[name="name"]') });
      await signupForm.locator('input[name="email"]').fill(email);
      await signupForm.locator('input[name="name"]').fill('Browser Person');
      expect(await signupForm.locator('input[name="accept_terms"]').isChecked()).toBe(false);
      await signupForm.locator('button').click();
      await page.waitForLoadState();
      expect(await page.textContent('.error')).toContain('tick the box'); // the box was left unticked
      const again = page.locator('form', { has: page.locator('input[name="name"]') });
      await again.locator('input[name="email"]').fill(email);
      await again.locator('input[name="name"]').fill('Browser Person');
      await again.locator('input[name="accept_terms"]').check();
      await again.locator('button').click();
      await page.waitForSelector('input[name="login_code"]');
      // one email with one code, which confirms the address and signs in
      const message = await server.sink.waitFor((m) => m.to.includes(email));
      const loginCode = /code: (\w{6})/.exec(message.parsed.subject ?? '')?.[1] as string;
      const sent = await server.runtime.ctx.db
        .selectFrom('emails')
        .select('subject')
        .where('stream', '=', 'system')
        .where(sql<boolean>`${email} = any(to_addresses)`)
        .execute();
      expect(sent).toEqual([{ subject: message.parsed.subject }]);
      await page.fill('input[name="login_code"]', loginCode);
      await page.click('button');
      await page.waitForSelector('input[name="scope"][value="all"]');
      expect(await page.textContent('body')).toContain(code); // the pairing survived account creation
      await page.check('input[name="scope"][value="all"]');
      await page.click('button[value="Authorise"]');
      await page.waitForLoadState();
      expect(await page.textContent('body')).toContain('the CLI now holds a key');
      await checkScreen(page, 'pairing authorised', (p) =>
        p.getByRole('heading', { level: 1, name: 'Authorised' }).waitFor(),
      );
      // onward to the dashboard, signed in by the same session: no second code
      const before = server.sink.messages.length;
      await page.getByRole('link', { name: 'Open the dashboard' }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/');
      expect(server.sink.messages.length).toBe(before);
    } finally {
      await browser.close();
    }

    expect(await exited).toBe(0);
    expect(login.stdout()).toContain('Logged in');
    const stored = JSON.parse(readFileSync(path.join(configDir, 'credentials.json'), 'utf8')).profiles
      .default;
    // an all-access key: the account API answers
    const workspaces = await server.call('GET', '/v1/workspaces', { key: stored.api_key });
    expect(workspaces.status).toBe(200);
    expect(workspaces.body.data).toHaveLength(1);
  }, 60_000);
});
