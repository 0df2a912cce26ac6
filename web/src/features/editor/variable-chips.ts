import type { Editor } from 'grapesjs';

const NAME = 'posthorn-variable';
const STYLE = `::highlight(${NAME}) { background-color: #dbeafe; color: #1e3a8a; }`;
const LIQUID = /\{\{[^}]*\}\}|\{%[^%]*%\}/g;

/**
 * Shows the template's Liquid (`{{ contact.first_name }}`, `{% if %}`) as chips in the canvas,
 * with the CSS Custom Highlight API: the text itself, and so the MJML, is left as it is.
 */
export function showVariableChips(editor: Editor) {
  const doc = editor.Canvas.getDocument();
  const win = editor.Canvas.getWindow() as
    | (Window & { Highlight?: typeof Highlight; CSS?: typeof CSS })
    | null;
  if (!doc?.body || !win?.Highlight || !win.CSS?.highlights) return;
  if (!doc.getElementById(NAME)) {
    const style = doc.createElement('style');
    style.id = NAME;
    style.textContent = STYLE;
    doc.head.append(style);
  }
  const ranges: Range[] = [];
  const walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of (node.textContent ?? '').matchAll(LIQUID)) {
      const range = doc.createRange();
      range.setStart(node, m.index ?? 0);
      range.setEnd(node, (m.index ?? 0) + m[0].length);
      ranges.push(range);
    }
  }
  win.CSS.highlights.set(NAME, new win.Highlight(...ranges));
}
