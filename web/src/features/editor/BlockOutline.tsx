import type { Component, Editor } from 'grapesjs';
import { useEffect, useReducer, useState } from 'react';

/** The blocks a person adds, each as MJML (a new section for the column layouts). */
export const ADDABLE: { id: string; label: string; mjml: string }[] = [
  {
    id: 'one-column',
    label: 'Section, one column',
    mjml: '<mj-section><mj-column><mj-text>Your text</mj-text></mj-column></mj-section>',
  },
  {
    id: 'two-columns',
    label: 'Section, two columns',
    mjml: '<mj-section><mj-column><mj-text>Left column</mj-text></mj-column><mj-column><mj-text>Right column</mj-text></mj-column></mj-section>',
  },
  { id: 'text', label: 'Text', mjml: '<mj-text>Your text</mj-text>' },
  {
    id: 'image',
    label: 'Image',
    mjml: '<mj-image src="https://example.com/image.png" alt="Describe the image" width="600px" />',
  },
  { id: 'button', label: 'Button', mjml: '<mj-button href="https://example.com">Button text</mj-button>' },
  { id: 'divider', label: 'Divider', mjml: '<mj-divider border-width="1px" border-color="#e5e7eb" />' },
  { id: 'spacer', label: 'Spacer', mjml: '<mj-spacer height="24px" />' },
  {
    id: 'social',
    label: 'Social links',
    mjml: '<mj-social mode="horizontal"><mj-social-element name="facebook" href="https://example.com">Facebook</mj-social-element><mj-social-element name="x" href="https://example.com">X</mj-social-element></mj-social>',
  },
  { id: 'html', label: 'Raw HTML', mjml: '<mj-raw><p>Your HTML</p></mj-raw>' },
];

const LAYOUTS = new Set(['mj-section', 'mj-wrapper']);
const NAMES: Record<string, string> = {
  'mj-section': 'Section',
  'mj-wrapper': 'Wrapper',
  'mj-column': 'Column',
  'mj-text': 'Text',
  'mj-image': 'Image',
  'mj-button': 'Button',
  'mj-divider': 'Divider',
  'mj-spacer': 'Spacer',
  'mj-social': 'Social links',
  'mj-raw': 'Raw HTML',
  'mj-table': 'Table',
  'posthorn-mjml': 'Raw MJML',
};

function bodyOf(editor: Editor): Component | undefined {
  const root = editor
    .getWrapper()
    ?.components()
    .models.find((c) => c.get('type') === 'mjml');
  return root?.components().models.find((c) => c.get('type') === 'mj-body');
}

function describe(c: Component): string {
  const type = String(c.get('type'));
  const name = NAMES[type] ?? type.replace(/^mj-/, '');
  const text = (c.getEl()?.textContent ?? '').replace(/\s+/g, ' ').trim();
  return text && !LAYOUTS.has(type) && type !== 'mj-column' ? `${name}: ${text.slice(0, 40)}` : name;
}

/** Where a new block goes: into the selected column, after the selected block, else a new section. */
export function addBlock(editor: Editor, mjml: string) {
  const body = bodyOf(editor);
  if (!body) return;
  const isLayout = mjml.startsWith('<mj-section');
  const selected = editor.getSelected();
  const type = String(selected?.get('type') ?? '');
  let added: Component[] | Component;
  if (isLayout) {
    const at = selected && LAYOUTS.has(type) ? selected.index() + 1 : undefined;
    added = (selected && LAYOUTS.has(type) ? (selected.parent() ?? body) : body)
      .components()
      .add(mjml, { at });
  } else if (selected && type === 'mj-column') {
    added = selected.components().add(mjml);
  } else if (selected?.parent()?.get('type') === 'mj-column') {
    added =
      selected
        .parent()
        ?.components()
        .add(mjml, { at: selected.index() + 1 }) ?? [];
  } else {
    added = body.components().add(`<mj-section><mj-column>${mjml}</mj-column></mj-section>`);
  }
  const first = Array.isArray(added) ? added[0] : added;
  if (first) editor.select(first);
}

function move(c: Component, by: -1 | 1) {
  const parent = c.parent();
  if (!parent) return;
  const at = c.index() + by;
  if (at < 0 || at >= parent.components().length) return;
  parent.components().remove(c, { temporary: true } as never);
  parent.components().add(c, { at });
}

function Item({ editor, c }: { editor: Editor; c: Component }) {
  const kids = c.components().models.filter((k) => k.get('type') !== 'textnode');
  const container = LAYOUTS.has(String(c.get('type'))) || c.get('type') === 'mj-column';
  const label = describe(c);
  const siblings = c.parent()?.components().length ?? 1;
  return (
    <li>
      <span className="outline-row">
        <button
          type="button"
          className="link-button"
          aria-pressed={editor.getSelected() === c}
          onClick={() => editor.select(c)}
        >
          {label}
        </button>
        <button
          type="button"
          className="btn small"
          aria-label={`Move up: ${label}`}
          disabled={c.index() === 0}
          onClick={() => move(c, -1)}
        >
          Up
        </button>
        <button
          type="button"
          className="btn small"
          aria-label={`Move down: ${label}`}
          disabled={c.index() >= siblings - 1}
          onClick={() => move(c, 1)}
        >
          Down
        </button>
        <button
          type="button"
          className="btn small"
          aria-label={`Remove: ${label}`}
          onClick={() => c.remove()}
        >
          Remove
        </button>
      </span>
      {container && kids.length > 0 && (
        <ul>
          {kids.map((k) => (
            <Item key={k.cid} editor={editor} c={k} />
          ))}
        </ul>
      )}
    </li>
  );
}

/**
 * The document's blocks as a list a keyboard reaches: select one, move it up or down, remove it,
 * and add a block after the selected one (or into the selected column).
 */
export function BlockOutline({ editor }: { editor: Editor }) {
  const [, refresh] = useReducer((n: number) => n + 1, 0);
  const [kind, setKind] = useState(ADDABLE[0].id);
  useEffect(() => {
    const events = 'component:add component:remove component:update component:selected component:deselected';
    editor.on(events, refresh);
    return () => {
      editor.off(events, refresh);
    };
  }, [editor]);
  const body = bodyOf(editor);
  const blocks = body?.components().models.filter((k) => k.get('type') !== 'textnode') ?? [];
  return (
    <section className="block-outline" aria-labelledby="outline-heading">
      <h3 id="outline-heading">Blocks</h3>
      <div className="outline-add">
        <label>
          Block to add
          <select value={kind} onChange={(e) => setKind(e.target.value)}>
            {ADDABLE.map((a) => (
              <option key={a.id} value={a.id}>
                {a.label}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          className="btn"
          onClick={() => addBlock(editor, ADDABLE.find((a) => a.id === kind)?.mjml ?? '')}
        >
          Add block
        </button>
      </div>
      <p className="muted small">New blocks go after the selected one, or into the selected column.</p>
      <ul className="outline-tree">
        {blocks.map((c) => (
          <Item key={c.cid} editor={editor} c={c} />
        ))}
      </ul>
    </section>
  );
}
