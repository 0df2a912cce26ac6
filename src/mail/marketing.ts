/**
 * The marketing mail layer: pure string work on a rendered message for the `marketing` and
 * `automation` streams. It builds no tokens and reads no database: the send path passes the
 * public URLs (`{public_url}/u/{token}`, `/t/o/{token}`, `/t/c/{token}`) already made.
 *
 * The send path applies it in this order:
 * 0. `fillPreferencesUrl` (what `{{ preferences_url }}` rendered to becomes the reader's page);
 * 1. `trackLinks` on the rendered HTML (content links become click URLs, the open pixel is added);
 * 2. `addFooter` on the tracked parts (its links carry `data-posthorn-notrack`, so even a second
 *    tracking pass would leave them alone);
 * 3. `listUnsubscribeHeaders` into `ComposeInput.headers`.
 * `List-Unsubscribe` and `List-Unsubscribe-Post` are in DKIM's signed header list (`dkim.ts`):
 * RFC 8058 one-click only counts when the signature covers both.
 */

export interface MessageParts {
  html: string | null;
  text: string | null;
}

export interface Footer {
  /** The sender's postal address (CAN-SPAM); may span lines. Plain text: escaped here for HTML. */
  postalAddress: string;
  unsubscribeUrl: string;
  preferencesUrl?: string;
  senderName?: string;
}

export interface Tracking {
  /** The click redirect for the link at `index` of the returned `links`. */
  clickUrl: (originalUrl: string, index: number) => string;
  openPixelUrl?: string;
}

/**
 * What `{{ preferences_url }}` renders to in a template or campaign (templates/render.ts): a
 * stand-in the marketing layer replaces with the reader's preference page (`fillPreferencesUrl`),
 * since the link needs the message's id, made after rendering. Nothing HTML-escaping changes, and
 * tracking leaves it alone (`{{`). Mail without the layer (transactional) gets it removed.
 */
export const PREFERENCES_URL_STANDIN = '{{posthorn:preferences_url}}';

/** Puts the preference page's URL (or '' for mail without one) where `{{ preferences_url }}` was. */
export function fillPreferencesUrl(parts: MessageParts, url: string): MessageParts {
  const fill = (part: string | null, value: string) =>
    part?.includes(PREFERENCES_URL_STANDIN) ? part.replaceAll(PREFERENCES_URL_STANDIN, value) : part;
  return { html: fill(parts.html, escapeHtml(url)), text: fill(parts.text, url) };
}

/** Marks a link that tracking must leave alone; the footer's own links carry it. */
export const NOTRACK_ATTRIBUTE = 'data-posthorn-notrack';

const FOOTER_STYLE =
  'margin:24px auto 0;padding:16px;max-width:600px;text-align:center;color:#6b7280;' +
  'font-family:Arial,Helvetica,sans-serif;font-size:12px;line-height:18px';
const FOOTER_LINK_STYLE = 'color:#6b7280;text-decoration:underline';
const TEXT_SEPARATOR = '----------------------------------------';

export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Inserts `block` just before the last `</body>`, or appends it when the HTML has none. */
function beforeBodyEnd(html: string, block: string): string {
  const at = html.toLowerCase().lastIndexOf('</body');
  return at === -1 ? html + block : html.slice(0, at) + block + html.slice(at);
}

function footerHtml(footer: Footer): string {
  const link = (url: string, label: string) =>
    `<a href="${escapeHtml(url)}" ${NOTRACK_ATTRIBUTE} style="${FOOTER_LINK_STYLE}">${label}</a>`;
  const links = [link(footer.unsubscribeUrl, 'Unsubscribe')];
  if (footer.preferencesUrl) links.push(link(footer.preferencesUrl, 'Manage preferences'));
  const lines: string[] = [];
  if (footer.senderName) lines.push(`<p style="margin:0 0 8px">${escapeHtml(footer.senderName)}</p>`);
  const address = footer.postalAddress.trim().split(/\r?\n/).map(escapeHtml).join('<br />');
  lines.push(`<p style="margin:0 0 8px">${address}</p>`);
  lines.push(`<p style="margin:0">${links.join(' &#183; ')}</p>`);
  return `<div data-posthorn-footer style="${FOOTER_STYLE}">${lines.join('')}</div>`;
}

function footerText(footer: Footer): string {
  const lines = [TEXT_SEPARATOR, `Unsubscribe: ${footer.unsubscribeUrl}`];
  if (footer.preferencesUrl) lines.push(`Manage preferences: ${footer.preferencesUrl}`);
  if (footer.senderName) lines.push(footer.senderName);
  lines.push(...footer.postalAddress.trim().split(/\r?\n/));
  return lines.join('\n');
}

/**
 * Appends the compliance footer (postal address, unsubscribe and preference links) to each part
 * that exists; a message with neither part gets a text part holding only the footer. When only
 * HTML is given, the text alternative compose derives from it carries the footer too.
 */
export function addFooter(parts: MessageParts, footer: Footer): MessageParts {
  const html = parts.html === null ? null : beforeBodyEnd(parts.html, footerHtml(footer));
  let text: string | null = null;
  if (parts.text !== null) {
    const body = parts.text.replace(/\s+$/, '');
    text = body ? `${body}\n\n${footerText(footer)}\n` : `${footerText(footer)}\n`;
  } else if (parts.html === null) {
    text = `${footerText(footer)}\n`;
  }
  return { html, text };
}

// an opening <a> tag; quoted attribute values may hold `>`
const ANCHOR_TAG = /<a(?=[\s>/])((?:[^>"']|"[^"]*"|'[^']*')*)>/gi;
// one attribute: name, then an optional double-quoted, single-quoted or bare value
const ATTRIBUTE = /([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;

const ENTITIES: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };

/** Decodes the character references that appear in href values (`&amp;` above all). */
function decodeAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, entity: string) => {
    if (entity[0] !== '#') return ENTITIES[entity.toLowerCase()] ?? m;
    const code =
      entity[1] === 'x' || entity[1] === 'X' ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1));
    return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
  });
}

function isTrackable(url: string): boolean {
  // a leftover template tag means the URL is not final: a redirect would only hide the defect
  return /^https?:\/\/[^\s]/i.test(url) && !/\{\{|\{%|%7B%7B/i.test(url);
}

function rewriteAnchor(attributes: string, track: Tracking, links: string[]): string | null {
  let href: { start: number; end: number; url: string } | null = null;
  for (const m of attributes.matchAll(ATTRIBUTE)) {
    const name = m[1].toLowerCase();
    if (name === NOTRACK_ATTRIBUTE || name === 'notrack') return null;
    if (name === 'href' && href === null) {
      const raw = m[2] ?? m[3] ?? m[4];
      if (raw === undefined) return null;
      href = { start: m.index, end: m.index + m[0].length, url: decodeAttribute(raw).trim() };
    }
  }
  if (href === null || !isTrackable(href.url)) return null;
  const index = links.push(href.url) - 1;
  const target = escapeHtml(track.clickUrl(href.url, index));
  return `${attributes.slice(0, href.start)}href="${target}"${attributes.slice(href.end)}`;
}

/**
 * Sends every http(s) link of the HTML through `clickUrl` and adds the open pixel when asked.
 * `links[i]` is the original (entity-decoded) URL of the i-th rewritten link in document order:
 * every occurrence gets its own index, so the same URL twice is two entries and a report can tell
 * the header logo from the button. Left alone: mailto:, tel:, #anchors, other schemes, URLs with
 * `{{`/`{%` leftovers, and links carrying `data-posthorn-notrack` or `notrack`.
 */
export function trackLinks(html: string, track: Tracking): { html: string; links: string[] } {
  const links: string[] = [];
  let out = html.replace(ANCHOR_TAG, (tag, attributes: string) => {
    const rewritten = rewriteAnchor(attributes, track, links);
    return rewritten === null ? tag : `${tag.slice(0, 2)}${rewritten}>`;
  });
  if (track.openPixelUrl) {
    const pixel =
      `<img src="${escapeHtml(track.openPixelUrl)}" alt="" width="1" height="1" ` +
      'style="display:block;border:0;height:1px;width:1px" />';
    out = beforeBodyEnd(out, pixel);
  }
  return { html: out, links };
}

/** A URI fit to sit between `<` and `>` in a header: no spaces, brackets, commas or line breaks. */
function headerUri(uri: string): string {
  if (/[\s<>,]/.test(uri)) throw new Error(`not a URI for List-Unsubscribe: ${JSON.stringify(uri)}`);
  return uri;
}

/**
 * The RFC 8058 one-click headers (RFC 2369 `List-Unsubscribe` with the HTTPS URI first, then the
 * optional mailto). Production public URLs are https, as RFC 8058 requires; http is accepted for
 * local development only.
 */
export function listUnsubscribeHeaders(oneClickUrl: string, mailto?: string): Record<string, string> {
  if (!/^https?:\/\//i.test(oneClickUrl)) throw new Error('the one-click unsubscribe URL must be http(s)');
  const uris = [`<${headerUri(oneClickUrl)}>`];
  if (mailto) uris.push(`<${headerUri(/^mailto:/i.test(mailto) ? mailto : `mailto:${mailto}`)}>`);
  return {
    'List-Unsubscribe': uris.join(', '),
    'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
  };
}
