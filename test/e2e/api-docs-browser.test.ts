import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The API docs page (`/v1/docs`, Scalar) on a self-hosted server with no internet (issue 30, item 6):
 * nothing is fetched from another host (fonts, telemetry, Scalar's services), none of the hosted
 * service's buttons shows, and the console stays free of errors.
 */

let server: TestServer;
let browser: TestBrowser;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

describe('the API docs page', () => {
  it('works offline: every request stays on this machine, no Scalar service button, no console error', async () => {
    const page = await browser.context.newPage();
    const elsewhere: string[] = [];
    const consoleErrors: string[] = [];
    // every request is seen here: one to another host is recorded and refused
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (LOCAL_HOSTS.has(url.hostname)) return route.continue();
      elsewhere.push(url.href);
      return route.abort();
    });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (err) => consoleErrors.push(String(err)));

    const res = await page.goto(`${server.url}/v1/docs`);
    expect(res?.status()).toBe(200);
    // the document is rendered: its title, its description and the first operation
    await page.getByRole('heading', { name: 'Posthorn API' }).first().waitFor();
    await page
      .getByText(/^Self-hostable email sending/)
      .first()
      .waitFor();
    await page.getByText('Create an account with a workspace', { exact: false }).first().waitFor();
    await page.waitForLoadState('networkidle');

    const lines = (await page.locator('body').innerText()).split('\n').map((line) => line.trim());
    const hosted = ['Ask AI', 'Generate MCP', 'Connect MCP', 'Deploy', 'Share', 'Developer Tools'];
    const buttons = page.getByRole('button', { name: /Ask AI|MCP|Deploy|Share|Developer Tools/ });
    // every problem at once
    expect({
      texts: hosted.filter((text) => lines.includes(text)),
      buttons: await buttons.allInnerTexts(),
      elsewhere,
      consoleErrors,
    }).toEqual({ texts: [], buttons: [], elsewhere: [], consoleErrors: [] });
    await page.close();
  }, 60_000);
});
