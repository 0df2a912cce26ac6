/**
 * The block editor's engine: GrapesJS with its MJML plugin (grapesjs-mjml), chosen over the
 * alternatives for the round trip and the size it costs only on this screen:
 * - GrapesJS + grapesjs-mjml (about 630 KB gzipped together, loaded only when the visual view
 *   opens) reads and writes MJML itself, so the stored form stays MJML with Liquid; with its XML
 *   parser on and the two fixes below, every starter comes back as the same MJML tree.
 * - Unlayer / EmailBuilder.js / react-email-editor keep a JSON design of their own and export HTML
 *   (Unlayer is also a hosted iframe): no MJML to go back to the code view, so no round trip.
 * - Easy Email (MJML under the hood) keeps a JSON block tree and writes MJML from it, dropping
 *   what it does not model (mj-attributes, mj-class, Liquid between table rows); its React 17-era
 *   packages weigh more and are less kept.
 * Loaded through a dynamic import from the visual view only, so the dashboard's first page does
 * not carry it.
 */
import grapesjs, { type Component, type Editor } from 'grapesjs';
import mjmlModule from 'grapesjs-mjml';
import 'grapesjs/dist/css/grapes.min.css';

// the package is UMD: bundled, its plugin is the module's `default`
const mjmlPlugin = ((mjmlModule as unknown as { default?: typeof mjmlModule }).default ??
  mjmlModule) as typeof mjmlModule;

/** A raw MJML block: the source is written back as it is and shown as a labelled box. */
export const RAW_MJML = 'posthorn-mjml';

const XML_ENTITIES: Record<string, string> = {
  '&lt;': '<',
  '&gt;': '>',
  '&amp;': '&',
  '&quot;': '"',
  '&#39;': "'",
};
const unescapeXml = (s: string) => s.replace(/&(?:lt|gt|amp|quot|#39);/g, (e) => XML_ENTITIES[e]);
const LIQUID = /\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/g;
const NAMED = /&(?!(?:lt|gt|amp|quot|apos);)([a-zA-Z][a-zA-Z0-9]*);/g;

/**
 * The MJML made readable as XML (the block editor's parser): `<`, `>` and `&` inside Liquid
 * (`{% if count > 1 %}`) and HTML's named entities (`&nbsp;`) are escaped, to come back as they
 * were through tidy().
 */
export function protect(mjml: string): string {
  return mjml
    .replace(LIQUID, (l) => l.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'))
    .replace(NAMED, '&amp;$1;');
}

/**
 * GrapesJS's MJML written as MJML and the starters do: `<br />` (GrapesJS writes `<br/>`), a bare
 * `&` in an address as `&amp;`, and Liquid, HTML entities and mj-style's CSS as they were written
 * (GrapesJS escapes `>` in text, which would break `{% if a > b %}` and `td > p`).
 */
export function tidy(mjml: string): string {
  return mjml
    .replace(/([^\s/])\/>/g, '$1 />')
    .replace(/&(?!(?:[a-zA-Z][a-zA-Z0-9]*|#\d+|#x[0-9a-fA-F]+);)/g, '&amp;')
    .replace(/&amp;(?!(?:lt|gt|amp|quot|apos);)([a-zA-Z][a-zA-Z0-9]*);/g, '&$1;')
    .replace(LIQUID, unescapeXml)
    .replace(
      /(<mj-style\b[^>]*>)([\s\S]*?)(<\/mj-style>)/g,
      (_, open, css, close) => open + unescapeXml(css) + close,
    );
}

/**
 * GrapesJS fills each MJML component's attributes with the plugin's defaults and leaves out, when
 * writing, every attribute equal to a default: an attribute the source spelt out (mj-body
 * width="600px", a button's color="#ffffff" in mj-attributes) was lost. Here an attribute the
 * source or the person set is always written; a default nobody set is not.
 */
function keepExplicitAttributes(editor: Editor) {
  for (const type of editor.Components.getTypes()) {
    if (!type.id.startsWith('mj-')) continue;
    const proto = type.model.prototype as any;
    if (proto.__posthorn) continue;
    proto.__posthorn = true;
    const init = proto.init;
    proto.init = function (this: Component) {
      (this as unknown as { explicit: Set<string> }).explicit = new Set(
        Object.keys(this.get('attributes') ?? {}),
      );
      init?.call(this);
      this.on('change:attributes', () => {
        const explicit = (this as unknown as { explicit: Set<string> }).explicit;
        const before = this.previous('attributes') ?? {};
        for (const [k, v] of Object.entries(this.get('attributes') ?? {}))
          if (before[k] !== v) explicit.add(k);
      });
    };
    proto.getAttrToHTML = function (this: Component) {
      const attrs: Record<string, unknown> = { ...this.get('attributes') };
      const defaults: Record<string, unknown> = this.get('style-default') ?? {};
      const explicit = (this as unknown as { explicit?: Set<string> }).explicit ?? new Set();
      delete attrs.style;
      delete attrs.id;
      for (const k of Object.keys(attrs))
        if (!explicit.has(k) && attrs[k] && attrs[k] === defaults[k]) delete attrs[k];
      return attrs;
    };
    // the canvas draws a block with the same attributes, so mj-attributes and mj-class apply there
    proto.getMjmlAttributes = function (this: Component) {
      const attrs = proto.getAttrToHTML.call(this);
      const src = this.get('src');
      if (src) attrs.src = src;
      return attrs;
    };
  }
}

// the document's mj-head, so the canvas draws each block with its mj-attributes, mj-class and fonts
let canvasHead = '';

/**
 * grapesjs-mjml draws each block by compiling it alone (`<mjml><mj-body>…`), without the document's
 * mj-head: the starters' type scale, colours and dividers would show as MJML's defaults. Here the
 * head goes into each of those compilations (the stored MJML is not touched).
 */
function drawWithHead(editor: Editor) {
  for (const type of editor.Components.getTypes()) {
    const proto = type.view?.prototype as any;
    if (!type.id.startsWith('mj-') || !proto?.getMjmlTemplate || proto.__posthornHead) continue;
    proto.__posthornHead = true;
    const template = proto.getMjmlTemplate;
    proto.getMjmlTemplate = function (this: unknown) {
      const t = template.call(this) as { start: string; end: string };
      if (!canvasHead || !t?.start?.startsWith('<mjml>') || t.start.includes('<mj-head')) return t;
      return { ...t, start: `<mjml>${canvasHead}${t.start.slice('<mjml>'.length)}` };
    };
  }
}

function rawMjmlType(editor: Editor) {
  editor.Components.addType(RAW_MJML, {
    model: {
      defaults: {
        tagName: 'div',
        name: 'Raw MJML',
        droppable: false,
        editable: false,
        source: '<mj-raw><!-- your HTML --></mj-raw>',
        traits: [{ type: 'textarea-source', name: 'source', label: 'MJML', changeProp: true }],
      },
      toHTML() {
        return String(this.get('source') ?? '');
      },
    },
    view: {
      onRender() {
        this.el.className = 'posthorn-raw';
        this.el.setAttribute(
          'style',
          'padding:12px;margin:4px;border:1px dashed #6b7280;background:#f9fafb;color:#111827;font:13px/1.4 monospace;white-space:pre-wrap;',
        );
        this.el.textContent = `MJML kept as written (edit it in the code view or the properties):\n${this.model.get('source')}`;
      },
    },
  });
  editor.TraitManager.addType('textarea-source', {
    createInput({ trait }) {
      const el = document.createElement('textarea');
      el.rows = 8;
      el.setAttribute('aria-label', String(trait.get('label') ?? 'MJML'));
      el.style.width = '100%';
      return el;
    },
    onEvent({ elInput, component }) {
      component.set('source', (elInput as unknown as HTMLTextAreaElement).value);
      component.view?.render();
    },
    onUpdate({ elInput, component }) {
      (elInput as unknown as HTMLTextAreaElement).value = String(component.get('source') ?? '');
    },
  });
  editor.Blocks.add('raw-mjml', {
    label: 'Raw MJML',
    category: 'Advanced',
    content: { type: RAW_MJML },
  });
}

/** Lists and headings in the rich text toolbar, beside GrapesJS's bold, italic and link. */
function richText(editor: Editor) {
  const rte = editor.RichTextEditor;
  const actions: [string, string, string, (r: { exec(c: string, v?: string): void }) => void][] = [
    ['ul', '•', 'Bulleted list', (r) => r.exec('insertUnorderedList')],
    ['ol', '1.', 'Numbered list', (r) => r.exec('insertOrderedList')],
    ['h2', 'H', 'Heading', (r) => r.exec('formatBlock', '<h2>')],
  ];
  for (const [name, icon, title, result] of actions)
    rte.add(name, { icon: `<b>${icon}</b>`, attributes: { title, 'aria-label': title }, result });
}

export interface MountOptions {
  container: HTMLElement;
  mjml: string;
  /** Stores an image (the assets API) and answers the address it is served at. */
  upload(file: File): Promise<string>;
}

// GrapesJS's panel buttons are icon-font glyphs (from a CDN, not loaded here): words instead
const BUTTON_WORDS: Record<string, string> = {
  'sw-visibility': 'Outlines',
  preview: 'Preview',
  fullscreen: 'Full screen',
  'export-template': 'Export',
  'open-sm': 'Style',
  'open-tm': 'Settings',
  'open-layers': 'Layers',
  'open-blocks': 'Blocks',
  'mjml-import': 'Import',
  undo: 'Undo',
  redo: 'Redo',
};

function wordButtons(editor: Editor) {
  for (const panel of editor.Panels.getPanels().models)
    for (const button of [...(panel.get('buttons')?.models ?? [])]) {
      const words =
        BUTTON_WORDS[String(button.id)] ?? String(button.get('attributes')?.title || button.id || '');
      // a button with neither name nor title says nothing to anyone: it goes
      if (!words) {
        panel.get('buttons')?.remove(button);
        continue;
      }
      if (!button.get('label')) button.set({ label: words, className: 'posthorn-word' });
      button.set('attributes', {
        ...button.get('attributes'),
        title: words,
        'aria-label': words,
        role: 'button',
      });
    }
}

/** Makes the editor in `container` with `mjml` loaded. */
export function mountEditor({ container, mjml, upload }: MountOptions): Editor {
  const editor: Editor = grapesjs.init({
    container,
    height: '100%',
    fromElement: false,
    storageManager: false,
    // GrapesJS reports usage to its makers by default: nothing leaves the dashboard
    telemetry: false,
    // no icon font from a CDN: the dashboard loads nothing from elsewhere
    cssIcons: '',
    avoidInlineStyle: false,
    // the head (mj-attributes' defaults are mj-button, mj-text… elements too) is not drawn as blocks
    canvasCss: 'mj-head { display: none !important; }',
    undoManager: { trackSelection: false },
    // images dropped on the asset manager go to the project's media library, served by Posthorn
    assetManager: {
      upload: false,
      uploadFile: async (event: DragEvent | Event) => {
        const list =
          (event as DragEvent).dataTransfer?.files ?? (event.target as HTMLInputElement | null)?.files;
        for (const file of [...(list ?? [])]) editor.AssetManager.add({ src: await upload(file) });
      },
    },
    plugins: [
      (e: Editor) =>
        mjmlPlugin(e, {
          useXmlParser: true,
          resetDevices: true,
          hideSelector: true,
          imagePlaceholderSrc: '',
          fonts: {},
          useCustomTheme: false,
        }),
      keepExplicitAttributes,
      rawMjmlType,
      richText,
    ],
  });
  keepExplicitAttributes(editor);
  drawWithHead(editor);
  canvasHead = /<mj-head\b[\s\S]*?<\/mj-head>/.exec(protect(mjml))?.[0] ?? '';
  wordButtons(editor);
  const titleFrame = () => editor.Canvas.getFrameEl()?.setAttribute('title', 'The email, as blocks');
  titleFrame();
  editor.on('load canvas:frame:load', titleFrame);
  editor.setComponents(protect(mjml));
  editor.UndoManager.clear();
  return editor;
}

/** The document as MJML, as it would be stored. */
export function mjmlOf(editor: Editor): string {
  return tidy(editor.getHtml());
}
