import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { lazy, Suspense, useEffect, useRef, useState } from 'react';
import { errorText } from '../../api/client.ts';
import {
  errorLine,
  type Template,
  type TemplatePreview,
  templateQuery,
  templates,
  templatesQuery,
  versionsQuery,
} from '../../api/templates.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { formatDate } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { TestSend } from '../../components/TestSend.tsx';
import { useProject } from '../../project.tsx';
import { MjmlCode, type SourceError } from './template-code.tsx';
import { type VariableError, VariablesTable } from './VariablesTable.tsx';
import {
  declarationOf,
  previewValues,
  rowsOf,
  type Value,
  type VariableRow,
  variableAt,
} from './variable-rows.ts';
import './templates.css';
import { TemplateAdvice } from '../../components/ContentAdvice.tsx';

// the block editor (GrapesJS, about 630 KB gzipped) loads only when the visual view opens
const VisualEditor = lazy(() => import('../editor/VisualEditor.tsx'));
const route = getRouteApi('/app/templates/$templateId');
const VIEW_KEY = 'posthorn.template-view';
const SAVE_AFTER_MS = 600;
const WIDTHS = { phone: 390, desktop: 700 } as const;

type SaveState =
  | { kind: 'saved' }
  | { kind: 'saving' }
  | { kind: 'error'; error: SourceError | null; variable: VariableError | null; message: string };

/** What the editor saves: the fields edited since the last save that worked. */
type Patch = { mjml?: string; subject?: string; variables?: ReturnType<typeof declarationOf>['variables'] };

function PreviewPane({
  template,
  revision,
  variables,
}: {
  template: Template;
  revision: number;
  variables: Record<string, Value>;
}) {
  const { project } = useProject();
  const templateId = template.id;
  const [width, setWidth] = useState<keyof typeof WIDTHS>('desktop');
  const [contact, setContact] = useState('');
  const preview = useQuery({
    queryKey: ['project', project.id, 'template', templateId, 'preview', revision, variables, contact],
    queryFn: () =>
      templates.preview(project.id, templateId, {
        variables,
        ...(contact.trim() ? { contact: contact.trim() } : {}),
      }),
    placeholderData: (previous: TemplatePreview | undefined) => previous,
  });
  return (
    <section className="template-preview" aria-labelledby="preview-heading">
      <div className="preview-bar">
        <h2 id="preview-heading">Preview</h2>
        <fieldset className="segmented">
          <legend className="visually-hidden">Preview width</legend>
          {(Object.keys(WIDTHS) as (keyof typeof WIDTHS)[]).map((w) => (
            <label key={w}>
              <input type="radio" name="width" value={w} checked={width === w} onChange={() => setWidth(w)} />
              {w === 'phone' ? 'Phone' : 'Desktop'}
            </label>
          ))}
        </fieldset>
      </div>
      {preview.data && (
        <p className="preview-subject">
          <span className="muted">Subject:</span> {preview.data.subject}
        </p>
      )}
      <ErrorMessage error={preview.error} />
      <div className="preview-frame" style={{ maxWidth: WIDTHS[width] }}>
        <iframe title="Preview" sandbox="" srcDoc={preview.data?.html ?? ''} />
      </div>
      <details className="preview-data">
        <summary>Preview as a contact</summary>
        <Field
          label="As a contact"
          type="email"
          placeholder="someone@example.com"
          hint="Personalise with a contact of this project ({{ contact.first_name }}, ...)."
          value={contact}
          onChange={(e) => setContact(e.target.value)}
        />
      </details>
      <TestSend
        hint="It sends the draft with the preview values, with [Test] in the subject."
        send={(to) =>
          templates.test(project.id, templateId, {
            to,
            variables,
            ...(contact.trim() ? { contact: contact.trim() } : {}),
          })
        }
      />
    </section>
  );
}

function Versions({ template }: { template: Template }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const versions = useQuery(versionsQuery(project.id, template.id));
  const publish = useMutation({
    mutationFn: () => templates.publish(project.id, template.id),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: versionsQuery(project.id, template.id).queryKey });
      await queryClient.invalidateQueries({ queryKey: templatesQuery(project.id).queryKey });
    },
  });
  return (
    <section aria-labelledby="versions-heading" className="template-versions">
      <h2 id="versions-heading">Versions</h2>
      <p className="muted small">Sends use the latest published version; publishing copies the draft.</p>
      <div className="actions">
        <button
          type="button"
          className="btn primary"
          onClick={() => publish.mutate()}
          disabled={publish.isPending}
        >
          {publish.isPending ? 'Publishing…' : 'Publish the draft'}
        </button>
      </div>
      <ErrorMessage error={publish.error ?? versions.error} />
      {versions.data && versions.data.data.length > 0 ? (
        <ul className="plain-list">
          {versions.data.data.map((v) => (
            <li key={v.version}>
              <strong>Version {v.version}</strong> · {formatDate(v.published_at)} · {v.subject}
            </li>
          ))}
        </ul>
      ) : (
        <p>Not published yet.</p>
      )}
    </section>
  );
}

/** Visual (blocks) or code (MJML): both edit the same document. */
function ViewSwitch({ view, onView }: { view: 'code' | 'visual'; onView(v: 'code' | 'visual'): void }) {
  return (
    <fieldset className="segmented view-switch">
      <legend className="visually-hidden">Edit as</legend>
      {(['visual', 'code'] as const).map((v) => (
        <label key={v}>
          <input
            type="radio"
            name="template-view"
            value={v}
            checked={view === v}
            onChange={() => onView(v)}
          />
          {v === 'visual' ? 'Visual' : 'Code'}
        </label>
      ))}
    </fieldset>
  );
}

function Editor({ template }: { template: Template }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [subject, setSubject] = useState(template.subject);
  const [state, setState] = useState<SaveState>({ kind: 'saved' });
  const [revision, setRevision] = useState(0);
  const [rows, setRows] = useState<VariableRow[]>(() => rowsOf(template.variables));
  // the view last chosen in this browser; until then the blocks for an MJML template (every starter
  // opens as blocks), the code for an HTML one
  const [view, setView] = useState<'code' | 'visual'>(() => {
    const chosen = localStorage.getItem(VIEW_KEY);
    if (chosen === 'visual' || chosen === 'code') return chosen;
    return template.mjml ? 'visual' : 'code';
  });
  const [cannotShow, setCannotShow] = useState(false);
  // the document as last edited in either view: the other view opens on it
  const source = useRef(template.mjml ?? '');
  const pending = useRef<Patch>({});
  // the rows of the variables last sent, by position, to find the one an error names
  const sentKeys = useRef<number[]>([]);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const save = async () => {
    const body = pending.current;
    const keys = sentKeys.current;
    pending.current = {};
    try {
      await templates.update(project.id, template.id, body);
      setState({ kind: 'saved' });
      setRevision((r) => r + 1);
      queryClient.invalidateQueries({ queryKey: templatesQuery(project.id).queryKey });
    } catch (err) {
      // what failed is sent again with the next edit (a variable declared after the MJML using it)
      pending.current = { ...body, ...pending.current };
      // the API's words name the line or the variable at fault; the person reads the dashboard's
      const said = err instanceof Error ? err.message : '';
      const message = errorText(err);
      const line = body.mjml !== undefined ? errorLine(said) : null;
      const at = body.variables !== undefined ? variableAt(said, keys) : null;
      setState({
        kind: 'error',
        message,
        error: line ? { line, message } : null,
        variable: at ? { ...at, message } : null,
      });
    }
  };
  const change = (patch: Patch) => {
    if (patch.mjml !== undefined) source.current = patch.mjml;
    pending.current = { ...pending.current, ...patch };
    setState({ kind: 'saving' });
    clearTimeout(timer.current);
    timer.current = setTimeout(save, SAVE_AFTER_MS);
  };
  const changeRows = (next: VariableRow[]) => {
    setRows(next);
    const before = declarationOf(rows);
    const after = declarationOf(next);
    sentKeys.current = after.keys;
    // a preview value alone is not saved
    if (JSON.stringify(after.variables) !== JSON.stringify(before.variables))
      change({ variables: after.variables });
  };
  useEffect(() => () => clearTimeout(timer.current), []);

  return (
    <div className={view === 'visual' ? 'template-editor visual' : 'template-editor'}>
      <section className="template-source" aria-labelledby="source-heading">
        <h2 id="source-heading">MJML</h2>
        <Field
          label="Subject"
          value={subject}
          maxLength={998}
          onChange={(e) => {
            setSubject(e.target.value);
            change({ subject: e.target.value });
          }}
        />
        <p className="save-state" role="status">
          {state.kind === 'saving' ? 'Saving…' : state.kind === 'saved' ? 'Draft saved' : 'Not saved'}
        </p>
        {state.kind === 'error' && !state.variable && (
          <p className="alert alert-error" role="alert">
            {state.error ? `Line ${state.error.line}: ` : ''}
            {state.message}
          </p>
        )}
        <ViewSwitch
          view={view}
          onView={(v) => {
            setCannotShow(false);
            setView(v);
            localStorage.setItem(VIEW_KEY, v);
          }}
        />
        {cannotShow && (
          <p className="alert alert-error" role="alert">
            This MJML cannot be shown as blocks (it is not well-formed XML, or has no mjml root): it stays in
            the code view.
          </p>
        )}
        {view === 'code' ? (
          <MjmlCode
            initial={source.current}
            label="MJML source"
            error={state.kind === 'error' ? state.error : null}
            onChange={(mjml) => change({ mjml })}
          />
        ) : (
          <Suspense fallback={<p role="status">Loading the visual editor…</p>}>
            <VisualEditor
              project={project.id}
              initial={source.current}
              variables={rows.map((r) => r.name).filter(Boolean)}
              onChange={(mjml) => change({ mjml })}
              onCannotShow={() => {
                setCannotShow(true);
                setView('code');
              }}
            />
          </Suspense>
        )}
      </section>
      <PreviewPane template={template} revision={revision} variables={previewValues(rows)} />
      <section aria-label="Advice on the message" className="template-advice">
        <TemplateAdvice project={project.id} templateId={template.id} savedAt={String(revision)} />
      </section>
      <VariablesTable
        rows={rows}
        onChange={changeRows}
        error={state.kind === 'error' ? state.variable : null}
      />
      <Versions template={template} />
    </div>
  );
}

/** One template: its MJML in a code editor, a live preview at phone and desktop widths, versions. */
export default function TemplateEditor() {
  const { project } = useProject();
  const { templateId } = route.useParams();
  const template = useQuery({
    ...templateQuery(project.id, templateId),
    staleTime: Number.POSITIVE_INFINITY,
  });
  return (
    <>
      <PageHeader title={template.data?.name ?? 'Template'} />
      <p>
        <Link to="/templates">All templates</Link>
      </p>
      <Loaded query={template} loading="Loading the template…">
        {(t) =>
          t.mjml === null ? (
            <Notice>
              This template is written in HTML, so it cannot be edited here: change it from your app through
              the API, or create a new template here to write it in the editor.
            </Notice>
          ) : (
            <Editor template={t} />
          )
        }
      </Loaded>
    </>
  );
}
