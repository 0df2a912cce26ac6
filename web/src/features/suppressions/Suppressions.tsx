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
import { Dialog, DialogClose } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { formatDateTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { PageButtons, Section } from '../../components/sending-parts.tsx';
import { useProject } from '../../project.tsx';

const REASON_LABEL: Record<string, string> = {
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
        onChange={(v) => setReason(v as 'manual' | 'unsubscribe')}
        options={[
          { value: 'manual', label: 'Every stream' },
          { value: 'unsubscribe', label: 'Marketing and automation only' },
        ]}
      />
      <button type="submit" className="btn primary" disabled={add.isPending}>
        {add.isPending ? 'Adding…' : 'Suppress'}
      </button>
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
  const [open, setOpen] = useState(false);
  const remove = useMutation({
    mutationFn: () => suppressions.remove(project.id, entry.email),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: allSuppressions(project.id) });
      setOpen(false);
    },
  });
  return (
    <>
      <button type="button" className="btn" onClick={() => setOpen(true)}>
        Remove<span className="visually-hidden"> {entry.email}</span>
      </button>
      <Dialog
        open={open}
        onOpenChange={setOpen}
        title={`Remove ${entry.email}?`}
        description="Mail to this address is sent again. Remove an address only when you know it works and its owner wants your mail."
      >
        <ErrorMessage error={remove.error} />
        <div className="actions">
          <button
            type="button"
            className="btn danger"
            onClick={() => remove.mutate()}
            disabled={remove.isPending}
          >
            {remove.isPending ? 'Removing…' : 'Remove from the list'}
          </button>
          <DialogClose asChild>
            <button type="button" className="btn">
              Cancel
            </button>
          </DialogClose>
        </div>
      </Dialog>
    </>
  );
}

function SuppressionTable({ list }: { list: Suppression[] }) {
  return (
    <table className="table">
      <caption className="visually-hidden">Suppressed addresses, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Address</th>
          <th scope="col">Reason</th>
          <th scope="col">Detail</th>
          <th scope="col">Added</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {list.map((s) => (
          <tr key={s.email}>
            <th scope="row" data-label="Address" className="break">
              {s.email}
            </th>
            <td data-label="Reason">{REASON_LABEL[s.reason] ?? s.reason}</td>
            <td data-label="Detail" className="break">
              {s.source_email_id ? (
                <Link to="/emails/$emailId" params={{ emailId: s.source_email_id }}>
                  {s.detail || 'the email'}
                </Link>
              ) : (
                (s.detail ?? '—')
              )}
            </td>
            <td data-label="Added">{formatDateTime(s.created_at)}</td>
            <td data-label="Actions">
              <RemoveButton entry={s} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
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
            setReason(v as SuppressionReason | '');
            setPage(1);
          }}
          options={[
            { value: '', label: 'Any reason' },
            ...SUPPRESSION_REASONS.map((r) => ({ value: r, label: REASON_LABEL[r] ?? r })),
          ]}
        />
      </div>
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading…</p>
      ) : list.data && list.data.total === 0 ? (
        <p>No suppressed addresses{reason ? ' for this reason' : ''}.</p>
      ) : (
        list.data && (
          <>
            <SuppressionTable list={list.data.data} />
            <PageButtons
              page={page}
              total={list.data.total}
              perPage={SUPPRESSIONS_PER_PAGE}
              noun={['address', 'addresses']}
              onPage={setPage}
            />
          </>
        )
      )}
    </>
  );
}
