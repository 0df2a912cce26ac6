import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { startersQuery, templates, templatesQuery } from '../../api/templates.ts';
import { DataTable } from '../../components/DataTable.tsx';
import { DialogButton } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDate } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

/** Name a new template and start it from a starter (or blank); opens its editor. */
function NewTemplateForm({ onCreated }: { onCreated(): void }) {
  const { project } = useProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const starters = useQuery(startersQuery(project.id));
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
      onCreated();
      navigate({ to: '/templates/$templateId', params: { templateId: made.id } });
    },
  });
  const chosen = starters.data?.data.find((s) => s.key === starter);
  return (
    <ActionForm
      label="New template"
      action={{ isPending: create.isPending, error: create.error ?? starters.error }}
      onSubmit={() => create.mutate()}
      submit="Create and edit"
      pendingLabel="Creating…"
      close
    >
      <Field label="Name" required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
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
    </ActionForm>
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
        <DialogButton label="New template" title="New template">
          {(close) => <NewTemplateForm onCreated={close} />}
        </DialogButton>
      </PageHeader>
      <p className="muted">
        Write once in MJML with Liquid variables; send it from your app (name the template when you send an
        email), from campaigns and from flows. Edits change the draft; sends use the latest published version.
      </p>
      <Loaded
        query={list}
        loading="Loading templates…"
        isEmpty={(data) => data.data.length === 0}
        empty={
          <p>No templates yet. Start one from a starter: welcome, receipt, password reset or newsletter.</p>
        }
      >
        {(data) => (
          <DataTable
            caption="Templates"
            rows={data.data}
            columns={[
              {
                label: 'Name',
                cell: (t) => (
                  <Link to="/templates/$templateId" params={{ templateId: t.id }}>
                    {t.name}
                  </Link>
                ),
              },
              { label: 'Subject', cell: (t) => t.subject, className: 'break' },
              {
                label: 'Published',
                cell: (t) =>
                  t.latest_version === null ? <StatusBadge status="draft" /> : `version ${t.latest_version}`,
              },
              { label: 'Edited', cell: (t) => formatDate(t.updated_at) },
            ]}
          />
        )}
      </Loaded>
    </>
  );
}
