import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { type ContactList, type ListChange, lists, listsQuery } from '../../api/audience.ts';
import { Notice } from '../../components/Alert.tsx';
import { type Column, DataTable } from '../../components/DataTable.tsx';
import { DialogButton } from '../../components/Dialog.tsx';
import { Field, TextAreaField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';

const MAX_EMAILS = 1000;

function CreateListForm({ onCreated }: { onCreated(): void }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: () =>
      lists.create(project.id, { name: name.trim(), description: description.trim() || null }),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: listsQuery(project.id).queryKey });
      onCreated();
    },
  });
  return (
    <ActionForm label="New list" action={create} submit="Create list" pendingLabel="Creating…" close>
      <Field label="Name" required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
      <Field
        label="Description"
        maxLength={1000}
        value={description}
        onChange={(e) => setDescription(e.target.value)}
      />
    </ActionForm>
  );
}

/** The addresses in free text: one per line, or separated by commas, semicolons or spaces. */
function addressesIn(text: string): string[] {
  return [
    ...new Set(
      text
        .split(/[\s,;]+/)
        .map((a) => a.trim())
        .filter(Boolean),
    ),
  ];
}

function changeText(change: ListChange): string {
  const parts = [`${formatNumber(change.added ?? 0)} added`];
  if (change.already_members) parts.push(`${formatNumber(change.already_members)} already on the list`);
  const created = change.contacts_created ?? 0;
  if (created) parts.push(`${formatNumber(created)} new ${created === 1 ? 'contact' : 'contacts'} created`);
  return `${parts.join(', ')}.`;
}

function AddContactsForm({ list }: { list: ContactList }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [text, setText] = useState('');
  const [tooMany, setTooMany] = useState(false);
  const add = useMutation({
    mutationFn: (emails: string[]) => lists.addEmails(project.id, list.id, emails),
    onSuccess: async () => {
      setText('');
      await Promise.all(
        ['lists', 'contacts', 'contact'].map((k) =>
          queryClient.invalidateQueries({ queryKey: ['project', project.id, k] }),
        ),
      );
    },
  });
  const submit = () => {
    const emails = addressesIn(text);
    setTooMany(emails.length > MAX_EMAILS);
    if (emails.length > 0 && emails.length <= MAX_EMAILS) add.mutate(emails);
  };
  return (
    <ActionForm
      label={`Add contacts to ${list.name}`}
      action={add}
      onSubmit={submit}
      submit="Add contacts"
      pendingLabel="Adding…"
      close="Done"
    >
      <TextAreaField
        label="Email addresses"
        rows={6}
        required
        hint={`One per line or separated by commas, up to ${formatNumber(MAX_EMAILS)}. Unknown addresses become contacts.`}
        value={text}
        onChange={(e) => setText(e.target.value)}
      />
      {tooMany && (
        <p className="alert alert-error" role="alert">
          At most {formatNumber(MAX_EMAILS)} addresses at a time; for more, import a file.
        </p>
      )}
      {add.data && <Notice tone="success">{changeText(add.data)}</Notice>}
    </ActionForm>
  );
}

const listColumns: Column<ContactList>[] = [
  {
    label: 'Name',
    className: 'break',
    cell: (l) => (
      <>
        {l.name}
        {l.description && <span className="muted small list-description">{l.description}</span>}
      </>
    ),
  },
  {
    label: 'Members',
    cell: (l) => (
      <Link to="/contacts" search={{ list: l.id }}>
        {formatNumber(l.member_count)}
        <span className="visually-hidden"> members of {l.name}</span>
      </Link>
    ),
  },
  { label: 'Unsubscribed', cell: (l) => formatNumber(l.unsubscribed_count) },
  { label: 'Created', cell: (l) => formatDate(l.created_at) },
  {
    label: 'Actions',
    cell: (l) => (
      <DialogButton
        className="btn"
        label="Add contacts"
        named={`to ${l.name}`}
        title={`Add contacts to ${l.name}`}
      >
        {() => <AddContactsForm list={l} />}
      </DialogButton>
    ),
  },
];

/** The project's lists with their member counts; create one, add contacts to one by address. */
export default function Lists() {
  const { project } = useProject();
  const list = useQuery(listsQuery(project.id));
  return (
    <>
      <PageHeader title="Lists">
        <DialogButton label="New list" title="New list">
          {(close) => <CreateListForm onCreated={close} />}
        </DialogButton>
      </PageHeader>
      <Loaded
        query={list}
        loading="Loading lists…"
        isEmpty={(data) => data.data.length === 0}
        empty={<p>No lists yet. A list is a group of contacts who joined it, like a newsletter.</p>}
      >
        {(data) => <DataTable caption="Lists of this project" rows={data.data} columns={listColumns} />}
      </Loaded>
    </>
  );
}
