import 'mjml';
import mjml2html from 'mjml';
import { components } from 'mjml-core';
import parseMjml from 'mjml-parser-xml';
import type { Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { STARTERS } from '../../src/domain/templates/starters.ts';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { seriousAxeViolations, signInWithCode } from '../helpers/dashboard.ts';
import { FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The visual email editor (issue 49, items 1 and 4): every starter goes visual → code → visual
 * with the same MJML tree and the same rendered HTML; a newsletter is built from a blank page with
 * the keyboard alone and published; the screen passes axe.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  account = await server.signupConfirmed({ name: 'Vera Visual' });
  page = await browser.context.newPage();
  page.setDefaultTimeout(20_000);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await signInWithCode(page, server, account.account.email);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

interface MjmlNode {
  tagName: string;
  attributes?: Record<string, string>;
  children?: MjmlNode[];
  content?: string;
}

/** Whitespace runs as one space, none between tags, `<br/>` as `<br />`. */
const squeeze = (s: string) =>
  s
    .replace(/\s+/g, ' ')
    .replace(/\s*\/>/g, ' />')
    .replace(/>\s+</g, '><')
    .trim();

/** The MJML as mjml's own parser reads it, attributes in order and whitespace normalised. */
function tree(source: string): unknown {
  const walk = (n: MjmlNode): unknown => ({
    tag: n.tagName,
    attributes: Object.entries(n.attributes ?? {}).sort(([a], [b]) => a.localeCompare(b)),
    ...(n.content !== undefined ? { content: squeeze(n.content) } : {}),
    children: (n.children ?? []).map(walk),
  });
  return walk(parseMjml(source, { keepComments: true, components }) as MjmlNode);
}

async function rendered(source: string): Promise<string> {
  return squeeze((await mjml2html(source, { validationLevel: 'skip' })).html);
}

async function draftOf(id: string): Promise<string> {
  return (await server.call('GET', `/v1/templates/${id}`, { key: account.project_key.key })).body.mjml;
}

/** The code view's text, as CodeMirror holds it. */
async function codeText(): Promise<string> {
  await page.getByRole('textbox', { name: 'MJML source' }).waitFor();
  return (await page.locator('.cm-content .cm-line').allTextContents()).join('\n');
}

async function openVisual() {
  await page.getByRole('radio', { name: 'Visual' }).check();
  await page.getByRole('heading', { name: 'Blocks' }).waitFor();
}

const outline = () => page.locator('.outline-tree');

describe('the visual editor', () => {
  it('switches visual → code → visual on every starter with the same MJML tree and HTML', async () => {
    for (const starter of STARTERS) {
      const made = await server.call('POST', '/v1/templates', {
        key: account.project_key.key,
        body: { name: `Round trip ${starter.key}`, starter: starter.key },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      const id = made.body.id;
      await page.goto(`${server.url}/templates/${id}`);
      await openVisual();
      // nothing is kept as raw MJML: every part of a starter is blocks
      expect(await page.getByText('cannot be edited as blocks').count()).toBe(0);

      // the brand line moved below the card: the draft is the block editor's MJML
      await outline().getByRole('button', { name: 'Move down: Section' }).first().click();
      const moved = await eventually(async () => {
        const draft = await draftOf(id);
        expect(draft).not.toBe(starter.mjml);
        return draft;
      });
      const expected = tree(starter.mjml) as { children: { tag: string; children: unknown[] }[] };
      const body = expected.children.find((c) => c.tag === 'mj-body') as { children: unknown[] };
      const swapped = structuredClone(expected);
      const swappedBody = swapped.children.find((c) => c.tag === 'mj-body') as { children: unknown[] };
      [swappedBody.children[0], swappedBody.children[1]] = [body.children[1], body.children[0]];
      expect(tree(moved), starter.key).toEqual(swapped);

      // the code view shows what the visual view wrote
      await page.getByRole('radio', { name: 'Code' }).check();
      expect(tree(await codeText())).toEqual(swapped);

      // back to visual: the brand line up again gives the starter's own tree and HTML
      await openVisual();
      const second = outline().locator(':scope > li').nth(1);
      await second.getByRole('button', { name: 'Move up: Section' }).first().click();
      const back = await eventually(async () => {
        const draft = await draftOf(id);
        expect(tree(draft)).toEqual(expected);
        return draft;
      });
      expect(await rendered(back), starter.key).toBe(await rendered(starter.mjml));
      await page.getByRole('radio', { name: 'Code' }).check();
      expect(tree(await codeText())).toEqual(expected);
    }
  }, 240_000);

  it('builds a newsletter from a blank page with the keyboard alone, passes axe, publishes it and sends it', async () => {
    await page.goto(`${server.url}/templates`);
    await page.getByRole('button', { name: 'New template' }).click();
    const dialog = page.getByRole('dialog', { name: 'New template' });
    await dialog.getByLabel('Name', { exact: true }).fill('Built newsletter');
    await dialog.getByLabel('Start from').selectOption('');
    await dialog.getByRole('button', { name: 'Create and edit' }).click();
    await page.getByRole('heading', { level: 1, name: 'Built newsletter' }).waitFor();
    const id = page.url().split('/').pop() as string;
    await openVisual();
    expect(await seriousAxeViolations(page), 'the visual editor').toEqual([]);

    const press = (name: string | RegExp, n = 0) =>
      outline().getByRole('button', { name, exact: true }).nth(n).press('Enter');
    const add = async (label: string) => {
      await page.getByLabel('Block to add').selectOption({ label });
      await page.getByRole('button', { name: 'Add block' }).press('Enter');
    };
    // the blank page's section goes; a greeting with the contact's first name comes
    await press('Remove: Section');
    await expect.poll(() => outline().locator('li').count()).toBe(0);
    await add('Section, one column');
    await press(/^Text/);
    await page.getByLabel('Variable to insert').selectOption('contact.first_name');
    await page.getByRole('button', { name: 'Insert variable' }).press('Enter');
    await page.getByText('Inserted contact.first_name.').waitFor();
    // a two-column section after it: an image in the left column, a button in the right
    await press('Section');
    await add('Section, two columns');
    await press('Column', 1);
    await add('Image');
    // the image is uploaded to Posthorn and becomes the image block's picture
    await press(/^Image/);
    const png = await sharp({ create: { width: 60, height: 30, channels: 3, background: '#1d4ed8' } })
      .png()
      .toBuffer();
    await page
      .getByLabel('Upload an image')
      .setInputFiles({ name: 'spring-banner.png', mimeType: 'image/png', buffer: png });
    await page.getByText('Uploaded spring-banner.png.').waitFor();
    await press('Column', 2);
    await add('Button');
    // undo takes the button away, redo brings it back
    const toolbar = page.locator('.visual-toolbar');
    await eventually(async () => expect(await draftOf(id)).toContain('Button text'));
    await toolbar.getByRole('button', { name: 'Undo' }).press('Enter');
    await eventually(async () => expect(await draftOf(id)).not.toContain('Button text'));
    await toolbar.getByRole('button', { name: 'Redo' }).press('Enter');
    await eventually(async () => expect(await draftOf(id)).toContain('Button text'));
    // moved above the greeting and back down, by keyboard
    await press('Move up: Section', 1);
    await expect
      .poll(
        async () =>
          (await draftOf(id)).indexOf('mj-image') < (await draftOf(id)).indexOf('contact.first_name'),
      )
      .toBe(true);
    await press('Move down: Section', 0);

    const draft = await eventually(async () => {
      const mjml = await draftOf(id);
      expect(mjml.indexOf('contact.first_name')).toBeGreaterThan(-1);
      expect(mjml.indexOf('contact.first_name')).toBeLessThan(mjml.indexOf('mj-image'));
      return mjml;
    });
    const body = (
      tree(draft) as { children: { tag: string; children: { tag: string; children: { tag: string }[] }[] }[] }
    ).children.find((c) => c.tag === 'mj-body');
    const sections = body?.children ?? [];
    expect(sections.map((s) => s.children.length)).toEqual([1, 2]);
    expect(draft).toContain('{{ contact.first_name | default: "there" }}');
    const image = /<mj-image[^>]*src="([^"]+\/assets\/[^"]+)"/.exec(draft)?.[1] as string;
    expect(image, draft).toBeDefined();
    const served = await fetch(`${server.url}${new URL(image).pathname}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(draft).toMatch(/<mj-button[^>]*>Button text<\/mj-button>/);
    expect((await mjml2html(draft, { validationLevel: 'strict' })).errors).toEqual([]);
    expect(await seriousAxeViolations(page), 'the visual editor with blocks').toEqual([]);

    // the canvas at a phone's width
    await toolbar.getByRole('radio', { name: 'Phone' }).check();
    const frameWidth = () => page.locator('.gjs-frame').evaluate((e) => e.getBoundingClientRect().width);
    await eventually(async () => expect(await frameWidth()).toBeLessThan(400));
    await toolbar.getByRole('radio', { name: 'Desktop' }).check();
    await eventually(async () => expect(await frameWidth()).toBeGreaterThan(500));

    // the built newsletter goes code → visual → code unchanged too
    await page.getByRole('radio', { name: 'Code' }).check();
    expect(tree(await codeText())).toEqual(tree(draft));
    await openVisual();
    await page.getByRole('radio', { name: 'Code' }).check();
    expect(tree(await codeText())).toEqual(tree(draft));

    await page.getByRole('button', { name: 'Publish the draft' }).press('Enter');
    await page.getByText('Version 1', { exact: true }).waitFor();
    const versions = await server.call('GET', `/v1/templates/${id}/versions`, {
      key: account.project_key.key,
    });
    expect(tree(versions.body.data[0].mjml)).toEqual(tree(draft));

    // a campaign with it: the reader's first name in the greeting, the image served from Posthorn
    const key = account.project_key.key;
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
    await server.call('PATCH', '/v1/me/footer', {
      key,
      body: { address: 'Vera Visual Ltd, 1 Low Road, York' },
    });
    const list = await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } });
    await server.call('POST', '/v1/contacts', { key, body: { email: 'ada@example.org', first_name: 'Ada' } });
    await server.call('POST', `/v1/lists/${list.body.id}/contacts`, {
      key,
      body: { emails: ['ada@example.org'] },
    });
    const campaign = await server.call('POST', '/v1/campaigns', {
      key,
      body: { name: 'Built', from: FROM, subject: 'Our news', template_id: id, list_ids: [list.body.id] },
    });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
    const started = await server.call('POST', `/v1/campaigns/${campaign.body.id}/send`, { key });
    expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
    await waitForCampaignStatus(server, key, campaign.body.id, 'sent');
    const message = await server.sink.waitFor((m) => m.to[0] === 'ada@example.org');
    const html = String(message.parsed.html);
    expect(html).toContain('Your text Ada');
    expect(html).toContain(image);
  }, 120_000);

  it('keeps MJML the blocks cannot represent as a raw block, never dropping it', async () => {
    const sections = [
      '<mj-section><mj-column><mj-text>First</mj-text></mj-column></mj-section>',
      // GrapesJS drops a CDATA section: this mj-raw is kept as written, as a raw MJML block
      '<mj-section><mj-column><mj-raw><![CDATA[<p>Kept as written</p>]]></mj-raw></mj-column></mj-section>',
      '<mj-section><mj-column><mj-text>Last{% if vip > 0 %}, dear friend{% endif %}</mj-text></mj-column></mj-section>',
    ];
    const doc = (parts: string[]) =>
      `<mjml>\n  <mj-body>\n    ${parts.join('\n    ')}\n  </mj-body>\n</mjml>\n`;
    const made = await server.call('POST', '/v1/templates', {
      key: account.project_key.key,
      body: {
        name: 'Conditional',
        subject: 'Hi',
        mjml: doc(sections),
        variables: [{ name: 'vip', type: 'number', default: 0 }],
      },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    await page.goto(`${server.url}/templates/${made.body.id}`);
    await openVisual();
    await page.getByText('One part of this template cannot be edited as blocks').waitFor();
    await outline()
      .getByRole('button', { name: /^Raw MJML/ })
      .waitFor();
    // the last section moved up: the draft is the block editor's, CDATA and Liquid as written
    await outline()
      .locator(':scope > li')
      .nth(2)
      .getByRole('button', { name: 'Move up: Section' })
      .press('Enter');
    const expected = tree(doc([sections[0], sections[2], sections[1]]));
    await eventually(async () => expect(tree(await draftOf(made.body.id))).toEqual(expected));
    await page.getByRole('radio', { name: 'Code' }).check();
    expect(tree(await codeText())).toEqual(expected);
  }, 60_000);
});
