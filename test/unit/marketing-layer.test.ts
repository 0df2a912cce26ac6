import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { describe, expect, it } from 'vitest';
import { composeMessage } from '../../src/mail/compose.ts';
import type { DkimKey } from '../../src/mail/dkim.ts';
import { htmlToText } from '../../src/mail/html-to-text.ts';
import { addFooter, listUnsubscribeHeaders, trackLinks } from '../../src/mail/marketing.ts';

const FOOTER = {
  postalAddress: 'Acme & Sons <HQ>\n1 Main St, Springfield',
  unsubscribeUrl: 'https://mail.example.com/u/tok1?a=1&b=2',
  preferencesUrl: 'https://mail.example.com/u/tok1?view=preferences',
};

const click = (url: string, index: number) =>
  `https://t.example.com/t/c/${index}?u=${encodeURIComponent(url)}`;

describe('addFooter', () => {
  it('adds the footer to both parts', () => {
    const out = addFooter({ html: '<html><body><p>Hi</p></body></html>', text: 'Hi\n\n' }, FOOTER);
    expect(out.html).toContain('>Unsubscribe</a>');
    expect(out.html).toContain('href="https://mail.example.com/u/tok1?a=1&amp;b=2"');
    expect(out.html).toContain('>Manage preferences</a>');
    expect(out.html).toMatch(/font-size:12px/);
    expect(out.html).toMatch(/text-align:center/);
    expect(out.text).toBe(
      'Hi\n\n----------------------------------------\n' +
        'Unsubscribe: https://mail.example.com/u/tok1?a=1&b=2\n' +
        'Manage preferences: https://mail.example.com/u/tok1?view=preferences\n' +
        'Acme & Sons <HQ>\n1 Main St, Springfield\n',
    );
  });

  it('escapes the postal address and sender name in HTML', () => {
    const out = addFooter({ html: '<p>Hi</p>', text: null }, { ...FOOTER, senderName: '<script>x</script>' });
    expect(out.html).toContain('Acme &amp; Sons &lt;HQ&gt;<br />1 Main St, Springfield');
    expect(out.html).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(out.html).not.toContain('<HQ>');
    expect(out.html).not.toContain('<script>');
  });

  it('inserts the HTML footer just before </body>, or appends it when there is none', () => {
    const withBody = addFooter({ html: '<html><BODY><p>Hi</p></BODY></html>', text: null }, FOOTER).html!;
    expect(withBody).toMatch(/<p>Hi<\/p><div data-posthorn-footer[^>]*>.*<\/div><\/BODY><\/html>$/);
    const fragment = addFooter({ html: '<p>Hi</p>', text: null }, FOOTER).html!;
    expect(fragment.startsWith('<p>Hi</p><div data-posthorn-footer')).toBe(true);
    expect(fragment.endsWith('</div>')).toBe(true);
  });

  it('keeps the footer readable in the text that compose derives from HTML alone', () => {
    const text = htmlToText(addFooter({ html: '<body><p>Hi</p></body>', text: null }, FOOTER).html!);
    expect(text).toContain('Acme & Sons <HQ>');
    expect(text).toContain('Unsubscribe (https://mail.example.com/u/tok1?a=1&b=2)');
    expect(text).toContain('· Manage preferences (https://mail.example.com/u/tok1?view=preferences)');
  });

  it('leaves a missing part missing, and gives a text footer when both are missing', () => {
    expect(addFooter({ html: '<p>Hi</p>', text: null }, FOOTER).text).toBeNull();
    expect(addFooter({ html: null, text: 'Hi' }, FOOTER).html).toBeNull();
    const bare = addFooter(
      { html: null, text: null },
      { postalAddress: '1 Main St', unsubscribeUrl: 'https://u/x' },
    );
    expect(bare).toEqual({
      html: null,
      text: '----------------------------------------\nUnsubscribe: https://u/x\n1 Main St\n',
    });
  });

  it('marks its links so tracking never rewrites them, even when applied after the footer', () => {
    const footed = addFooter(
      { html: '<body><a href="https://shop.example/">Shop</a></body>', text: null },
      FOOTER,
    );
    const tracked = trackLinks(footed.html!, { clickUrl: click });
    expect(tracked.links).toEqual(['https://shop.example/']);
    expect(tracked.html).toContain('href="https://mail.example.com/u/tok1?a=1&amp;b=2"');
    expect(tracked.html).toContain('href="https://mail.example.com/u/tok1?view=preferences"');
  });
});

describe('trackLinks', () => {
  it('rewrites http(s) links with either quote style and any attribute order', () => {
    const html =
      '<a href="https://a.example/1">1</a>' +
      "<A class='btn' HREF='http://b.example/2' target=\"_blank\">2</A>" +
      '<a\n  style="color:red"\n  href = "https://c.example/3?x=>"\n>3</a>' +
      '<a title="href=https://no.example" href="https://d.example/4">4</a>';
    const out = trackLinks(html, { clickUrl: click });
    expect(out.links).toEqual([
      'https://a.example/1',
      'http://b.example/2',
      'https://c.example/3?x=>',
      'https://d.example/4',
    ]);
    expect(out.html).toBe(
      `<a href="${click('https://a.example/1', 0)}">1</a>` +
        `<A class='btn' href="${click('http://b.example/2', 1)}" target="_blank">2</A>` +
        `<a\n  style="color:red"\n  href="${click('https://c.example/3?x=>', 2)}"\n>3</a>` +
        `<a title="href=https://no.example" href="${click('https://d.example/4', 3)}">4</a>`,
    );
  });

  it('decodes &amp; in the original URL and escapes the tracking URL', () => {
    const out = trackLinks('<a href="https://s.example/?a=1&amp;b=2">x</a>', {
      clickUrl: (_url, i) => `https://t.example/c?i=${i}&sig=z`,
    });
    expect(out.links).toEqual(['https://s.example/?a=1&b=2']);
    expect(out.html).toBe('<a href="https://t.example/c?i=0&amp;sig=z">x</a>');
  });

  it('gives each occurrence of the same URL its own index', () => {
    const out = trackLinks('<a href="https://x.example/">a</a><a href="https://x.example/">b</a>', {
      clickUrl: click,
    });
    expect(out.links).toEqual(['https://x.example/', 'https://x.example/']);
    expect(out.html).toContain(click('https://x.example/', 1));
  });

  it('leaves mailto, tel, anchors, template leftovers and notrack links alone', () => {
    const untouched =
      '<a href="mailto:hi@example.com">m</a>' +
      '<a href="tel:+15555550100">t</a>' +
      '<a href="#top">a</a>' +
      '<a href="{{ unsubscribe_url }}">l</a>' +
      '<a href="https://x.example/{{ contact.id }}">l2</a>' +
      '<a data-posthorn-notrack href="https://x.example/">n1</a>' +
      '<a href="https://x.example/" notrack>n2</a>' +
      '<a name="anchor">no href</a>' +
      '<abbr href="https://x.example/">not a link</abbr>';
    const out = trackLinks(untouched, { clickUrl: click });
    expect(out).toEqual({ html: untouched, links: [] });
  });

  it('adds the open pixel just before </body>, or appends it', () => {
    const pixel =
      '<img src="https://t.example/t/o/tok?a=1&amp;b=2" alt="" width="1" height="1" ' +
      'style="display:block;border:0;height:1px;width:1px" />';
    const track = { clickUrl: click, openPixelUrl: 'https://t.example/t/o/tok?a=1&b=2' };
    expect(trackLinks('<html><body><p>x</p></body></html>', track).html).toBe(
      `<html><body><p>x</p>${pixel}</body></html>`,
    );
    expect(trackLinks('<p>x</p>', track).html).toBe(`<p>x</p>${pixel}`);
    expect(trackLinks('<p>x</p>', { clickUrl: click }).html).toBe('<p>x</p>');
  });
});

describe('listUnsubscribeHeaders', () => {
  it('gives the RFC 8058 one-click pair, with the optional mailto after the URL', () => {
    expect(listUnsubscribeHeaders('https://mail.example.com/u/tok1')).toEqual({
      'List-Unsubscribe': '<https://mail.example.com/u/tok1>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
    expect(listUnsubscribeHeaders('https://mail.example.com/u/tok1', 'unsub+tok1@example.com')).toEqual({
      'List-Unsubscribe': '<https://mail.example.com/u/tok1>, <mailto:unsub+tok1@example.com>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
    expect(
      listUnsubscribeHeaders('https://m.example/u/t', 'mailto:u@example.com?subject=unsubscribe')[
        'List-Unsubscribe'
      ],
    ).toBe('<https://m.example/u/t>, <mailto:u@example.com?subject=unsubscribe>');
  });

  it('refuses a URL that is not http(s) or that could break out of the header', () => {
    expect(() => listUnsubscribeHeaders('mailto:x@example.com')).toThrow();
    expect(() => listUnsubscribeHeaders('https://m.example/u/t>\r\nBcc: x@example.com')).toThrow();
    expect(() => listUnsubscribeHeaders('https://m.example/u/t', 'a@b.example>, <https://evil')).toThrow();
  });
});

describe('composed marketing message', () => {
  it('is DKIM-signed over List-Unsubscribe and List-Unsubscribe-Post', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const key: DkimKey = { domain: 'news.example.com', selector: 'ph1', privateKey };
    const publicDer = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    const resolver = async (name: string, type: string) => {
      if (type === 'TXT' && name === 'ph1._domainkey.news.example.com')
        return [[`v=DKIM1; k=rsa; p=${publicDer}`]];
      throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
    };

    const tracked = trackLinks(
      '<html><body><a href="https://shop.example/?a=1&amp;b=2">Shop</a></body></html>',
      {
        clickUrl: click,
        openPixelUrl: 'https://t.example.com/t/o/tok1',
      },
    );
    const parts = addFooter({ html: tracked.html, text: null }, FOOTER);
    const raw = await composeMessage(
      {
        messageId: '<m1@news.example.com>',
        from: 'News <news@news.example.com>',
        to: ['reader@example.org'],
        cc: [],
        replyTo: [],
        subject: 'This week',
        html: parts.html,
        text: parts.text,
        headers: listUnsubscribeHeaders(
          'https://mail.example.com/u/aVeryLongTokenThatMakesTheHeaderFoldAcrossLines0123456789abcdef',
          'unsubscribe+tok1@news.example.com',
        ),
        attachments: [],
        projectId: 'proj_1',
        stream: 'marketing',
      },
      key,
    );

    const verified = await dkimVerify(raw, { resolver });
    expect(verified.results[0].status.result).toBe('pass');
    const signed = verified.results[0].signingHeaders!.keys.toLowerCase().split(/\s*:\s*/);
    expect(signed).toContain('list-unsubscribe');
    expect(signed).toContain('list-unsubscribe-post');

    // the header survives composing intact, and a changed unsubscribe target breaks the signature
    const text = raw.toString('latin1');
    expect(text).toContain('List-Unsubscribe-Post: List-Unsubscribe=One-Click');
    const tampered = Buffer.from(text.replace('aVeryLongToken', 'aForgedLongToken'), 'latin1');
    expect((await dkimVerify(tampered, { resolver })).results[0].status.result).not.toBe('pass');
  });
});
