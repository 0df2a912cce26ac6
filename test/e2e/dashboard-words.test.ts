import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import {
  type SignupResult,
  signupConfirmedInDatabase,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';

/**
 * Words for people (issue 48, build item 8), in a browser on a server without a relay (its mail in
 * the dev mailbox): the Routes screen is the operator's (the first account on the server) and
 * speaks of the server as a whole; another person's menu has no Routes; the dev mailbox is in the
 * menu and the code step opens it in a new tab, the code form kept as typed; a domain's DMARC page
 * without a report says what to publish, what will appear, and shows a sample said to be one.
 */

const CODE = /code(?: is)?: ([A-Z0-9]{6})/;

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let operator: SignupResult;
let other: SignupResult;
/** The domain the DMARC page is shown for. */
let domainId: string;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer({ POSTHORN_SMTP_RELAY: '' }), launchBrowser()]);
  // the first account is the operator's, who set the server up; the second is anyone's
  operator = await signupConfirmedInDatabase(server);
  other = await signupConfirmedInDatabase(server);
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const heading = (p: Page, name: string) => p.getByRole('heading', { level: 1, name });
const menu = () => page.getByRole('navigation', { name: 'Main' });

/** The ids of the dev mailbox's messages to an address. */
async function mailboxIds(address: string): Promise<string[]> {
  const res = await fetch(`${server.url}/api/mailbox?to=${encodeURIComponent(address)}&limit=100`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
}

/** The code of the first message to an address that was not in the mailbox before. */
async function newCode(address: string, before: string[]): Promise<string> {
  const id = await eventually(
    async () => (await mailboxIds(address)).find((m) => !before.includes(m)) ?? false,
    {
      timeoutMs: 60_000,
      message: `the sign-in code to ${address} in the dev mailbox`,
    },
  );
  const message = (await (await fetch(`${server.url}/api/mailbox/${id}`)).json()) as { text: string };
  const code = CODE.exec(message.text)?.[1];
  expect(code, message.text).toBeDefined();
  return code as string;
}

/** Signs in afresh (no session) with the code read from the dev mailbox. */
async function signIn(email: string) {
  await browser.context.clearCookies();
  await page.goto(`${server.url}/sign-in`);
  await page.getByLabel('Email', { exact: true }).fill(email);
  const before = await mailboxIds(email);
  await page.getByRole('button', { name: 'Email me a code' }).click();
  await page.getByLabel('Code', { exact: true }).fill(await newCode(email, before));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await heading(page, 'Overview').waitFor();
}

describe('the dev mailbox', () => {
  it('opens from the code step in a new tab, and the code form keeps what was typed', async () => {
    await page.goto(`${server.url}/sign-in`);
    const email = operator.account.email;
    await page.getByLabel('Email', { exact: true }).fill(email);
    const before = await mailboxIds(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    const code = page.getByLabel('Code', { exact: true });
    await code.fill('AB');

    const link = page.getByRole('link', { name: 'open the dev mailbox' });
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toContain('noopener');
    const [tab] = await Promise.all([browser.context.waitForEvent('page'), link.click()]);
    await heading(tab, 'Dev mailbox').waitFor();
    await tab.getByRole('row').filter({ hasText: email }).first().waitFor({ timeout: 60_000 });
    await tab.close();

    // the form is where it was, with the two characters typed
    expect(await code.inputValue()).toBe('AB');
    await code.fill(await newCode(email, before));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading(page, 'Overview').waitFor();
  }, 120_000);
});

describe("the server's own screens", () => {
  it('are not in the menu of a person who is not the operator, and Routes says whose it is', async () => {
    await signIn(other.account.email);
    await menu().getByRole('link', { name: 'Mailbox', exact: true }).waitFor();
    expect(await menu().getByRole('link', { name: 'Routes' }).count()).toBe(0);
    expect(await menu().getByText('This server').count()).toBe(0);

    await page.goto(`${server.url}/routes`);
    await heading(page, 'Routes').waitFor();
    await page.getByText('This screen is for the operator of this server').waitFor();
    expect(await page.getByRole('table').count()).toBe(0);
  }, 120_000);

  it("are in the operator's menu, with the mailbox, and Routes speaks of the server as a whole", async () => {
    await signIn(operator.account.email);
    await menu().getByRole('link', { name: 'Mailbox', exact: true }).waitFor();
    const server_ = menu().getByRole('list', { name: 'This server' });
    await server_.getByRole('link', { name: 'Routes' }).click();
    await heading(page, 'Routes').waitFor();
    const table = page.getByRole('table', { name: 'Routes' });
    const headers = await table.getByRole('columnheader').allTextContents();
    expect(headers).toEqual(expect.arrayContaining(['Delivered', 'Refused', 'Unknown outcome']));
    for (const old of ['Taken', 'Not taken', 'Ambiguous']) expect(headers).not.toContain(old);
    await page.getByText('The ways mail leaves this server, for every project on it').waitFor();
    // the sign-in codes left by the one route, the dev mailbox: delivered, over the whole server
    const delivered = headers.indexOf('Delivered');
    const row = table.getByRole('row').filter({ hasText: 'default' });
    await expect
      .poll(
        async () => Number((await row.locator('th, td').nth(delivered).textContent())?.replace(/\D/g, '')),
        {
          timeout: 15_000,
        },
      )
      .toBeGreaterThanOrEqual(2);
  }, 120_000);
});

describe("a domain's DMARC page before any report", () => {
  it('says what to publish, with the report address the server gives, what will appear, and a sample', async () => {
    const created = await server.call('POST', '/v1/domains', {
      key: operator.project_key.key,
      body: { domain: 'words.example' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const domain = created.body as { id: string; records: { name: string; value: string }[] };
    domainId = domain.id;
    const dmarc = domain.records.find((r) => r.name === '_dmarc.words.example');
    const address = /rua=mailto:([^;\s]+)/.exec(dmarc?.value ?? '')?.[1];
    expect(address, dmarc?.value).toBeDefined();

    await page.goto(`${server.url}/domains/${domain.id}/dmarc`);
    await heading(page, 'DMARC reports: words.example').waitFor();
    const empty = page.getByRole('region', { name: 'No report yet' });
    expect(await empty.getByLabel('The DMARC record to publish').inputValue()).toBe(dmarc?.value);
    await empty.getByText(address as string).waitFor();
    await empty.getByText('_dmarc.words.example').waitFor();
    const appear = page.getByRole('region', { name: 'What will appear here' });
    await appear.getByText('how many passed DMARC').waitFor();
    const sample = page.getByRole('region', { name: /^Sample made-up figures, not your domain's$/ });
    await sample.getByRole('img').first().waitFor();
    await sample.getByRole('table', { name: 'Sample: the sources that sent as the domain' }).waitFor();
    await checkScreen(page, 'DMARC, no report yet', (p) =>
      p.getByRole('region', { name: 'No report yet' }).waitFor(),
    );
  }, 120_000);
});

describe("every screen of the menu, and a domain's pages", () => {
  it('shows no backtick and no API path (/v1/...) outside its code examples', async () => {
    await signIn(operator.account.email);
    const menuLinks = await menu()
      .getByRole('link')
      .evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    expect(menuLinks.length).toBeGreaterThan(15);
    const links = [...menuLinks, `/domains/${domainId}`, `/domains/${domainId}/dmarc`];
    const found: string[] = [];
    for (const href of links) {
      await page.goto(new URL(href, `${server.url}/`).href);
      await page.locator('main h1').first().waitFor();
      // what the screen says once loaded, its labels and tips too, code examples (<pre>) aside
      const loading = page.locator('main').getByText(/^Loading/);
      await expect.poll(() => loading.count()).toBe(0);
      const text = await page.locator('main').evaluate((main) => {
        const said: string[] = [];
        for (const el of main.querySelectorAll('*')) {
          if (el.closest('pre')) continue;
          for (const node of el.childNodes) if (node.nodeType === 3) said.push(node.nodeValue ?? '');
          for (const name of ['title', 'placeholder', 'aria-label']) said.push(el.getAttribute(name) ?? '');
        }
        return said.join('\n');
      });
      for (const line of text.split('\n')) if (/`|\/v1\//.test(line)) found.push(`${href}: ${line.trim()}`);
    }
    expect(found).toEqual([]);
  }, 180_000);
});
