import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { accountStatusQuery, emails, type SendEmail } from '../../api/endpoints.ts';
import { type Template, templatesQuery } from '../../api/templates.ts';
import { inPeoplesWords } from '../../api/words.ts';
import { Notice } from '../../components/Alert.tsx';
import { Field, SelectField, TextAreaField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { useProject } from '../../project.tsx';

type Content = 'text' | 'html' | 'template';
type Value = string | number | boolean;

const CONTENTS: { value: Content; label: string }[] = [
  { value: 'text', label: 'Plain text' },
  { value: 'html', label: 'HTML' },
  { value: 'template', label: 'A published template' },
];

/** A variable as typed, in its declared type where the text is one (the API names what is wrong). */
function typed(type: Template['variables'][number]['type'], text: string): Value {
  if (type === 'number' && Number.isFinite(Number(text))) return Number(text);
  if (type === 'boolean' && (text === 'true' || text === 'false')) return text === 'true';
  return text;
}

function TemplateFields({
  published,
  templateId,
  setTemplateId,
  values,
  setValues,
}: {
  published: Template[];
  templateId: string;
  setTemplateId(id: string): void;
  values: Record<string, string>;
  setValues(values: Record<string, string>): void;
}) {
  const template = published.find((t) => t.id === templateId);
  if (published.length === 0)
    return <Notice>No template is published yet: publish one in Templates, or write the email here.</Notice>;
  return (
    <>
      <SelectField
        label="Template"
        value={templateId}
        onChange={(id) => {
          setTemplateId(id);
          setValues({});
        }}
        options={published.map((t) => ({ value: t.id, label: `${t.name} (version ${t.latest_version})` }))}
      />
      {template?.variables.map((v) => (
        <Field
          key={v.name}
          label={v.name}
          required={v.default === undefined}
          placeholder={v.default === undefined ? v.type : String(v.default)}
          hint={v.default === undefined ? `Required (a ${v.type}).` : 'Empty: the default.'}
          value={values[v.name] ?? ''}
          onChange={(e) => setValues({ ...values, [v.name]: e.target.value })}
        />
      ))}
    </>
  );
}

/**
 * "Send a test email": one message through POST /v1/emails, as any client sends it, from an
 * address the project may use (the shared domain's until one is verified), written here or from a
 * published template. The answer links to the new email's page.
 */
export function TestEmailForm() {
  const { project, session } = useProject();
  const queryClient = useQueryClient();
  const status = useQuery(accountStatusQuery(project.id));
  const templates = useQuery(templatesQuery(project.id));
  const published = (templates.data?.data ?? []).filter((t) => t.latest_version !== null);
  const [from, setFrom] = useState<string | null>(null);
  const [to, setTo] = useState(session.account.email);
  const [content, setContent] = useState<Content>('text');
  const [subject, setSubject] = useState('A test from Posthorn');
  const [body, setBody] = useState('Hello! This is a test email.');
  const [templateId, setTemplateId] = useState<string | null>(null);
  const [values, setValues] = useState<Record<string, string>>({});
  const chosen = published.find((t) => t.id === templateId) ?? published[0];

  const message = (): SendEmail => {
    const base = { from: (from ?? status.data?.sending.default_from ?? '').trim(), to: to.trim() };
    if (content !== 'template') return { ...base, subject, [content]: body };
    const variables: Record<string, Value> = {};
    for (const v of chosen?.variables ?? [])
      if ((values[v.name] ?? '') !== '') variables[v.name] = typed(v.type, values[v.name]);
    return { ...base, template: { id: chosen?.id ?? '', variables } };
  };
  const send = useMutation({
    mutationFn: () => emails.send(project.id, message()),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['project', project.id, 'emails'] }),
  });
  return (
    <ActionForm
      label="Send a test email"
      action={send}
      onSubmit={() => send.mutate()}
      submit="Send"
      pendingLabel="Sending…"
      close="Close"
      note={
        send.data && (
          <Notice tone="success">
            Accepted ({send.data.status}).{' '}
            <Link to="/emails/$emailId" params={{ emailId: send.data.id }}>
              Open the email
            </Link>
          </Notice>
        )
      }
    >
      <Field
        label="From"
        required
        hint={status.data ? inPeoplesWords(status.data.sending.note) : undefined}
        value={from ?? status.data?.sending.default_from ?? ''}
        // The default arrives with the account's status: until then the field is read-only, so
        // nothing typed is joined to a default filled in under the cursor.
        readOnly={from === null && status.isPending}
        placeholder={status.isPending ? 'Loading the address you may send from…' : undefined}
        onChange={(e) => setFrom(e.target.value)}
      />
      <Field
        label="To"
        required
        hint="Any address. Addresses at simulator.posthorn.test (delivered@, bounced@, complained@) never leave this server."
        value={to}
        onChange={(e) => setTo(e.target.value)}
      />
      <SelectField label="Content" value={content} onChange={setContent} options={CONTENTS} />
      {content === 'template' ? (
        <TemplateFields
          published={published}
          templateId={chosen?.id ?? ''}
          setTemplateId={setTemplateId}
          values={values}
          setValues={setValues}
        />
      ) : (
        <>
          <Field
            label="Subject"
            required
            maxLength={998}
            value={subject}
            onChange={(e) => setSubject(e.target.value)}
          />
          <TextAreaField
            label={content === 'html' ? 'HTML' : 'Text'}
            required
            rows={6}
            value={body}
            onChange={(e) => setBody(e.target.value)}
          />
        </>
      )}
    </ActionForm>
  );
}
