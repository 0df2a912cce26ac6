import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen } from '../helpers/dashboard.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { codeIn } from '../helpers/smtp-sink.ts';

/**
 * A self-hoster's first hour in the dashboard: a signed-out visit logs no console error, the
 * sign-in page leads to the sign-up screen (and back), and signing up sends one email with one code
 * that confirms the address and signs in, on the Overview.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
/** What the page logged as a console error, or threw. */
const consoleErrors: string[] = [];

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('signed out', () => {
  it('opening the app and the sign-in page logs no console error', async () => {
    await page.goto(`${server.url}/`);
    await page.getByRole('heading', { level: 1, name: 'Sign in to Posthorn' }).waitFor();
    await page.goto(`${server.url}/sign-up`);
    await page.getByRole('heading', { level: 1, name: 'Create your Posthorn account' }).waitFor();
    expect(consoleErrors).toEqual([]);
  });
});

describe('signing up from the dashboard', () => {
  it('is linked from sign-in and back, with the terms an unticked box of the person’s own', async () => {
    await page.goto(`${server.url}/sign-in`);
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Create your Posthorn account' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/sign-up');
    await checkScreen(page, 'sign-up', (p) => p.getByLabel('Your name', { exact: true }).waitFor());
    const terms = page.getByRole('checkbox', { name: /I accept the terms of service/ });
    expect(await terms.isChecked()).toBe(false);
    expect(await page.getByRole('link', { name: 'terms of service' }).getAttribute('href')).toBe('/terms');
    await page.getByRole('link', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to Posthorn' }).waitFor();
  });

  it('one email with one code confirms the address and signs in, landing on the Overview', async () => {
    const email = 'first-hour@example.com';
    await page.goto(`${server.url}/sign-up`);
    await page.getByLabel('Your name', { exact: true }).fill('First Hour');
    await page.getByLabel('Email', { exact: true }).fill(email);
    await page.getByRole('checkbox', { name: /I accept the terms of service/ }).check();
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByLabel('Code', { exact: true }).waitFor();
    expect(await page.getByRole('status').textContent()).toContain(email);
    await checkScreen(page, 'sign-up code', (p) => p.getByLabel('Code', { exact: true }).waitFor());

    const message = await server.sink.waitFor((m) => m.to.includes(email), 60_000);
    const sent = await server.runtime.ctx.db
      .selectFrom('emails')
      .select('subject')
      .where('stream', '=', 'system')
      .where(sql<boolean>`${email} = any(to_addresses)`)
      .execute();
    expect(sent).toEqual([{ subject: message.parsed.subject }]); // exactly one email

    // a wrong code says so and keeps the form
    await page.getByLabel('Code', { exact: true }).fill('AAAAAA');
    await page.getByRole('button', { name: 'Confirm and sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/incorrect/);

    await page.getByLabel('Code', { exact: true }).fill(codeIn(message));
    await page.getByRole('button', { name: 'Confirm and sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/');
    const account = await server.runtime.ctx.db
      .selectFrom('accounts')
      .select(['name', 'email_confirmed_at', 'terms_accepted_at'])
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    expect(account.name).toBe('First Hour');
    expect(account.email_confirmed_at).toBeInstanceOf(Date);
    expect(account.terms_accepted_at).toBeInstanceOf(Date);
    // still exactly one email to the address
    const after = await server.runtime.ctx.db
      .selectFrom('emails')
      .select('id')
      .where('stream', '=', 'system')
      .where(sql<boolean>`${email} = any(to_addresses)`)
      .execute();
    expect(after).toHaveLength(1);
  });
});
