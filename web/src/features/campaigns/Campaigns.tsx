import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { campaigns, campaignsQuery } from '../../api/campaigns.ts';
import { accountStatusQuery } from '../../api/endpoints.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Dialog, DialogFormActions } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

const STARTER_HTML =
  '<html><body><p>Hello {{ contact.first_name | default: "there" }},</p><p>Write your message here.</p></body></html>';

function NewCampaignDialog() {
  const { project } = useProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [subject, setSubject] = useState('');
  const me = useQuery(accountStatusQuery(project.id));
  const [from, setFrom] = useState<string | null>(null);
  const sender = from ?? me.data?.sending.default_from ?? '';
  const create = useMutation({
    // a draft needs content from the start: a line to replace in the builder
    mutationFn: () =>
      campaigns.create(project.id, {
        name: name.trim(),
        from: sender.trim(),
        subject: subject.trim(),
        html: STARTER_HTML,
        tracking: { opens: true, clicks: true },
      }),
    onSuccess: async (made) => {
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'campaigns'] });
      setOpen(false);
      navigate({ to: '/campaigns/$campaignId', params: { campaignId: made.id } });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <>
      <button type="button" className="btn primary" onClick={() => setOpen(true)}>
        New campaign
      </button>
      <Dialog open={open} onOpenChange={setOpen} title="New campaign">
        <form onSubmit={submit} aria-label="New campaign">
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
          <Field
            label="Subject"
            required
            maxLength={998}
            value={subject}
            onChange={(e) => setSubject(e.target.value)}
          />
          <ErrorMessage error={create.error} />
          <DialogFormActions label="Create draft" pendingLabel="Creating…" pending={create.isPending} />
        </form>
      </Dialog>
    </>
  );
}

/** Marketing sends to lists and segments: drafts, scheduled, sending and sent, with their key counts. */
export default function Campaigns() {
  const { project } = useProject();
  const list = useQuery({ ...campaignsQuery(project.id, 1), placeholderData: keepPreviousData });
  return (
    <>
      <PageHeader title="Campaigns">
        <NewCampaignDialog />
      </PageHeader>
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading campaigns…</p>
      ) : list.data && list.data.data.length === 0 ? (
        <p>No campaigns yet. A campaign sends one message to the contacts of lists and segments.</p>
      ) : (
        list.data && (
          <table className="table">
            <caption className="visually-hidden">Campaigns</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Recipients</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((c) => (
                <tr key={c.id}>
                  <th scope="row" data-label="Name">
                    <Link to="/campaigns/$campaignId" params={{ campaignId: c.id }}>
                      {c.name}
                    </Link>
                  </th>
                  <td data-label="Status">
                    <StatusBadge status={c.status} />
                  </td>
                  <td data-label="Recipients">
                    {c.recipient_count === null ? '—' : formatNumber(c.recipient_count)}
                  </td>
                  <td data-label="Created">{formatDate(c.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      )}
    </>
  );
}
