import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inPeoplesWords } from '../../web/src/api/words.ts';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, focusedText, signInWithCode, VIEWPORTS } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * What a self-hoster's first hour found missing or wrong in the dashboard (issue 30, item 4): the
 * navigation on a phone, a test email from the Emails screen, a CSV import from Contacts. The MJML
 * editor and the template variables are in dashboard-first-hour-editor.test.ts.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;
const [LAPTOP, PHONE] = VIEWPORTS;

/** What the functions run in the page use of it (the tests are typed without the DOM library). */
interface StatusWatch {
  statuses: string[];
  document: { body: unknown; querySelectorAll(selector: string): Iterable<{ textContent: string | null }> };
  MutationObserver: new (
    callback: () => void,
  ) => { observe(node: unknown, options: Record<string, boolean>): void };
}

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Fiona First-Hour' });
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  await signInWithCode(page, server, account.account.email);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the navigation on a phone', () => {
  it('folds away behind a menu button that opens it, and closes with Escape or a choice', async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${server.url}/`);
    const heading = page.getByRole('heading', { level: 1, name: 'Overview' });
    await heading.waitFor();
    const menu = page.getByRole('button', { name: 'Menu' });
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await nav.isVisible()).toBe(false);
    // folded, the page starts in the first third of the screen
    expect((await heading.boundingBox())?.y ?? PHONE.height).toBeLessThan(PHONE.height / 3);

    // by keyboard: the button is reached with Tab, right after the skip link
    await page.keyboard.press('Tab');
    expect(await focusedText(page)).toBe('Skip to content');
    await page.keyboard.press('Tab');
    expect(await focusedText(page)).toBe('Menu');
    await page.keyboard.press('Enter');
    await nav.waitFor();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    expect(await menu.getAttribute('aria-controls')).toBe(await nav.getAttribute('id'));
    await checkScreen(page, 'navigation open', () => nav.getByRole('link', { name: 'Templates' }).waitFor());

    // Escape closes it and gives the focus back to the button
    await page.keyboard.press('Escape');
    await nav.waitFor({ state: 'hidden' });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await focusedText(page)).toBe('Menu');

    // choosing a screen goes there and folds the menu again
    await menu.click();
    await nav.getByRole('link', { name: 'Contacts' }).click();
    await page.getByRole('heading', { level: 1, name: 'Contacts' }).waitFor();
    await nav.waitFor({ state: 'hidden' });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    await checkScreen(page, 'contacts with the navigation folded', () =>
      page.getByRole('heading', { level: 1, name: 'Contacts' }).waitFor(),
    );
  });

  it('shows the navigation without a menu button at laptop width', async () => {
    await page.setViewportSize(LAPTOP);
    await page.goto(`${server.url}/`);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Emails' }).waitFor();
    await eventually(async () => expect(await page.getByRole('button', { name: 'Menu' }).count()).toBe(0), {
      timeoutMs: 1_000,
    });
  });
});

describe('a test email from the Emails screen', () => {
  const openDialog = async () => {
    await page.setViewportSize(LAPTOP);
    await page.goto(`${server.url}/emails`);
    await page.getByRole('heading', { level: 1, name: 'Emails' }).waitFor();
    await page.getByRole('button', { name: 'Send a test email' }).click();
    return page.getByRole('dialog', { name: 'Send a test email' });
  };

  it('sends an email written in the form, says it was accepted and links to the new email', async () => {
    const dialog = await openDialog();
    const me = await server.call('GET', '/v1/me', { key: account.project_key.key });
    const from = dialog.getByLabel('From', { exact: true });
    await eventually(async () => expect(await from.inputValue()).toBe(me.body.sending.default_from));
    expect(await dialog.getByLabel('To', { exact: true }).inputValue()).toBe(account.account.email);
    await checkScreen(page, 'test email dialog', () => dialog.waitFor());

    await dialog.getByLabel('To', { exact: true }).fill('first-test@example.com');
    await dialog.getByLabel('Subject', { exact: true }).fill('First test');
    await dialog.getByLabel('Text', { exact: true }).fill('Hello from the first hour.');
    await dialog.getByRole('button', { name: 'Send' }).click();
    const link = dialog.getByRole('link', { name: 'Open the email' });
    await link.waitFor();
    expect(await dialog.getByRole('status').textContent()).toMatch(/^Accepted \(queued\)/);
    await checkScreen(page, 'test email accepted', () => link.waitFor());
    const sent = await server.sink.waitFor((m) => m.to[0] === 'first-test@example.com');
    expect(sent.parsed.subject).toBe('First test');
    expect(sent.parsed.text).toContain('Hello from the first hour.');

    await link.click();
    await page.getByRole('heading', { level: 1, name: 'First test' }).waitFor();
    const id = new URL(page.url()).pathname.split('/').at(-1);
    const email = await server.call('GET', `/v1/emails/${id}`, { key: account.project_key.key });
    expect(email.body.to).toEqual(['first-test@example.com']);
  });

  it('sends a published template with the variables given', async () => {
    const key = account.project_key.key;
    const template = await server.call('POST', '/v1/templates', {
      key,
      body: { name: 'Welcome test', starter: 'welcome' },
    });
    expect((await server.call('POST', `/v1/templates/${template.body.id}/publish`, { key })).status).toBe(
      200,
    );
    const dialog = await openDialog();
    await dialog.getByLabel('Content', { exact: true }).selectOption('template');
    await dialog.getByLabel('Template', { exact: true }).selectOption(template.body.id);
    await dialog.getByLabel('company_name', { exact: true }).fill('Zeta Works');
    await dialog.getByLabel('To', { exact: true }).fill('template-test@example.com');
    await checkScreen(page, 'test email from a template', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Send' }).click();
    await dialog.getByRole('link', { name: 'Open the email' }).waitFor();
    const sent = await server.sink.waitFor((m) => m.to[0] === 'template-test@example.com');
    expect(sent.parsed.html).toContain('Welcome aboard');
    expect(sent.parsed.html).toContain('Zeta Works');
  });

  it("shows the API's refusal in the form", async () => {
    const dialog = await openDialog();
    await dialog.getByLabel('From', { exact: true }).fill('me@unverified.example');
    await dialog.getByRole('button', { name: 'Send' }).click();
    const refusal = dialog.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(/me@unverified\.example is not on a verified domain/);
    expect(await dialog.getByRole('link', { name: 'Open the email' }).count()).toBe(0);
  });
});

describe('a CSV import from Contacts', () => {
  it('uploads a file, follows the import, then shows what was created, updated and refused, by line', async () => {
    const key = account.project_key.key;
    const known = await server.call('POST', '/v1/contacts', {
      key,
      body: { email: 'grace@first-hour.example', first_name: 'Grace' },
    });
    expect(known.status).toBe(200);
    const csv = [
      'email,first_name,last_name,plan',
      'ada@first-hour.example,Ada,Lovelace,pro',
      'grace@first-hour.example,Grace,Hopper,team',
      'not-an-address,Nobody,Here,free',
      'alan@first-hour.example,Alan,Turing',
      'edsger@first-hour.example,Edsger,Dijkstra,free',
    ].join('\n');

    await page.setViewportSize(LAPTOP);
    await page.goto(`${server.url}/contacts`);
    await page.getByRole('link', { name: 'Import CSV' }).click();
    await page.getByRole('heading', { level: 1, name: 'Import contacts' }).waitFor();
    const fileInput = page.getByLabel('CSV file', { exact: true });
    await checkScreen(page, 'contact import', () => fileInput.waitFor());

    // every status the page shows from now on, in order
    await page.evaluate(() => {
      const g = globalThis as unknown as StatusWatch;
      g.statuses = [];
      new g.MutationObserver(() => {
        for (const el of g.document.querySelectorAll('[role=status]')) {
          const text = el.textContent ?? '';
          if (g.statuses.at(-1) !== text) g.statuses.push(text);
        }
      }).observe(g.document.body, { subtree: true, childList: true, characterData: true });
    });
    await fileInput.setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('button', { name: 'Import' }).click();
    await page.getByRole('status').filter({ hasText: 'Done: 5 rows read.' }).waitFor();
    const statuses = await page.evaluate(() => (globalThis as unknown as StatusWatch).statuses);
    // the answer to the upload first, then the import as it was asked again
    expect(statuses[0]).toBe('Waiting to start…');
    expect(statuses.at(-1)).toBe('Done: 5 rows read.');

    const id = new URL(page.url()).searchParams.get('import') as string;
    const job = (await server.call('GET', `/v1/imports/${id}`, { key })).body;
    expect(job).toMatchObject({ status: 'completed', created: 2, updated: 1, error_count: 2 });
    const fact = (term: string) => page.locator('.fact', { hasText: term }).locator('dd').textContent();
    expect([await fact('Created'), await fact('Updated'), await fact('Refused')]).toEqual(['2', '1', '2']);
    const refused = page.getByRole('table', { name: 'Refused rows, by line in the file' });
    const shown = await refused
      .locator('tbody tr')
      .evaluateAll((rows) =>
        rows.map((row) => [...row.children].map((cell) => cell.lastChild?.textContent ?? '')),
      );
    // each refusal by its line, in the dashboard's words (a field in backquotes by its name)
    expect(shown).toEqual(
      job.errors.map((e: { row: number; error: string }) => [String(e.row), inPeoplesWords(e.error)]),
    );
    expect(shown[0][1]).toBe('Email must be a valid email address, got "not-an-address"');
    expect(job.errors.map((e: { row: number }) => e.row)).toEqual([4, 5]);
    await checkScreen(page, 'contact import outcome', () => refused.waitFor());

    await page.getByRole('link', { name: 'See the contacts' }).click();
    await page.getByRole('link', { name: 'ada@first-hour.example' }).waitFor();
    const ada = await server.call('GET', '/v1/contacts/ada@first-hour.example', { key });
    expect(ada.body.properties).toEqual({ plan: 'pro' });
  });
});
