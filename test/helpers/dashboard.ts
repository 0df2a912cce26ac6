import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import type { TestServer } from './server.ts';

/** The two sizes every screen must work at: a laptop and a phone. */
export const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
] as const;

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** What the functions run in the page use of it (the tests are typed without the DOM library). */
interface PageGlobals {
  document: {
    documentElement: { scrollWidth: number };
    activeElement: { textContent: string | null } | null;
    cookie: string;
  };
  innerWidth: number;
  axe?: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[] }> };
}

/** The text of the element that has the keyboard focus. */
export function focusedText(page: Page): Promise<string | null | undefined> {
  return page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.textContent);
}

/** The cookies a script of the page can read. */
export function scriptCookies(page: Page): Promise<string> {
  return page.evaluate(() => (globalThis as unknown as PageGlobals).document.cookie);
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; failureSummary?: string }[];
}

/**
 * axe-core's serious and critical violations on the page as it is now. axe is evaluated through the
 * DevTools protocol, so the app's Content-Security-Policy (scripts from 'self' only) stays as it is.
 * The message preview's frame holds the email's own HTML, not the app: frames are not tested.
 */
export async function seriousAxeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const { axe, document } = globalThis as unknown as PageGlobals;
    const result = await axe!.run(document, { iframes: false, resultTypes: ['violations'] });
    return result.violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`,
    );
}

/**
 * Checks a screen at each viewport: nothing wider than the window (no sideways scrolling), and no
 * serious or critical accessibility violation. `ready` waits for what the screen must show. The page
 * is left at the size it had (on a phone the navigation is folded behind the menu button).
 */
export async function checkScreen(page: Page, name: string, ready: (page: Page) => Promise<unknown>) {
  const size = page.viewportSize();
  for (const viewport of VIEWPORTS) {
    await page.setViewportSize(viewport);
    await ready(page);
    const { scrollWidth, innerWidth } = await page.evaluate(() => {
      const { document, innerWidth } = globalThis as unknown as PageGlobals;
      return { scrollWidth: document.documentElement.scrollWidth, innerWidth };
    });
    expect(scrollWidth, `${name} at ${viewport.width}px overflows sideways`).toBeLessThanOrEqual(innerWidth);
    expect(await seriousAxeViolations(page), `${name} at ${viewport.width}px`).toEqual([]);
  }
  if (size) await page.setViewportSize(size);
}

/** Signs in through the sign-in page with the code emailed to the address (read from the SMTP sink). */
export async function signInWithCode(page: Page, server: TestServer, email: string) {
  await page.goto(`${server.url}/sign-in`);
  await page.getByLabel('Email', { exact: true }).fill(email);
  const since = server.sink.messages.length;
  await page.getByRole('button', { name: 'Email me a code' }).click();
  await page.getByLabel('Code', { exact: true }).waitFor();
  const code = await server.codeFor(email, since);
  await page.getByLabel('Code', { exact: true }).fill(code);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}
