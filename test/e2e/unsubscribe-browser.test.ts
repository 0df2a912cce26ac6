import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { FROM, waitForCampaignStatus, waitForStatus } from '../helpers/emails.ts';
import { marketingAccount, type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import type { SinkMessage } from '../helpers/smtp-sink.ts';

const ADA = 'ada@readers.example';
const EDSGER = 'edsger@readers.example';
const BARBARA = 'barbara@readers.example';
const GRACE = 'grace@readers.example';

let server: TestServer;
let browser: TestBrowser;
let account: SignupResult;
let key: string;
const contactIds = new Map<string, string>();
/** News: ada, edsger, barbara. Weekly and Offers: grace and barbara. */
const lists: Record<'news' | 'weekly' | 'offers', string> = { news: '', weekly: '', offers: '' };

async function createList(name: string, emails: string[]): Promise<string> {
  const id = (await server.call('POST', '/v1/lists', { key, body: { name } })).body.id;
  const added = await server.call('POST', `/v1/lists/${id}/contacts`, { key, body: { emails } });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
  return id;
}

/** Sends a campaign to the lists, waits until it is `sent`, and returns its messages by recipient. */
async function runCampaign(name: string, listIds: string[]): Promise<Map<string, SinkMessage>> {
  const created = await server.call('POST', '/v1/campaigns', {
    key,
    body: { name, from: FROM, subject: name, html: `<p>${name}</p>`, list_ids: listIds },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.id;
  const started = await server.call('POST', `/v1/campaigns/${id}/send`, { key });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  await waitForCampaignStatus(server, key, id, 'sent', 30_000);
  const messages = server.sink.messages.filter((m) =>
    String(m.parsed.headers.get('feedback-id') ?? '').includes(id),
  );
  return new Map(messages.map((m) => [m.to[0], m]));
}

/** The https/http URI of a message's List-Unsubscribe header (the one mailbox providers POST to). */
function oneClickUrl(message: SinkMessage): string {
  // the raw line: mailparser turns this header into an object
  const header = message.parsed.headerLines.find((h) => h.key === 'list-unsubscribe')?.line ?? '';
  const url = /<(https?:\/\/[^>]+)>/.exec(header)?.[1];
  if (!url) throw new Error(`no http URI in List-Unsubscribe: ${header}`);
  return url;
}

/** The footer's unsubscribe link in the HTML part. */
function footerUrl(message: SinkMessage): string {
  const url = /<a href="(https?:\/\/[^"]+\/u\/[\w-]+)"[^>]*>Unsubscribe<\/a>/.exec(
    String(message.parsed.html),
  )?.[1];
  if (!url) throw new Error('no unsubscribe link in the footer');
  return url;
}

/** The same link on the test server (the mail names the configured public URL). */
const onServer = (url: string) => `${server.url}${new URL(url).pathname}`;

async function contact(email: string) {
  const res = await server.call('GET', `/v1/contacts/${contactIds.get(email)}`, { key });
  expect(res.status).toBe(200);
  return res.body as { subscribed: boolean; lists: string[] };
}

/** Opens a link in a fresh tab; returns the page and the answer's status. */
async function open(url: string): Promise<{ page: Page; status: number }> {
  const page = await browser.context.newPage();
  const response = await page.goto(url);
  return { page, status: response?.status() ?? 0 };
}

/** Every button in the page's accessibility tree has a name (what a screen reader announces). */
async function expectLabelledButtons(page: Page): Promise<string[]> {
  const tree = await page.locator('body').ariaSnapshot();
  const buttons = tree.split('\n').filter((line) => /^\s*- button\b/.test(line));
  expect(buttons.length, tree).toBeGreaterThan(0);
  for (const line of buttons) expect(line, tree).toMatch(/- button "[^"]+"/);
  return buttons.map((line) => /"([^"]+)"/.exec(line)?.[1] as string);
}

let first: Map<string, SinkMessage>;

beforeAll(async () => {
  server = await startTestServer();
  account = await marketingAccount(server, 'Browser Tests Ltd, 7 Castle Street, Edinburgh EH2 3AH');
  key = account.project_key.key;
  for (const email of [ADA, EDSGER, BARBARA, GRACE]) {
    const res = await server.call('POST', '/v1/contacts', { key, body: { email } });
    expect(res.status).toBe(200);
    contactIds.set(email, res.body.id);
  }
  lists.news = await createList('News', [ADA, EDSGER, BARBARA]);
  lists.weekly = await createList('Weekly', [GRACE, BARBARA]);
  lists.offers = await createList('Offers', [GRACE, BARBARA]);
  first = await runCampaign('First news', [lists.news]);
  expect([...first.keys()].sort()).toEqual([ADA, BARBARA, EDSGER].sort());
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the unsubscribe page in headless Chromium', () => {
  it('shows the preference page for the List-Unsubscribe link, with labelled buttons, and changes nothing by opening', async () => {
    const { page, status } = await open(onServer(oneClickUrl(first.get(ADA) as SinkMessage)));
    expect(status).toBe(200);
    await page.getByRole('heading', { name: 'Email preferences', exact: true }).waitFor();
    expect(await page.textContent('body')).toContain(ADA);
    const names = await expectLabelledButtons(page);
    expect(names).toContain('Unsubscribe from all marketing emails');
    // link scanners open links too: only a choice made on the page changes anything
    expect((await contact(ADA)).subscribed).toBe(true);
    await page.close();
  });

  it('"leave all marketing" confirms on the page and unsubscribes the contact', async () => {
    const { page } = await open(onServer(oneClickUrl(first.get(ADA) as SinkMessage)));
    await page.getByRole('button', { name: 'Unsubscribe from all marketing emails' }).click();
    await page.getByRole('heading', { name: 'Unsubscribed', exact: true }).waitFor();
    expect(await page.textContent('body')).toContain(`${ADA} will no longer receive marketing emails`);
    expect(await expectLabelledButtons(page)).toEqual(['Resubscribe']);
    expect((await contact(ADA)).subscribed).toBe(false);
    // the link keeps working and now shows the address as unsubscribed
    await page.goto(onServer(oneClickUrl(first.get(ADA) as SinkMessage)));
    expect(await page.textContent('body')).toContain(`${ADA} is unsubscribed from marketing emails`);
    await page.close();
  });

  it('resubscribe from the confirmation page brings the contact back', async () => {
    const { page } = await open(onServer(footerUrl(first.get(EDSGER) as SinkMessage)));
    await page.getByRole('button', { name: 'Unsubscribe from all marketing emails' }).click();
    await page.getByRole('heading', { name: 'Unsubscribed', exact: true }).waitFor();
    expect((await contact(EDSGER)).subscribed).toBe(false);
    await page.getByRole('button', { name: 'Resubscribe' }).click();
    await page.getByRole('heading', { name: 'Subscribed', exact: true }).waitFor();
    expect(await page.textContent('body')).toContain(`${EDSGER} will receive these emails again`);
    expect((await contact(EDSGER)).subscribed).toBe(true);
    await page.close();
  });

  it('"leave this list" (from the footer link) leaves that list only: other lists still reach the contact', async () => {
    const weekly = await runCampaign('Weekly digest', [lists.weekly]);
    const { page, status } = await open(onServer(footerUrl(weekly.get(GRACE) as SinkMessage)));
    expect(status).toBe(200);
    await expectLabelledButtons(page);
    await page
      .getByRole('button', { name: /leave this list|unsubscribe from this list/i })
      .click({ timeout: 5_000 });
    await page.getByRole('heading', { name: /unsubscribed/i }).waitFor();
    const after = await contact(GRACE);
    expect(after.subscribed).toBe(true);
    expect(after.lists.sort()).toEqual([lists.offers]);
    expect([...(await runCampaign('Weekly again', [lists.weekly])).keys()]).toEqual([BARBARA]);
    expect([...(await runCampaign('Offers', [lists.offers])).keys()].sort()).toEqual([BARBARA, GRACE].sort());
    await page.close();
  });

  it('a tampered token shows a 404 page and changes nothing', async () => {
    const url = onServer(oneClickUrl(first.get(BARBARA) as SinkMessage));
    const token = url.slice(url.lastIndexOf('/') + 1);
    const tampered = `${token.slice(0, 8)}${token[8] === 'A' ? 'B' : 'A'}${token.slice(9)}`;
    const { page, status } = await open(url.replace(token, tampered));
    expect(status).toBe(404);
    await page.getByRole('heading', { name: 'Link not found', exact: true }).waitFor();
    expect(await page.getByRole('button').count()).toBe(0);
    expect((await contact(BARBARA)).subscribed).toBe(true);
    await page.close();
  });

  it('afterwards no campaign reaches the unsubscribed contact, while transactional mail still arrives', async () => {
    const next = await runCampaign('Second news', [lists.news]);
    expect([...next.keys()].sort()).toEqual([BARBARA, EDSGER].sort());
    const receipt = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: ADA, subject: 'Your receipt', text: 'Thanks for your order' },
    });
    expect(receipt.status, JSON.stringify(receipt.body)).toBe(200);
    await waitForStatus(server, key, receipt.body.id, 'sent');
    await server.sink.waitFor((m) => m.to[0] === ADA && m.parsed.subject === 'Your receipt');
  });
});
