import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signInWithCode } from '../helpers/dashboard.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Issue 49's must-show, in the browser: an image over the limit and an SVG with a script, uploaded
 * from the visual editor, are refused with a clear message, and nothing is stored.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;

beforeAll(async () => {
  // a small limit, so the image over it is small too
  [server, browser] = await Promise.all([
    startTestServer({ POSTHORN_ASSETS_MAX_BYTES: String(40 * 1024) }),
    launchBrowser(),
  ]);
  account = await server.signupConfirmed({ name: 'Ivy Images' });
  page = await browser.context.newPage();
  page.setDefaultTimeout(20_000);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await signInWithCode(page, server, account.account.email);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('images refused in the visual editor', () => {
  it('says why an SVG with a script and an image over the limit are refused, and stores neither', async () => {
    const made = await server.call('POST', '/v1/templates', {
      key: account.project_key.key,
      body: { name: 'Spring letter', starter: 'newsletter' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    await page.goto(`${server.url}/templates/${made.body.id}`);
    const visual = page.getByRole('radio', { name: 'Visual' });
    if (!(await visual.isChecked())) await visual.check();
    const upload = page.getByLabel('Upload an image');
    await upload.waitFor();

    const svg =
      '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script><circle r="4"/></svg>';
    await upload.setInputFiles({ name: 'logo.svg', mimeType: 'image/svg+xml', buffer: Buffer.from(svg) });
    await page
      .getByRole('status')
      .filter({ hasText: 'SVG images are not accepted: this one holds a script' })
      .waitFor();

    // a PNG's signature and header, then more bytes than the limit allows
    const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(60 * 1024, 1)]);
    await upload.setInputFiles({ name: 'banner.png', mimeType: 'image/png', buffer: png });
    await page
      .getByRole('status')
      .filter({ hasText: /over the 40 KB limit for images\. Make it smaller/ })
      .waitFor();

    const stored = await server.call('GET', '/v1/assets', { key: account.project_key.key });
    expect(stored.status).toBe(200);
    expect(stored.body.data).toEqual([]);
  });
});
