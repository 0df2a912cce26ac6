import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STARTERS } from '../../src/domain/templates/starters.ts';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import {
  compileStrict,
  htmlLiquid,
  renderStarter,
  SAMPLE_CONTACT,
  starterValues,
} from '../helpers/starters.ts';

/** The little of the page's DOM the layout check reads (the project compiles without DOM types). */
interface PageGlobals {
  innerWidth: number;
  document: {
    documentElement: { scrollWidth: number };
    body: {
      innerText: string;
      querySelectorAll(selector: string): Iterable<{
        tagName: string;
        getBoundingClientRect(): { left: number; right: number; width: number };
      }>;
    };
  };
}

/** Runs in the page: the document's width, its visible text, and every box that leaves the viewport. */
function measureLayout() {
  const { document, innerWidth } = globalThis as unknown as PageGlobals;
  return {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth,
    text: document.body.innerText,
    // the card's rounded corners clip (overflow: hidden), so content cut off there would never
    // widen the page: every element's box is checked against the viewport as well
    pastTheEdge: [...document.body.querySelectorAll('*')]
      .map((el) => ({ tag: el.tagName, box: el.getBoundingClientRect() }))
      .filter(({ box }) => box.width > 0 && (box.left < -0.5 || box.right > innerWidth + 0.5))
      .map(({ tag, box }) => `${tag} ${Math.round(box.left)}..${Math.round(box.right)}`),
  };
}

let browser: TestBrowser;

beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

describe('the built-in template starters', () => {
  it('are the four the issue names, each with a unique key', () => {
    expect(STARTERS.map((s) => s.key)).toEqual(['welcome', 'receipt', 'password_reset', 'newsletter']);
  });

  it('shows the optional parts when they are given: the logo, a quantity, the tax line', async () => {
    const receipt = STARTERS.find((s) => s.key === 'receipt')!;
    const values = {
      ...starterValues(receipt),
      logo_url: 'https://cdn.example.com/logo.png',
      item_quantity: 3,
      tax_amount: '$48.00',
    };
    const { html } = await renderStarter(receipt, values);
    expect(html).toContain('<img src="https://cdn.example.com/logo.png" alt="Acme"');
    expect(html).toContain('× 3');
    expect(html).toMatch(/>Tax<\/td>\s*<td[^>]*>\$48\.00</);
    const plain = await renderStarter(receipt);
    expect(plain.html).not.toContain('<img');
    expect(plain.html).not.toContain('>Tax<');
  });

  describe.each(STARTERS.map((s) => [s.key, s] as const))('%s', (_key, starter) => {
    it('compiles with strict MJML and no errors', async () => {
      const { errors, html } = await compileStrict(starter.mjml);
      expect(errors.map((e) => e.formattedMessage)).toEqual([]);
      expect(html).toContain('<body');
    });

    it('reads only declared variables and `contact` in its subject, preheader and MJML', () => {
      const declared = new Set(starter.variables.map((v) => v.name));
      expect(declared.size).toBe(starter.variables.length);
      for (const source of [starter.subject, starter.preheader, starter.mjml]) {
        const names = htmlLiquid.globalVariablesSync(htmlLiquid.parse(source));
        expect(names.filter((n) => n !== 'contact' && !declared.has(n))).toEqual([]);
      }
    });

    it('renders every field, links no outside resource, and greets a contact without a name', async () => {
      const rendered = await renderStarter(starter);
      for (const field of [rendered.subject, rendered.preheader, rendered.html]) {
        expect(field.trim()).not.toBe('');
        expect(field).not.toMatch(/\{\{|\{%/);
      }
      expect(rendered.html).not.toMatch(/fonts\.googleapis|<link\b/i);
      // without a first name the greeting falls back, never "Hi ," or ", welcome"
      const anonymous = await renderStarter(starter, starterValues(starter), { email: 'x@example.com' });
      expect(`${anonymous.subject}\n${anonymous.html}`).not.toMatch(/Hi\s*,|^\s*,/m);
      expect(anonymous.html).toContain('Hi there,');
    });

    it.each([
      390, 1280,
    ])('shows the personalised text without horizontal scrolling at %i px wide', async (width) => {
      const rendered = await renderStarter(starter);
      const page = await browser.context.newPage();
      const requested: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      try {
        await page.setViewportSize({ width, height: 800 });
        await page.setContent(rendered.html, { waitUntil: 'load' });
        const layout = await page.evaluate(measureLayout);
        expect(layout.innerWidth).toBe(width);
        expect(layout.scrollWidth).toBeLessThanOrEqual(layout.innerWidth);
        expect(layout.pastTheEdge).toEqual([]);
        expect(layout.text).toContain(`Hi ${SAMPLE_CONTACT.first_name},`);
        const values = starterValues(starter);
        for (const v of starter.variables) {
          const value = values[v.name];
          // every variable shown as text (not a link, not a date, not left empty) is on the page
          if (v.type === 'date' || value === '' || String(value).startsWith('https://')) continue;
          expect(layout.text, v.name).toContain(String(value));
        }
        expect(requested.filter((url) => !url.startsWith('about:') && !url.startsWith('data:'))).toEqual([]);
      } finally {
        await page.close();
      }
    });
  });
});
