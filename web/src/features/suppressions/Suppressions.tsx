import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import {
  SUPPRESSION_REASONS,
  SUPPRESSIONS_PER_PAGE,
  type Suppression,
  type SuppressionReason,
  suppressions,
  suppressionsQuery,
} from '../../api/sending.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { PagedTable, paging } from '../../components/DataTable.tsx';
import { ConfirmButton } from '../../components/Dialog.tsx';
import { Field, SelectField, SubmitButton } from '../../components/Field.tsx';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';

const REASON_LABEL: Record<SuppressionReason, string> = {
  hard_bounce: 'hard bounce',
  complaint: 'complaint',
  unsubscribe: 'unsubscribed',
  manual: 'added by hand',
};

/** Every query of this screen, for refreshing after a change. */
const allSuppressions = (projectId: string) => ['project', projectId, 'suppressions'];

function AddForm() {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [reason, setReason] = useState<'manual' | 'unsubscribe'>('manual');
  const add = useMutation({
    mutationFn: () => suppressions.add(project.id, { email: email.trim(), reason }),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: allSuppressions(project.id) });
      setEmail('');
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="Suppress an address">
      <Field
        label="Email address"
        name="email"
        type="email"
        required
        maxLength={254}
        autoComplete="off"
        value={email}
        onChange={(e) => setEmail(e.target.value)}
      />
      <SelectField
        label="Blocks"
        name="reason"
        value={reason}
        onChange={setReason}
        options={[
          { value: 'manual', label: 'Every stream' },
          { value: 'unsubscribe', label: 'Marketing and automation only' },
        ]}
      />
      <SubmitButton label="Suppress" pendingLabel="Adding…" pending={add.isPending} />
      <div className="filters-message">
        {add.isSuccess && <Notice tone="success">{add.data.email} is suppressed.</Notice>}
        <ErrorMessage error={add.error} />
      </div>
    </form>
  );
}

function RemoveButton({ entry }: { entry: Suppression }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => suppressions.remove(project.id, entry.email),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: allSuppressions(project.id) }),
  });
  return (
    <ConfirmButton
      className="btn"
      label="Remove"
      named={entry.email}
      title={`Remove ${entry.email}?`}
      description="Mail to this address is sent again. Remove an address only when you know it works and its owner wants your mail."
      confirm="Remove from the list"
      pendingLabel="Removing…"
      action={remove}
    />
  );
}

/** The suppression list: addresses Posthorn does not send to (bounces, complaints, unsubscribes, by hand). */
export default function Suppressions() {
  const { project } = useProject();
  const [reason, setReason] = useState<SuppressionReason | ''>('');
  const [page, setPage] = useState(1);
  const list = useQuery({
    ...suppressionsQuery(project.id, { reason: reason || undefined, page }),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <PageHeader title="Suppressions" />
      <p className="muted">
        Mail is not sent to these addresses: hard bounces and complaints are added by themselves, unsubscribes
        block marketing and automation only.
      </p>
      <Section title="Add an address">
        <AddForm />
      </Section>
      <div className="filters">
        <SelectField
          label="Reason"
          name="filter-reason"
          value={reason}
          onChange={(v) => {
            setReason(v);
            setPage(1);
          }}
          options={[
            { value: '', label: 'Any reason' },
            ...SUPPRESSION_REASONS.map((r) => ({ value: r, label: REASON_LABEL[r] })),
          ]}
        />
      </div>
      <Loaded
        query={list}
        isEmpty={(data) => data.total === 0}
        empty={<p>No suppressed addresses{reason ? ' for this reason' : ''}.</p>}
      >
        {(data) => (
          <PagedTable
            caption="Suppressed addresses, newest first"
            rows={data.data}
            rowKey={(s) => s.email}
            columns={[
              { label: 'Address', cell: (s) => s.email, className: 'break' },
              { label: 'Reason', cell: (s) => REASON_LABEL[s.reason] ?? s.reason },
              {
                label: 'Detail',
                className: 'break',
                cell: (s) =>
                  s.source_email_id ? (
                    <Link to="/emails/$emailId" params={{ emailId: s.source_email_id }}>
                      {s.detail || 'the email'}
                    </Link>
                  ) : (
                    (s.detail ?? '—')
                  ),
              },
              { label: 'Added', cell: (s) => formatDateTime(s.created_at) },
              { label: 'Actions', cell: (s) => <RemoveButton entry={s} /> },
            ]}
            pager={paging(page, data.total, SUPPRESSIONS_PER_PAGE, ['address', 'addresses'], {
              onPage: setPage,
            })}
          />
        )}
      </Loaded>
    </>
  );
}
