import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type FormEvent, useId, useState } from 'react';
import { type ContactList, type ListChange, lists, listsQuery } from '../../api/audience.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Dialog, DialogClose } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';

const MAX_EMAILS = 1000;

function CancelButton() {
  return (
    <DialogClose asChild>
      <button type="button" className="btn">
        Cancel
      </button>
    </DialogClose>
  );
}

function CreateListDialog() {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: () =>
      lists.create(project.id, { name: name.trim(), description: description.trim() || null }),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: listsQuery(project.id).queryKey });
      setOpen(false);
      setName('');
      setDescription('');
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <>
      <button type="button" className="btn primary" onClick={() => setOpen(true)}>
        New list
      </button>
      <Dialog open={open} onOpenChange={setOpen} title="New list">
        <form onSubmit={submit} aria-label="New list">
          <Field
            label="Name"
            required
            maxLength={200}
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <Field
            label="Description"
            maxLength={1000}
            value={description}
            onChange={(e) => setDescription(e.target.value)}
          />
          <ErrorMessage error={create.error} />
          <div className="actions">
            <button type="submit" className="btn primary" disabled={create.isPending}>
              {create.isPending ? 'Creating…' : 'Create list'}
            </button>
            <CancelButton />
          </div>
        </form>
      </Dialog>
    </>
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
  const id = useId();
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
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const emails = addressesIn(text);
    setTooMany(emails.length > MAX_EMAILS);
    if (emails.length > 0 && emails.length <= MAX_EMAILS) add.mutate(emails);
  };
  return (
    <form onSubmit={submit} aria-label={`Add contacts to ${list.name}`}>
      <div className="field">
        <label htmlFor={id}>Email addresses</label>
        <textarea
          id={id}
          rows={6}
          required
          aria-describedby={`${id}-hint`}
          value={text}
          onChange={(e) => setText(e.target.value)}
        />
        <p className="hint" id={`${id}-hint`}>
          One per line or separated by commas, up to {formatNumber(MAX_EMAILS)}. Unknown addresses become
          contacts.
        </p>
      </div>
      {tooMany && (
        <p className="alert alert-error" role="alert">
          At most {formatNumber(MAX_EMAILS)} addresses at a time; for more, import a file.
        </p>
      )}
      {add.data && <Notice tone="success">{changeText(add.data)}</Notice>}
      <ErrorMessage error={add.error} />
      <div className="actions">
        <button type="submit" className="btn primary" disabled={add.isPending}>
          {add.isPending ? 'Adding…' : 'Add contacts'}
        </button>
        <DialogClose asChild>
          <button type="button" className="btn">
            Done
          </button>
        </DialogClose>
      </div>
    </form>
  );
}

function AddContactsButton({ list }: { list: ContactList }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className="btn" onClick={() => setOpen(true)}>
        Add contacts<span className="visually-hidden"> to {list.name}</span>
      </button>
      <Dialog open={open} onOpenChange={setOpen} title={`Add contacts to ${list.name}`}>
        <AddContactsForm list={list} />
      </Dialog>
    </>
  );
}

function ListTable({ data }: { data: ContactList[] }) {
  if (data.length === 0)
    return <p>No lists yet. A list is a group of contacts who joined it, like a newsletter.</p>;
  return (
    <table className="table">
      <caption className="visually-hidden">Lists of this project</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Members</th>
          <th scope="col">Unsubscribed</th>
          <th scope="col">Created</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {data.map((l) => (
          <tr key={l.id}>
            <th scope="row" data-label="Name" className="break">
              {l.name}
              {l.description && <span className="muted small list-description">{l.description}</span>}
            </th>
            <td data-label="Members">
              <Link to="/contacts" search={{ list: l.id }}>
                {formatNumber(l.member_count)}
                <span className="visually-hidden"> members of {l.name}</span>
              </Link>
            </td>
            <td data-label="Unsubscribed">{formatNumber(l.unsubscribed_count)}</td>
            <td data-label="Created">{formatDate(l.created_at)}</td>
            <td data-label="Actions">
              <AddContactsButton list={l} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The project's lists with their member counts; create one, add contacts to one by address. */
export default function Lists() {
  const { project } = useProject();
  const list = useQuery(listsQuery(project.id));
  return (
    <>
      <PageHeader title="Lists">
        <CreateListDialog />
      </PageHeader>
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading lists…</p>
      ) : (
        list.data && <ListTable data={list.data.data} />
      )}
    </>
  );
}
