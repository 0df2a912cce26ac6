import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The operator's Routes screen (issue 31, item 2): in the operator's menu in a browser on the
 * server's own machine, each route with where it leads, its health and traffic over the whole server
 * (delivered, refused, unknown outcome; issue 48) and per worker process, and the rules, at
 * 1280×800 and 390×844 with axe.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the Routes screen', () => {
  it('shows the route the sign-in code left by, with its traffic, and the rules', async () => {
    const account = await server.signupConfirmed();
    // the sign-in code leaves by the one route, default (the relay): its traffic is written within 2 s
    await signInWithCode(page, server, account.account.email);
    await page.getByRole('link', { name: 'Routes' }).first().click();
    await page.getByRole('heading', { level: 1, name: 'Routes' }).waitFor();
    const row = page.getByRole('table', { name: 'Routes' }).getByRole('row').filter({ hasText: 'default' });
    await expect.poll(async () => (await row.textContent()) ?? '', { timeout: 15_000 }).toMatch(/healthy/);
    expect(await row.textContent()).toContain(`smtp: smtp://127.0.0.1:${new URL(server.sink.url).port}`);
    // the server as a whole, in people's words: the code's message was delivered by the route
    const headers = await page
      .getByRole('table', { name: 'Routes' })
      .getByRole('columnheader')
      .allTextContents();
    expect(headers).toEqual(expect.arrayContaining(['Delivered', 'Refused', 'Unknown outcome']));
    expect(headers).not.toEqual(expect.arrayContaining(['Taken']));
    const delivered = headers.indexOf('Delivered');
    await expect
      .poll(async () =>
        Number((await row.locator('th, td').nth(delivered).textContent())?.replace(/\D/g, '')),
      )
      .toBeGreaterThanOrEqual(1);
    // each worker process's part, folded away for a diagnosis
    await page.getByText("Each worker process's part").click();
    await expect
      .poll(async () => page.getByRole('table', { name: 'Route default, per worker process' }).count(), {
        timeout: 15_000,
      })
      .toBe(1);
    expect(await page.getByRole('listitem').filter({ hasText: 'every message → default' }).count()).toBe(1);
    await checkScreen(page, 'Routes', (p) => p.getByRole('heading', { level: 1, name: 'Routes' }).waitFor());
  });

  it('is not offered to a browser elsewhere: the API refuses it', async () => {
    const elsewhere = await server.app.inject({
      method: 'GET',
      url: '/v1/admin/routes',
      remoteAddress: '198.51.100.4',
    });
    expect(elsewhere.statusCode).toBe(403);
  });
});
