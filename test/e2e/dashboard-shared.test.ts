import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * What the dashboard's screens share: the confirmation before a change that cannot be undone
 * (web/src/components/Dialog.tsx, ConfirmButton), and the routes' loaders, which fetch a screen's
 * data before it renders (web/src/router.tsx), so no screen shows "Loading…" after a navigation.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let owner: SignupResult;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  owner = await server.signupConfirmed({ name: 'Olga Owner' });
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  await signInWithCode(page, server, owner.account.email);
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** Makes something through the API and answers its id. */
async function made(path: string, body: unknown): Promise<string> {
  const res = await server.call('POST', path, { key: owner.account_key.key, body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body as { id: string }).id;
}

/** Confirms in the dialog of that title, and waits for it to go. */
async function confirm(title: string, button: string) {
  const dialog = page.getByRole('dialog', { name: title });
  await dialog.getByRole('button', { name: button, exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
}

const exit = [{ id: 'exit_1', type: 'exit' }];

/** What the test reads of the page's globals (the tests are compiled without the DOM's types). */
interface PageGlobals {
  document: { body: unknown; querySelectorAll(selector: string): Iterable<{ textContent: string | null }> };
  MutationObserver: new (
    changed: () => void,
  ) => {
    observe(target: unknown, options: { subtree: boolean; childList: boolean; characterData: boolean }): void;
  };
  seen: string[];
}

describe('confirming a change that cannot be undone', () => {
  it('asks first, and Cancel changes nothing', async () => {
    await made(`/v1/projects/${owner.project.id}/api-keys`, { name: 'CI deploys' });
    await page.goto(`${server.url}/keys`);
    const row = page.getByRole('row', { name: /CI deploys/ });
    await row.getByRole('button', { name: 'Revoke CI deploys' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke CI deploys?' });
    await dialog.getByText('This cannot be undone.').waitFor();
    await checkScreen(page, 'revoke key confirmation', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    await row.getByText('active').waitFor();
    await row.getByRole('button', { name: 'Revoke CI deploys' }).click();
    await confirm('Revoke CI deploys?', 'Revoke key');
    await row.getByText('revoked').waitFor();
  });

  it('deletes a contact, a segment and a domain, each from its page, and goes back to the list', async () => {
    const contact = await made('/v1/contacts', { email: 'gone@example.com' });
    const segment = await made('/v1/segments', {
      name: 'Gone',
      definition: { all: [{ field: 'email', op: 'contains', value: 'gone' }] },
    });
    const domain = await made('/v1/domains', { domain: 'gone.example' });
    for (const [path, button, title, confirming, list] of [
      [`/contacts/${contact}`, 'Delete contact', 'Delete gone@example.com?', 'Delete', 'Contacts'],
      [`/segments/${segment}`, 'Delete segment', 'Delete Gone?', 'Delete', 'Segments'],
      [`/domains/${domain}`, 'Remove domain', 'Remove gone.example?', 'Remove domain', 'Domains'],
    ]) {
      await page.goto(`${server.url}${path}`);
      await page.getByRole('button', { name: button }).click();
      await confirm(title, confirming);
      await page.getByRole('heading', { level: 1, name: list }).waitFor();
    }
    for (const path of [`/v1/contacts/${contact}`, `/v1/segments/${segment}`, `/v1/domains/${domain}`])
      expect((await server.call('GET', path, { key: owner.account_key.key })).status, path).toBe(404);
  });

  it('archives a flow and deletes another', async () => {
    const kept = await made('/v1/flows', { name: 'Kept', trigger: { type: 'manual' }, steps: exit });
    const gone = await made('/v1/flows', { name: 'Gone', trigger: { type: 'manual' }, steps: exit });
    await page.goto(`${server.url}/flows/${kept}`);
    await page.getByRole('button', { name: 'Archive', exact: true }).click();
    await confirm('Archive the flow?', 'Archive');
    await page.locator('.page-header .badge', { hasText: 'archived' }).waitFor();
    await page.goto(`${server.url}/flows/${gone}`);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await confirm('Delete the flow and all its enrollments?', 'Delete');
    await page.getByRole('heading', { level: 1, name: 'Flows' }).waitFor();
    expect((await server.call('GET', `/v1/flows/${gone}`, { key: owner.account_key.key })).status).toBe(404);
  });
});

describe('the routes load what a screen shows before it renders', () => {
  it('shows no loading state on the way from one screen to the next', async () => {
    await page.goto(`${server.url}/`);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    // the Overview's own chart is a separate chunk, drawn after its heading: a busy machine can still
    // be loading it here, which is this screen's state, not a step between screens
    await page.waitForFunction(() =>
      [...(globalThis as unknown as PageGlobals).document.querySelectorAll('[role=status]')].every(
        (el) => !(el.textContent ?? '').startsWith('Loading'),
      ),
    );
    // every status message that appears from now on
    await page.evaluate(() => {
      const page = globalThis as unknown as PageGlobals;
      page.seen = [];
      new page.MutationObserver(() => {
        for (const el of page.document.querySelectorAll('[role=status]'))
          page.seen.push(el.textContent ?? '');
      }).observe(page.document.body, { subtree: true, childList: true, characterData: true });
    });
    for (const screen of ['Lists', 'Segments', 'Domains', 'Flows', 'Members', 'Webhooks', 'Templates']) {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: screen }).click();
      await page.getByRole('heading', { level: 1, name: screen }).waitFor();
    }
    const seen = await page.evaluate(() => (globalThis as unknown as PageGlobals).seen);
    expect(seen.filter((text) => text.startsWith('Loading'))).toEqual([]);
  });
});
