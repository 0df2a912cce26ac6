const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** Marks around a hidden preheader: the text alternative does not start with it. */
export const PREHEADER_START = '<!--preheader-->';
export const PREHEADER_END = '<!--/preheader-->';
const PREHEADER = /<!--preheader-->[\s\S]*?<!--\/preheader-->/g;

const HIDDEN = /display\s*:\s*none/gi;
const VOID = new Set(['area', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'wbr']);

/**
 * The HTML without the elements its inline styles hide (`display:none`): a preview text, a menu's
 * icons, a carousel's controls are not for the reader of the text part. Only the hidden places are
 * visited, so a message without any costs one search.
 */
function withoutHidden(html: string): string {
  let out = '';
  let copied = 0;
  HIDDEN.lastIndex = 0;
  for (let m = HIDDEN.exec(html); m; m = HIDDEN.exec(html)) {
    const start = html.lastIndexOf('<', m.index);
    // in an element's opening tag (not in text, not in a closing tag), not in one already left out
    if (start < copied || html.lastIndexOf('>', m.index) > start) continue;
    const name = /^<([a-zA-Z][\w-]*)/.exec(html.slice(start, start + 40))?.[1]?.toLowerCase();
    if (!name) continue;
    const tagEnd = html.indexOf('>', m.index);
    if (tagEnd < 0) break;
    let end = tagEnd + 1;
    if (!VOID.has(name) && html[tagEnd - 1] !== '/') {
      // to the matching end tag, counting elements of the same name opened inside it
      const tags = new RegExp(`<(/?)${name}\\b[^>]*>`, 'gi');
      tags.lastIndex = end;
      let depth = 1;
      for (let t = tags.exec(html); t; t = tags.exec(html)) {
        depth += t[1] ? -1 : 1;
        if (depth === 0) {
          end = t.index + t[0].length;
          break;
        }
      }
      if (depth > 0) end = html.length;
    }
    out += html.slice(copied, start);
    copied = end;
    HIDDEN.lastIndex = end;
  }
  return copied === 0 ? html : out + html.slice(copied);
}

/**
 * A plain-text alternative for an HTML body: block elements become line breaks, links keep their
 * URL (a link within the page, `#…`, only its label), a marked preheader and hidden elements are
 * left out.
 */
export function htmlToText(html: string): string {
  return withoutHidden(html.replace(PREHEADER, '').replace(/<(script|style|head|title)[\s\S]*?<\/\1>/gi, ''))
    .replace(
      /<a\s[^>]*href\s*=\s*["']([^"']+)["'][^>]*>([\s\S]*?)<\/a>/gi,
      (_m, href: string, label: string) => {
        const text = label.replace(/<[^>]+>/g, '').trim();
        if (href.startsWith('#')) return text;
        return text && text !== href ? `${text} (${href})` : href;
      },
    )
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|div|h[1-6]|li|tr|table|blockquote|section|article|header|footer)>/gi, '\n\n')
    .replace(/<li[^>]*>/gi, '- ')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#x?[0-9a-f]+|\w+);/gi, (m, entity: string) => {
      if (entity[0] === '#') {
        const code =
          entity[1].toLowerCase() === 'x' ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1));
        return Number.isFinite(code) ? String.fromCodePoint(code) : m;
      }
      return ENTITIES[entity.toLowerCase()] ?? m;
    })
    .replace(/[ \t]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
