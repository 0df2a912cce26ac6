import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { startersQuery, templates, templatesQuery } from '../../api/templates.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Dialog, DialogFormActions } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { formatDate } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

/** Name a new template and start it from a starter (or blank); opens its editor. */
function NewTemplateDialog() {
  const { project } = useProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const starters = useQuery(startersQuery(project.id));
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [starter, setStarter] = useState('welcome');
  const create = useMutation({
    mutationFn: () =>
      templates.create(
        project.id,
        starter
          ? { name: name.trim(), starter }
          : {
              name: name.trim(),
              subject: 'Hello {{ contact.first_name | default: "there" }}',
              mjml: BLANK_MJML,
            },
      ),
    onSuccess: async (made) => {
      await queryClient.invalidateQueries({ queryKey: templatesQuery(project.id).queryKey });
      setOpen(false);
      navigate({ to: '/templates/$templateId', params: { templateId: made.id } });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const chosen = starters.data?.data.find((s) => s.key === starter);
  return (
    <>
      <button type="button" className="btn primary" onClick={() => setOpen(true)}>
        New template
      </button>
      <Dialog open={open} onOpenChange={setOpen} title="New template">
        <form onSubmit={submit} aria-label="New template">
          <Field
            label="Name"
            required
            maxLength={200}
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <SelectField
            label="Start from"
            value={starter}
            onChange={setStarter}
            options={[
              ...(starters.data?.data ?? []).map((s) => ({ value: s.key, label: `${s.name} (starter)` })),
              { value: '', label: 'A blank page' },
            ]}
          />
          {chosen && <p className="muted small">{chosen.description}</p>}
          <ErrorMessage error={create.error ?? starters.error} />
          <DialogFormActions label="Create and edit" pendingLabel="Creating…" pending={create.isPending} />
        </form>
      </Dialog>
    </>
  );
}

const BLANK_MJML = `<mjml>
  <mj-body>
    <mj-section>
      <mj-column>
        <mj-text>Hello {{ contact.first_name | default: "there" }},</mj-text>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>
`;

/** The project's email templates: MJML with Liquid, a draft and published versions each. */
export default function Templates() {
  const { project } = useProject();
  const list = useQuery(templatesQuery(project.id));
  return (
    <>
      <PageHeader title="Templates">
        <NewTemplateDialog />
      </PageHeader>
      <p className="muted">
        Write once in MJML with Liquid variables; send with <code>template</code> on{' '}
        <code>POST /v1/emails</code>, from campaigns and from flows. Edits change the draft; sends use the
        latest published version.
      </p>
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading templates…</p>
      ) : list.data && list.data.data.length === 0 ? (
        <p>No templates yet. Start one from a starter: welcome, receipt, password reset or newsletter.</p>
      ) : (
        list.data && (
          <table className="table">
            <caption className="visually-hidden">Templates</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Subject</th>
                <th scope="col">Published</th>
                <th scope="col">Edited</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((t) => (
                <tr key={t.id}>
                  <th scope="row" data-label="Name">
                    <Link to="/templates/$templateId" params={{ templateId: t.id }}>
                      {t.name}
                    </Link>
                  </th>
                  <td data-label="Subject" className="break">
                    {t.subject}
                  </td>
                  <td data-label="Published">
                    {t.latest_version === null ? (
                      <StatusBadge status="draft" />
                    ) : (
                      `version ${t.latest_version}`
                    )}
                  </td>
                  <td data-label="Edited">{formatDate(t.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      )}
    </>
  );
}
