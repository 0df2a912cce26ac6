import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The template editor after a self-hoster's first hour (issue 30, item 4): typing MJML with
 * self-closing elements closes and indents what is really open, and the declared variables are
 * edited in a table saved with the draft, the API's errors shown beside their field.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;
let templateId: string;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Edda Editor' });
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  await signInWithCode(page, server, account.account.email);
  const created = await server.call('POST', '/v1/templates', {
    key: account.project_key.key,
    body: { name: 'First hour', starter: 'welcome' },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  templateId = created.body.id;
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const source = (column: string[]) =>
  [
    '<mjml>',
    '  <mj-body>',
    '    <mj-section>',
    '      <mj-column>',
    ...column.map((line) => `        ${line}`),
    '      </mj-column>',
    '    </mj-section>',
    '  </mj-body>',
    '</mjml>',
  ].join('\n');

const editor = () => page.getByRole('textbox', { name: 'MJML source' });
/** The editor's lines as shown (a short source is drawn whole). */
const lines = () => page.locator('.cm-content .cm-line').allTextContents();
const saved = async () =>
  (await server.call('GET', `/v1/templates/${templateId}`, { key: account.project_key.key })).body;

async function openEditor() {
  await page.goto(`${server.url}/templates/${templateId}`);
  await page.getByRole('heading', { level: 1, name: 'First hour' }).waitFor();
  // the code view (an MJML template opens as blocks until the code is chosen in this browser)
  const code = page.getByRole('radio', { name: 'Code' });
  if (!(await code.isChecked())) await code.check();
  await editor().waitFor();
}

/** Replaces the whole source, as a paste would, and waits for the draft to be saved. */
async function replaceSource(text: string) {
  await editor().click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
  await page.getByText('Draft saved', { exact: true }).waitFor();
  await eventually(async () => expect((await saved()).mjml).toBe(text));
}

/** Types as a person would, key by key (so the editor's completions run), closing any completion list. */
async function typeKeys(text: string) {
  await page.keyboard.type(text);
  await page.keyboard.press('Escape');
}

describe('typing MJML in the editor', () => {
  it('closes the element really open and keeps the indentation after self-closing elements', async () => {
    await openEditor();
    const start = source(['<mj-image src="https://example.com/logo.png" alt="" />', '<mj-divider />']);
    await replaceSource(start);

    // after </mjml>, `</` closes nothing and the new line is not indented
    await editor().click();
    await page.keyboard.press('Control+End');
    await page.keyboard.press('Enter');
    await typeKeys('</');
    expect((await lines()).at(-1)).toBe('</');
    for (let i = 0; i < 3; i++) await page.keyboard.press('Backspace');
    expect((await lines()).join('\n')).toBe(start);

    // a section written from the start: `>` closes the element typed (taken away here, as when
    // one writes the close tag later), a self-closing element is left as typed, and each `</`
    // closes the element open there, with the indentation of the source
    await page.locator('.cm-line', { hasText: /^ {4}<\/mj-section>$/ }).click();
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await typeKeys('<mj-section>');
    expect((await lines())[8]).toBe('    <mj-section></mj-section>');
    await page.keyboard.press('Shift+End');
    await page.keyboard.press('Delete');
    await page.keyboard.press('Enter');
    await typeKeys('<mj-column>');
    await page.keyboard.press('Shift+End');
    await page.keyboard.press('Delete');
    await page.keyboard.press('Enter');
    await typeKeys('<mj-divider />');
    await page.keyboard.press('Enter');
    await typeKeys('</');
    await page.keyboard.press('Enter');
    await typeKeys('</');
    const expected = [
      ...start.split('\n').slice(0, 8),
      '    <mj-section>',
      '      <mj-column>',
      '        <mj-divider />',
      '      </mj-column>',
      '    </mj-section>',
      ...start.split('\n').slice(8),
    ].join('\n');
    expect((await lines()).join('\n')).toBe(expected);
    await page.getByText('Draft saved', { exact: true }).waitFor();
    await eventually(async () => expect((await saved()).mjml).toBe(expected));
    await checkScreen(page, 'template editor after typing', () => editor().waitFor());
  }, 120_000);
});

describe('the variables of a template', () => {
  it('lists, adds, changes and removes variables, saved with the draft, with errors beside their field', async () => {
    await openEditor();
    const table = page.getByRole('table', { name: 'Declared variables' });
    const field = (label: string) => table.getByLabel(label, { exact: true });
    const frame = page.frameLocator('iframe[title="Preview"]');
    const lastVariable = async () => (await saved()).variables.at(-1);
    // the starter's five, then a header row
    expect(await table.getByRole('row').count()).toBe(6);
    expect(await field('Name of variable 1').inputValue()).toBe('company_name');
    expect(await field('Default of variable 1').inputValue()).toBe('Acme');
    expect(await field('variable 1 is required').isChecked()).toBe(false);

    // a new one: its name is typed at once; required, so the preview uses its preview value
    await page.getByRole('button', { name: 'Add a variable' }).click();
    await page.keyboard.type('plan_name');
    expect(await field('Name of variable 6').inputValue()).toBe('plan_name');
    expect(await field('variable 6 is required').isChecked()).toBe(true);
    await field('Preview value of variable 6').fill('Gold');
    await replaceSource(source(['<mj-text>Plan {{ plan_name }} at {{ company_name }}</mj-text>']));
    await frame.getByText('Plan Gold at Acme').waitFor();
    expect(await lastVariable()).toEqual({ name: 'plan_name', type: 'string' });

    // optional with a default, which the preview uses without a preview value
    await field('variable 6 is required').uncheck();
    await field('Default of variable 6').fill('Silver');
    await field('Preview value of variable 6').fill('');
    await frame.getByText('Plan Silver at Acme').waitFor();
    await eventually(async () =>
      expect(await lastVariable()).toEqual({ name: 'plan_name', type: 'string', default: 'Silver' }),
    );

    // the API's refusal shows beside the field at fault; fixed, the draft is saved
    await field('Type of variable 6').selectOption('number');
    const defaultField = field('Default of variable 6');
    const error = table.getByRole('alert');
    await error.waitFor();
    // beside the field, in the dashboard's words: no backquoted API path
    expect(await error.textContent()).toBe('Default must be a number');
    expect(await defaultField.getAttribute('aria-invalid')).toBe('true');
    expect(await defaultField.getAttribute('aria-describedby')).toBe(await error.getAttribute('id'));
    await page.getByText('Not saved', { exact: true }).waitFor();
    await checkScreen(page, 'template variables with an error', () => error.waitFor());
    await defaultField.fill('3');
    await page.getByText('Draft saved', { exact: true }).waitFor();
    await frame.getByText('Plan 3 at Acme').waitFor();
    expect(await error.count()).toBe(0);
    await eventually(async () =>
      expect(await lastVariable()).toEqual({ name: 'plan_name', type: 'number', default: 3 }),
    );

    // a bad name is refused beside it; the row removed, the rest is saved
    await page.getByRole('button', { name: 'Add a variable' }).click();
    await field('Name of variable 7').fill('2nd');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/^Name must be letters, digits and _/);
    expect(await field('Name of variable 7').getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('button', { name: 'Remove variable 7' }).click();
    await page.getByRole('button', { name: 'Remove variable 3' }).click(); // company_address
    await page.getByText('Draft saved', { exact: true }).waitFor();
    const names = async () => (await saved()).variables.map((v: { name: string }) => v.name);
    await eventually(async () =>
      expect(await names()).toEqual(['company_name', 'logo_url', 'account_url', 'guide_url', 'plan_name']),
    );

    // a variable the source reads cannot go: the API says so above the source; declared again, saved
    await page.getByRole('button', { name: 'Remove variable 1' }).click();
    const sourceError = page
      .getByRole('alert')
      .filter({ hasText: /uses “company_name”, which is not declared/ });
    await sourceError.waitFor();
    await page.getByRole('button', { name: 'Add a variable' }).click();
    await page.keyboard.type('company_name');
    await field('variable 5 is required').uncheck();
    await field('Default of variable 5').fill('Acme');
    await page.getByText('Draft saved', { exact: true }).waitFor();
    await frame.getByText('Plan 3 at Acme').waitFor();
    await eventually(async () =>
      expect(await names()).toEqual(['logo_url', 'account_url', 'guide_url', 'plan_name', 'company_name']),
    );
    await checkScreen(page, 'template variables', () => table.waitFor());
  }, 120_000);
});
