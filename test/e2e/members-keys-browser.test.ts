import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/** The members screen says which API keys go with a member it removes, and can keep them. */

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

/** An Admin of the owner's project who made a project key there. */
async function adminWithKey(name: string) {
  const person = await server.signupConfirmed({ name });
  const added = await server.call('POST', `/v1/projects/${owner.project.id}/members`, {
    key: owner.account_key.key,
    body: { email: person.account.email, role: 'admin' },
  });
  expect(added.status).toBe(200);
  const made = await server.call('POST', `/v1/projects/${owner.project.id}/api-keys`, {
    key: person.account_key.key,
    body: { name: `${name} CRM sync` },
  });
  expect(made.status).toBe(200);
  return {
    email: person.account.email,
    key: made.body as { key: string; name: string; token_prefix: string },
  };
}

const status = async (key: string) => (await server.call('GET', '/v1/me', { key })).status;

describe('removing a member from the members screen', () => {
  it('lists the keys the member made; removing revokes them', async () => {
    const ann = await adminWithKey('Ann');
    await page.goto(`${server.url}/members`);
    const row = page.getByRole('row', { name: new RegExp(ann.email) });
    await row.getByRole('button', { name: `Remove ${ann.email}` }).click();
    const dialog = page.getByRole('dialog', { name: `Remove ${ann.email}?` });
    const keys = dialog.getByRole('list', { name: 'API keys made by this member' });
    await keys.getByText(ann.key.name).waitFor();
    await dialog.getByText('are revoked with their membership').waitFor();
    expect(await keys.textContent()).toContain(ann.key.token_prefix);
    await checkScreen(page, 'remove member dialog with keys', () => keys.waitFor());
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    await dialog.waitFor({ state: 'detached' });
    await row.waitFor({ state: 'detached' });
    expect(await status(ann.key.key)).toBe(401);
  });

  it('"Keep these keys working" keeps them', async () => {
    const bea = await adminWithKey('Bea');
    await page.reload();
    const row = page.getByRole('row', { name: new RegExp(bea.email) });
    await row.getByRole('button', { name: `Remove ${bea.email}` }).click();
    const dialog = page.getByRole('dialog', { name: `Remove ${bea.email}?` });
    await dialog.getByText(bea.key.name).waitFor();
    await dialog.getByRole('checkbox', { name: 'Keep these keys working' }).check();
    await dialog.getByText('stay working').waitFor();
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    await dialog.waitFor({ state: 'detached' });
    await row.waitFor({ state: 'detached' });
    expect(await status(bea.key.key)).toBe(200);
  });

  it('says so when the member made no keys', async () => {
    const cy = await server.signupConfirmed({ name: 'Cy' });
    await server.call('POST', `/v1/projects/${owner.project.id}/members`, {
      key: owner.account_key.key,
      body: { email: cy.account.email, role: 'member' },
    });
    await page.reload();
    await page
      .getByRole('row', { name: new RegExp(cy.account.email) })
      .getByRole('button', { name: `Remove ${cy.account.email}` })
      .click();
    const dialog = page.getByRole('dialog', { name: `Remove ${cy.account.email}?` });
    await dialog.getByText('They made no API keys in this project').waitFor();
    expect(await dialog.getByRole('checkbox').count()).toBe(0);
  });
});
