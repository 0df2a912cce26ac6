import { ValidationError } from '../core/errors.ts';

// MJML keeps only elements between the children of its layout elements: a Liquid tag there (an
// `{% if %}` around a section) would be dropped by the compile and the section sent to everyone.
// Wrapped in <mj-raw>, the tag stays where it was written, around the section's HTML.
const WRAPPABLE = new Set(['mj-body', 'mj-wrapper', 'mj-section', 'mj-group', 'mj-column', 'mj-hero']);

// elements whose content MJML takes as it is (HTML and Liquid alike)
const CONTENT = new Set([
  'mj-text',
  'mj-button',
  'mj-table',
  'mj-raw',
  'mj-navbar-link',
  'mj-accordion-title',
  'mj-accordion-text',
  'mj-social-element',
  'mj-style',
  'mj-title',
  'mj-preview',
]);

const PIECES = /<!--[\s\S]*?-->|<(\/?)(mj-[a-z-]+|mjml)\b[^>]*?(\/?)>|\{%-?[\s\S]*?-?%\}/g;

const lineAt = (source: string, index: number) => source.slice(0, index).split('\n').length;

/**
 * The MJML source with each Liquid tag that stands between layout elements (mj-body, mj-wrapper,
 * mj-section, mj-group, mj-column, mj-hero) wrapped in <mj-raw>, so control flow around sections and
 * columns survives the compile; a Liquid tag where MJML cannot keep it (between the children of
 * mj-head, mj-navbar, mj-social, …) is a 400 saying where to put it.
 */
export function keepLiquidTags(source: string): string {
  if (!source.includes('{%')) return source;
  const open: string[] = [];
  let out = '';
  let copied = 0;
  PIECES.lastIndex = 0;
  for (let m = PIECES.exec(source); m; m = PIECES.exec(source)) {
    const [piece, closing, name, selfClosing] = m;
    if (piece.startsWith('<!--')) continue;
    if (name) {
      if (closing) {
        const at = open.lastIndexOf(name);
        if (at >= 0) open.length = at;
      } else if (!selfClosing) {
        if (CONTENT.has(name)) {
          // its content is MJML's to keep: go on after its end
          const end = source.indexOf(`</${name}`, PIECES.lastIndex);
          if (end < 0) break;
          PIECES.lastIndex = end;
        } else open.push(name);
      }
      continue;
    }
    const parent = open.at(-1);
    if (parent === undefined) continue;
    if (!WRAPPABLE.has(parent))
      throw new ValidationError(
        `\`mjml\` line ${lineAt(source, m.index)}: a Liquid tag directly inside <${parent}> would be dropped by the MJML compile: put it inside an <mj-text> (or <mj-raw>), or around a whole <mj-section> or <mj-column>`,
      );
    out += `${source.slice(copied, m.index)}<mj-raw>${piece}</mj-raw>`;
    copied = m.index + piece.length;
  }
  return out + source.slice(copied);
}
