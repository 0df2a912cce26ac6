import type { Editor } from 'grapesjs';
import { useEffect, useRef, useState } from 'react';
import { errorText } from '../../api/client.ts';
import { addBlock, BlockOutline } from './BlockOutline.tsx';
import { mjmlOf, mountEditor } from './grapes-setup.ts';
import { altOf, listImages, uploadImage } from './images.ts';
import { keepWholeDocument } from './mjml-tree.ts';
import { showVariableChips } from './variable-chips.ts';
import './editor.css';

const CONTACT_FIELDS = ['contact.first_name', 'contact.last_name', 'contact.email'];

/** `{{ name }}`, with a default for a contact's first name as the starters greet. */
export function liquidOf(name: string): string {
  return name === 'contact.first_name' ? '{{ contact.first_name | default: "there" }}' : `{{ ${name} }}`;
}

function insertVariable(editor: Editor, text: string): boolean {
  const view = editor.getEditing()?.getView() as { activeRte?: { insertHTML?(v: string): void } } | undefined;
  const active = view?.activeRte;
  if (active?.insertHTML) {
    active.insertHTML(text);
    return true;
  }
  const selected = editor.getSelected();
  if (selected?.get('type') === 'mj-text') {
    selected.components().add({ type: 'textnode', content: ` ${text}` });
    return true;
  }
  return false;
}

/** Uploads an image: it becomes the selected image's picture, or a new image block. */
function ImageUpload({ editor, project }: { editor: Editor; project: string }) {
  const [said, setSaid] = useState('');
  return (
    <div className="actions">
      <label>
        Upload an image
        <input
          type="file"
          accept="image/png,image/jpeg,image/gif,image/webp"
          onChange={async (e) => {
            const file = e.target.files?.[0];
            e.target.value = '';
            if (!file) return;
            setSaid('Uploading…');
            try {
              const asset = await uploadImage(project, file);
              editor.AssetManager.add({ src: asset.url });
              const selected = editor.getSelected();
              if (selected?.get('type') === 'mj-image') {
                selected.set('src', asset.url);
                selected.addAttributes({ src: asset.url });
              } else addBlock(editor, `<mj-image src="${asset.url}" alt="${altOf(file)}" />`);
              setSaid(`Uploaded ${file.name}.`);
            } catch (err) {
              setSaid(errorText(err));
            }
          }}
        />
      </label>
      <span role="status" className="muted small">
        {said}
      </span>
    </div>
  );
}

function Toolbar({ editor, variables }: { editor: Editor; variables: string[] }) {
  const [device, setDevice] = useState<'Desktop' | 'Mobile portrait'>('Desktop');
  const [variable, setVariable] = useState(CONTACT_FIELDS[0]);
  const [said, setSaid] = useState('');
  const names = [...CONTACT_FIELDS, ...variables];
  return (
    <div className="visual-toolbar">
      <div className="actions">
        <button type="button" className="btn" onClick={() => editor.UndoManager.undo()}>
          Undo
        </button>
        <button type="button" className="btn" onClick={() => editor.UndoManager.redo()}>
          Redo
        </button>
      </div>
      <fieldset className="segmented">
        <legend className="visually-hidden">Canvas width</legend>
        {(['Desktop', 'Mobile portrait'] as const).map((d) => (
          <label key={d}>
            <input
              type="radio"
              name="visual-device"
              checked={device === d}
              onChange={() => {
                setDevice(d);
                editor.setDevice(d);
              }}
            />
            {d === 'Desktop' ? 'Desktop' : 'Phone'}
          </label>
        ))}
      </fieldset>
      <div className="actions">
        <label>
          Variable to insert
          <select value={variable} onChange={(e) => setVariable(e.target.value)}>
            {names.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          className="btn"
          onClick={() =>
            setSaid(
              insertVariable(editor, liquidOf(variable))
                ? `Inserted ${variable}.`
                : 'Select a text block first, then insert the variable.',
            )
          }
        >
          Insert variable
        </button>
        <span role="status" className="muted small">
          {said}
        </span>
      </div>
    </div>
  );
}

/**
 * The template as blocks (GrapesJS with its MJML plugin, see grapes-setup.ts): drag blocks from
 * the panel, or add and move them from the Blocks list; every change is written back as MJML.
 */
export default function VisualEditor({
  project,
  initial,
  variables,
  onChange,
  onCannotShow,
}: {
  project: string;
  initial: string;
  variables: string[];
  onChange(mjml: string): void;
  onCannotShow(): void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const [editor, setEditor] = useState<Editor | null>(null);
  const [raws, setRaws] = useState(0);
  const changed = useRef(onChange);
  changed.current = onChange;
  const cannot = useRef(onCannotShow);
  cannot.current = onCannotShow;

  // biome-ignore lint/correctness/useExhaustiveDependencies: the editor is made once; `initial` only seeds it
  useEffect(() => {
    const made = mountEditor({
      container: host.current as HTMLDivElement,
      mjml: initial,
      upload: async (file) => (await uploadImage(project, file)).url,
    });
    const kept = keepWholeDocument(made, initial);
    if (kept === null) {
      made.destroy();
      cannot.current();
      return;
    }
    setRaws(kept);
    made.UndoManager.clear();
    let last = mjmlOf(made);
    const update = () => {
      const now = mjmlOf(made);
      if (now === last) return;
      last = now;
      changed.current(now);
    };
    made.on('update', update);
    made.on('load', () => showVariableChips(made));
    made.on('component:update', () => showVariableChips(made));
    setEditor(made);
    listImages(project)
      .then((assets) => made.AssetManager.add(assets.map((a) => ({ src: a.url }))))
      .catch(() => {});
    return () => {
      made.off('update', update);
      made.destroy();
    };
  }, []);

  return (
    <div className="visual-editor">
      {editor && <Toolbar editor={editor} variables={variables} />}
      {editor && <ImageUpload editor={editor} project={project} />}
      {raws > 0 && (
        <p className="alert alert-info">
          {raws === 1 ? 'One part' : `${raws} parts`} of this template cannot be edited as blocks; they are
          kept as written, shown as raw MJML blocks.
        </p>
      )}
      <div className="visual-body">
        {editor && <BlockOutline editor={editor} />}
        <div className="visual-canvas" ref={host} />
      </div>
    </div>
  );
}
