import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/** The template screens (issue 19): from a starter, live preview as the MJML changes, errors at their line, publish. */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Tess Templates' });
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  await signInWithCode(page, server, account.account.email);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const mjml = (body: string) =>
  [
    '<mjml>',
    '  <mj-body>',
    '    <mj-section>',
    '      <mj-column>',
    body,
    '      </mj-column>',
    '    </mj-section>',
    '  </mj-body>',
    '</mjml>',
  ].join('\n');

/** Replaces the whole source in the code editor, as a paste would. */
async function replaceSource(source: string) {
  const editor = page.getByRole('textbox', { name: 'MJML source' });
  await editor.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(source);
}

describe('templates in the dashboard', () => {
  it('builds a template from a starter, previews edits live, shows a broken line, and publishes', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Templates' }).click();
    await page.getByRole('heading', { level: 1, name: 'Templates' }).waitFor();
    await page.getByText('No templates yet').waitFor();
    await checkScreen(page, 'templates (empty)', (p) => p.getByText('No templates yet').waitFor());

    await page.getByRole('button', { name: 'New template' }).click();
    const dialog = page.getByRole('dialog', { name: 'New template' });
    await dialog.getByLabel('Name', { exact: true }).fill('Welcome mail');
    await dialog.getByLabel('Start from').selectOption('welcome');
    await checkScreen(page, 'new template dialog', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Create and edit' }).click();
    await page.getByRole('heading', { level: 1, name: 'Welcome mail' }).waitFor();
    // a starter opens as blocks (issue 49); this test edits its MJML, so it turns to the code
    const visual = page.getByRole('radio', { name: 'Visual' });
    await visual.waitFor();
    expect(await visual.isChecked()).toBe(true);
    await page.getByRole('radio', { name: 'Code' }).check();

    // the starter's draft, rendered with the sample variables
    const frame = page.frameLocator('iframe[title="Preview"]');
    await frame.getByText('Welcome aboard').waitFor();
    await checkScreen(page, 'template editor', (p) =>
      p.getByRole('textbox', { name: 'MJML source' }).waitFor(),
    );

    // an edit is saved as the draft and the preview follows
    await replaceSource(mjml('        <mj-text>Hello from the editor, {{ company_name }}</mj-text>'));
    await frame.getByText('Hello from the editor, Acme').waitFor();
    await page.getByText('Draft saved').waitFor();
    // the advice on the message as saved (issue 49, build item 3): each check with its status in words
    const advice = page.getByRole('region', { name: 'Advice on the message' });
    await advice.getByText('Message size').waitFor();
    await advice.getByText('Links', { exact: true }).waitFor();
    const saved = await server.call('GET', '/v1/templates', { key: account.project_key.key });
    expect(saved.body.data[0].mjml).toContain('Hello from the editor');

    // broken MJML: the error names its line, and the editor marks that line
    await replaceSource(mjml('        <mj-text>Fine</mj-text>\n        <mj-bogus>Not an element</mj-bogus>'));
    const alert = page.getByRole('alert').filter({ hasText: /^Line 6:/ });
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/mj-bogus/);
    await page.locator('.cm-lintRange-error').first().waitFor();
    await checkScreen(page, 'template editor with an error', () => alert.waitFor());
    // the draft kept the last good source
    const kept = await server.call('GET', '/v1/templates', { key: account.project_key.key });
    expect(kept.body.data[0].mjml).not.toContain('mj-bogus');

    // fixed again, then published: version 1
    await replaceSource(mjml('        <mj-text>Ready to send</mj-text>'));
    await frame.getByText('Ready to send').waitFor();
    await page.getByText('Draft saved').waitFor();
    await page.getByRole('button', { name: 'Publish the draft' }).click();
    await page.getByText('Version 1', { exact: false }).first().waitFor();
    const versions = await server.call('GET', `/v1/templates/${kept.body.data[0].id}/versions`, {
      key: account.project_key.key,
    });
    expect(versions.body.data.map((v: { version: number }) => v.version)).toEqual([1]);

    // a test of the draft to the signed-in address (prefilled), with [Test] in its subject
    const testForm = page.getByRole('form', { name: 'Send a test' });
    expect(await testForm.getByLabel('Send a test to').inputValue()).toBe(account.account.email);
    await testForm.getByRole('button', { name: 'Send test' }).click();
    await testForm
      .getByText(`Test sent to ${account.account.email}.`)
      .waitFor()
      .catch(async (err) => {
        throw new Error(`${err}\n${await testForm.innerText()}`);
      });
    const test = await server.sink.waitFor(
      (m) => m.to[0] === account.account.email && /\[Test\]/.test(m.parsed.subject ?? ''),
    );
    expect(test.parsed.html).toContain('Ready to send');

    // the phone width narrows the preview
    await page.getByRole('radio', { name: 'Phone' }).check();
    await eventually(
      async () =>
        expect((await page.locator('.preview-frame').boundingBox())?.width ?? 0).toBeLessThanOrEqual(391),
      { timeoutMs: 1_000 },
    );

    await page.getByRole('link', { name: 'All templates' }).click();
    const row = page.getByRole('row', { name: /Welcome mail/ });
    await row.getByText('version 1').waitFor();
    await checkScreen(page, 'templates', () => row.waitFor());
  }, 120_000);
});
