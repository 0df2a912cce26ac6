import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

// Issue 48, build item 1: the dashboard's mapping step. A Mailchimp export and a semicolon file
// are imported through it into a new list; a duplicate within the file is reported by line.

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let owner: SignupResult;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  owner = await server.signupConfirmed({ name: 'Mia Mapper' });
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  await signInWithCode(page, server, owner.account.email);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const key = () => owner.project_key.key;
const column = (name: string) => page.getByLabel(`Column ${name}`, { exact: true });

async function chooseFile(name: string, buffer: Buffer) {
  await page.goto(`${server.url}/contacts/import`);
  await page.getByRole('heading', { level: 1, name: 'Import contacts' }).waitFor();
  await page.getByLabel('CSV file', { exact: true }).setInputFiles({ name, mimeType: 'text/csv', buffer });
  await page.getByRole('table', { name: 'Columns found in the file' }).waitFor();
}

async function importAndWait(rows: number) {
  await page.getByRole('button', { name: 'Import', exact: true }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `Done: ${rows} rows read.` })
    .waitFor({ timeout: 30_000 });
  return new URL(page.url()).searchParams.get('import') as string;
}

async function members(listName: string): Promise<string[]> {
  const lists = await server.call('GET', '/v1/lists', { key: key() });
  const list = lists.body.data.find((l: { name: string }) => l.name === listName);
  expect(list, JSON.stringify(lists.body)).toBeDefined();
  const res = await server.call('GET', `/v1/contacts?list=${list.id}&limit=100`, { key: key() });
  return res.body.data.map((c: { email: string }) => c.email).sort();
}

describe('the import mapping step', () => {
  it('imports a Mailchimp export into a new list, each column mapped as shown', async () => {
    const file = readFileSync(new URL('../fixtures/imports/mailchimp-subscribed.csv', import.meta.url));
    await chooseFile('mailchimp-subscribed.csv', file);
    // the columns found, what each becomes, and the first rows
    expect(await column('Email Address').inputValue()).toBe('email');
    expect(await column('First Name').inputValue()).toBe('first_name');
    expect(await column('Phone Number').inputValue()).toBe('property:phone_number');
    await page.getByRole('cell', { name: 'ada@example.com' }).waitFor();
    await page.getByText('23 columns separated by commas').waitFor();
    await column('NOTES').selectOption('skip');
    await page.getByLabel('New list', { exact: true }).fill('From Mailchimp');
    await checkScreen(page, 'import mapping step', (p) =>
      p.getByRole('table', { name: 'Columns found in the file' }).waitFor(),
    );
    const id = await importAndWait(3);
    const job = (await server.call('GET', `/v1/imports/${id}`, { key: key() })).body;
    expect(job).toMatchObject({
      status: 'completed',
      created: 3,
      error_count: 0,
      filename: 'mailchimp-subscribed.csv',
    });
    expect(await members('From Mailchimp')).toEqual([
      'ada@example.com',
      'grace@example.com',
      'linus@example.com',
    ]);
    const grace = (await server.call('GET', '/v1/contacts/grace@example.com', { key: key() })).body;
    expect(grace).toMatchObject({ first_name: 'Grace', last_name: 'Hopper' });
    expect(grace.properties).not.toHaveProperty('NOTES');
    // the contact's page shows the import as the consent's source, with the file and who imported it
    expect(grace.consent_history).toEqual([
      expect.objectContaining({
        source: 'import',
        text: expect.stringContaining(`"mailchimp-subscribed.csv" by ${owner.account.email}`),
      }),
    ]);
  });

  it('imports a semicolon file with a column mapped by hand into a list, duplicates reported by line', async () => {
    const csv =
      'Courriel;Prénom;Ville\nzoe@example.com;Zoé;Lyon\nyann@example.com;Yann;Brest\nZOE@example.com;Zoé;Nice\n';
    await chooseFile('adherents.csv', Buffer.from(csv));
    await page.getByText('3 columns separated by semicolons').waitFor();
    await page.getByRole('cell', { name: 'Brest' }).waitFor();
    // "Courriel" is no name the import knows: without a choice, the import says what to do
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Choose the column that holds the email address').waitFor();
    await column('Courriel').selectOption('email');
    await column('Prénom').selectOption('first_name');
    await page.getByLabel('From Mailchimp', { exact: true }).check();
    await page.getByLabel('New list', { exact: true }).fill('Adhérents');
    const id = await importAndWait(3);
    const job = (await server.call('GET', `/v1/imports/${id}`, { key: key() })).body;
    expect(job).toMatchObject({ created: 2, skipped: 1, error_count: 1 });
    expect(job.errors).toEqual([{ row: 4, error: expect.stringMatching(/^duplicate of line 2 /) }]);
    const refused = page.getByRole('table', { name: 'Refused rows, by line in the file' });
    await refused.getByText('duplicate of line 2 (zoe@example.com)').waitFor();
    expect(await members('Adhérents')).toEqual(['yann@example.com', 'zoe@example.com']);
    expect(await members('From Mailchimp')).toContain('zoe@example.com');
    const zoe = (await server.call('GET', '/v1/contacts/zoe@example.com', { key: key() })).body;
    expect(zoe).toMatchObject({ first_name: 'Zoé', properties: { Ville: 'Lyon' } });
  });
});
