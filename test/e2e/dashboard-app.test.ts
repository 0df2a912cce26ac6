import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}`, { headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('the dashboard served by the program', () => {
  it('answers its own routes with the app, under a policy that allows no inline script', async () => {
    for (const path of ['/', '/sign-in', '/emails/some-id', '/keys?x=1']) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.text).toContain('<div id="root"></div>');
      expect(res.text).toContain('<base href="/">');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
      expect(csp).toContain("frame-ancestors 'none'");
      // every script is a file of the build: none inline
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
    }
  });

  it('serves hashed assets for a year, compressed', async () => {
    const index = (await get('/')).text;
    const script = /src="\.\/(assets\/[^"]+\.js)"/.exec(index)?.[1];
    expect(script).toBeDefined();
    const res = await get(`/${script}`, { 'accept-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/javascript');
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.text.length).toBeGreaterThan(1000);
    const missing = await get('/assets/nothing-here.js');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/json');
  });

  it('leaves the API, the dashboard API and the links in mail to their own 404s', async () => {
    for (const path of [
      '/v1/no-such-thing',
      '/api/no-such-thing',
      '/u/x/y',
      '/t/x',
      '/pair/x',
      '/terms/x',
      '/healthz/x',
      '/readyz/x',
      '/metrics/x',
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(JSON.parse(res.text).error, path).toMatch(/No endpoint GET/);
    }
    expect((await get('/v1/')).status).toBe(200);
  });
});

describe('the signed-out screens', () => {
  it('sign-in: email code and password tabs, usable by keyboard, at laptop and phone width', async () => {
    await page.goto(`${server.url}/`);
    // signed out: the app sends the visitor to the sign-in page, remembering where they were going
    await page.getByRole('heading', { level: 1, name: 'Sign in to Posthorn' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    await checkScreen(page, 'sign-in (code)', (p) => p.getByLabel('Email', { exact: true }).waitFor());

    // the tabs are reached and switched with the keyboard (Radix: arrow keys move between tabs)
    await page.getByRole('tab', { name: 'Email code' }).focus();
    await page.keyboard.press('ArrowRight');
    await eventually(
      async () =>
        expect(await page.getByRole('tab', { name: 'Password' }).getAttribute('aria-selected')).toBe('true'),
      { timeoutMs: 1_000 },
    );
    const password = page.getByRole('tabpanel', { name: 'Password' }).getByLabel('Password', { exact: true });
    await checkScreen(page, 'sign-in (password)', () => password.waitFor());
  });

  it('forgot-password and reset pages', async () => {
    await page.goto(`${server.url}/forgot`);
    await checkScreen(page, 'forgot password', (p) =>
      p.getByRole('heading', { level: 1, name: 'Reset your password' }).waitFor(),
    );
    await page.goto(`${server.url}/reset?token=not-a-real-token`);
    await checkScreen(page, 'reset password', (p) => p.getByLabel('New password', { exact: true }).waitFor());
    await page.getByLabel('New password', { exact: true }).fill('a new long password');
    await page.getByLabel('Repeat the new password', { exact: true }).fill('a new long password');
    await page.getByRole('button', { name: 'Set password' }).click();
    // a link that is not (or no longer) valid says so
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/used|expired|invalid|link/i);
  });

  it('an invitation link that is not valid says so', async () => {
    await page.goto(`${server.url}/invite?token=not-a-real-token`);
    await checkScreen(page, 'invitation', (p) => p.getByRole('alert').waitFor());
  });

  it('an unknown address inside the app is a page, not a blank screen', async () => {
    await page.goto(`${server.url}/no/such/screen`);
    await checkScreen(page, 'not found', (p) =>
      p.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor(),
    );
  });
});

describe('the dashboard under a path of its own (POSTHORN_APP_URL with a path)', () => {
  it('serves the app and its assets there, and its pages work', async () => {
    const under = await startTestServer({ POSTHORN_APP_URL: 'http://localhost:3000/dashboard' });
    try {
      const index = await fetch(`${under.url}/dashboard/emails`);
      expect(index.status).toBe(200);
      const html = await index.text();
      expect(html).toContain('<base href="/dashboard/">');
      const script = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect((await fetch(`${under.url}/dashboard/${script}`)).status).toBe(200);
      const bare = await fetch(`${under.url}/dashboard`, { redirect: 'manual' });
      expect(bare.status).toBe(308);
      expect(bare.headers.get('location')).toBe('/dashboard/');
      // outside its path, the program answers as before
      expect((await fetch(`${under.url}/`)).status).toBe(404);

      await page.goto(`${under.url}/dashboard/forgot`);
      await page.getByRole('heading', { level: 1, name: 'Reset your password' }).waitFor();
      await page.getByRole('link', { name: 'Back to sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Sign in to Posthorn' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    } finally {
      await under.close();
    }
  });
});
