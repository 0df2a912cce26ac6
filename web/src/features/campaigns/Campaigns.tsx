import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { campaigns, campaignsQuery } from '../../api/campaigns.ts';
import { accountStatusQuery } from '../../api/endpoints.ts';
import { templatesQuery } from '../../api/templates.ts';
import { DataTable } from '../../components/DataTable.tsx';
import { DialogButton } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';
import { ownSubject, useCampaignVersion } from './campaign-template.tsx';

const STARTER_HTML =
  '<html><body><p>Hello {{ contact.first_name | default: "there" }},</p><p>Write your message here.</p></body></html>';

function NewCampaignForm({ onCreated }: { onCreated(): void }) {
  const { project } = useProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  // null: the chosen template's subject, shown in the field until the person changes it
  const [subject, setSubject] = useState<string | null>('');
  const [templateId, setTemplateId] = useState('');
  const published = (useQuery(templatesQuery(project.id)).data?.data ?? []).filter(
    (t) => t.latest_version !== null,
  );
  const { version } = useCampaignVersion(templateId, null);
  const shown = subject ?? version?.subject ?? '';
  const me = useQuery(accountStatusQuery(project.id));
  const [from, setFrom] = useState<string | null>(null);
  const sender = from ?? me.data?.sending.default_from ?? '';
  const create = useMutation({
    // a draft needs content from the start: the template, or a line to replace in the builder
    mutationFn: () =>
      campaigns.create(project.id, {
        name: name.trim(),
        from: sender.trim(),
        subject: ownSubject(subject, templateId, version?.subject),
        ...(templateId ? { template_id: templateId } : { html: STARTER_HTML }),
        tracking: { opens: true, clicks: true },
      }),
    onSuccess: async (made) => {
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'campaigns'] });
      onCreated();
      navigate({ to: '/campaigns/$campaignId', params: { campaignId: made.id } });
    },
  });
  return (
    <ActionForm label="New campaign" action={create} submit="Create draft" pendingLabel="Creating…" close>
      <Field
        label="Name"
        hint="For you; recipients never see it."
        required
        maxLength={200}
        value={name}
        onChange={(e) => setName(e.target.value)}
      />
      <Field
        label="From"
        hint="An address on a verified domain, or the shared default."
        required
        value={sender}
        onChange={(e) => setFrom(e.target.value)}
      />
      <SelectField
        label="Content"
        value={templateId}
        // choosing a template fills the subject with the template's (editable)
        onChange={(id) => {
          setTemplateId(id);
          setSubject(id ? null : shown);
        }}
        options={[
          { value: '', label: 'HTML written in the builder' },
          ...published.map((t) => ({ value: t.id, label: `Template: ${t.name}` })),
        ]}
      />
      <Field
        label="Subject"
        hint={templateId ? "The template's subject unless you change it." : undefined}
        required={!templateId}
        maxLength={998}
        value={shown}
        onChange={(e) => setSubject(e.target.value)}
      />
    </ActionForm>
  );
}

/** Marketing sends to lists and segments: drafts, scheduled, sending and sent, with their key counts. */
export default function Campaigns() {
  const { project } = useProject();
  const list = useQuery({ ...campaignsQuery(project.id, 1), placeholderData: keepPreviousData });
  return (
    <>
      <PageHeader title="Campaigns">
        <DialogButton label="New campaign" title="New campaign">
          {(close) => <NewCampaignForm onCreated={close} />}
        </DialogButton>
      </PageHeader>
      <Loaded
        query={list}
        loading="Loading campaigns…"
        isEmpty={(data) => data.data.length === 0}
        empty={<p>No campaigns yet. A campaign sends one message to the contacts of lists and segments.</p>}
      >
        {(data) => (
          <DataTable
            caption="Campaigns"
            rows={data.data}
            columns={[
              {
                label: 'Name',
                cell: (c) => (
                  <Link to="/campaigns/$campaignId" params={{ campaignId: c.id }}>
                    {c.name}
                  </Link>
                ),
              },
              { label: 'Status', cell: (c) => <StatusBadge status={c.status} /> },
              {
                label: 'Recipients',
                cell: (c) => (c.recipient_count === null ? '—' : formatNumber(c.recipient_count)),
              },
              { label: 'Created', cell: (c) => formatDate(c.created_at) },
            ]}
          />
        )}
      </Loaded>
    </>
  );
}
