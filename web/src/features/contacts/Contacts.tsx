import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import {
  CONTACTS_PER_PAGE,
  type Contact,
  contacts as contactsApi,
  contactsQuery,
  listsQuery,
  segmentsQuery,
} from '../../api/audience.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Dialog, DialogFormActions } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';

const route = getRouteApi('/app/contacts');

function Filters() {
  const { project } = useProject();
  const search = route.useSearch();
  const navigate = useNavigate({ from: '/contacts' });
  const lists = useQuery(listsQuery(project.id));
  const segs = useQuery(segmentsQuery(project.id));
  const [text, setText] = useState(search.q ?? '');
  const set = (patch: Record<string, string | undefined>) =>
    navigate({ search: (s) => ({ ...s, ...patch, page: undefined }) });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    set({ q: text.trim() || undefined });
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="Search contacts">
      <Field
        label="Email"
        type="search"
        name="q"
        placeholder="ann or ann@example.com"
        hint="The start of an address, in any case."
        value={text}
        onChange={(e) => setText(e.target.value)}
      />
      <SelectField
        label="List"
        value={search.list ?? ''}
        onChange={(list) => set({ list: list || undefined })}
        options={[
          { value: '', label: 'Any list' },
          ...(lists.data?.data ?? []).map((l) => ({ value: l.id, label: l.name })),
        ]}
      />
      <SelectField
        label="Segment"
        value={search.segment ?? ''}
        onChange={(segment) => set({ segment: segment || undefined })}
        options={[
          { value: '', label: 'Any segment' },
          ...(segs.data?.data ?? []).map((s) => ({ value: s.id, label: s.name })),
        ]}
      />
      <SelectField
        label="Marketing"
        value={search.subscribed ?? ''}
        onChange={(subscribed) => set({ subscribed: subscribed || undefined })}
        options={[
          { value: '', label: 'Anyone' },
          { value: 'yes', label: 'Subscribed' },
          { value: 'no', label: 'Unsubscribed' },
        ]}
      />
      <button type="submit" className="btn">
        Search
      </button>
    </form>
  );
}

const nameOf = (c: Contact) => [c.first_name, c.last_name].filter(Boolean).join(' ');

function ContactRows({ list }: { list: Contact[] }) {
  return (
    <table className="table">
      <caption className="visually-hidden">Contacts, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Email</th>
          <th scope="col">Name</th>
          <th scope="col">Marketing</th>
          <th scope="col">Lists</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {list.map((c) => (
          <tr key={c.id}>
            <th scope="row" data-label="Email" className="break">
              <Link to="/contacts/$contactId" params={{ contactId: c.id }}>
                {c.email}
              </Link>
            </th>
            <td data-label="Name">{nameOf(c) || '—'}</td>
            <td data-label="Marketing">
              <span className={`badge ${c.subscribed ? 'badge-good' : 'badge-muted'}`}>
                {c.subscribed ? 'subscribed' : 'unsubscribed'}
              </span>
            </td>
            <td data-label="Lists">{formatNumber(c.lists.length)}</td>
            <td data-label="Created">{formatDateTime(c.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Pager({ page, total }: { page: number; total: number }) {
  const pages = Math.max(1, Math.ceil(total / CONTACTS_PER_PAGE));
  return (
    <nav className="pager" aria-label="Pages">
      <p>
        {formatNumber(total)} {total === 1 ? 'contact' : 'contacts'} · page {page} of {pages}
      </p>
      <div className="actions">
        {page > 1 && (
          <Link
            from="/contacts"
            search={(s) => ({ ...s, page: page - 1 > 1 ? page - 1 : undefined })}
            className="btn"
          >
            Newer
          </Link>
        )}
        {page < pages && (
          <Link from="/contacts" search={(s) => ({ ...s, page: page + 1 })} className="btn">
            Older
          </Link>
        )}
      </div>
    </nav>
  );
}

function CreateContactForm() {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [first, setFirst] = useState('');
  const [last, setLast] = useState('');
  const [subscribed, setSubscribed] = useState(true);
  const create = useMutation({
    mutationFn: () =>
      contactsApi.create(project.id, {
        email: email.trim(),
        first_name: first.trim() || null,
        last_name: last.trim() || null,
        consent: { status: subscribed ? 'granted' : 'withdrawn', source: 'dashboard' },
      }),
    onSuccess: async (contact) => {
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'contacts'] });
      navigate({ to: '/contacts/$contactId', params: { contactId: contact.id } });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="New contact">
      <Field label="Email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
      <Field label="First name" maxLength={200} value={first} onChange={(e) => setFirst(e.target.value)} />
      <Field label="Last name" maxLength={200} value={last} onChange={(e) => setLast(e.target.value)} />
      <div className="field checkbox">
        <input
          id="new-contact-subscribed"
          type="checkbox"
          checked={subscribed}
          onChange={(e) => setSubscribed(e.target.checked)}
        />
        <label htmlFor="new-contact-subscribed">
          Consented to marketing (recorded as consent from the dashboard)
        </label>
      </div>
      <ErrorMessage error={create.error} />
      <DialogFormActions label="Create contact" pendingLabel="Creating…" pending={create.isPending} />
    </form>
  );
}

function CreateContactDialog() {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className="btn primary" onClick={() => setOpen(true)}>
        New contact
      </button>
      <Dialog open={open} onOpenChange={setOpen} title="New contact">
        <CreateContactForm />
      </Dialog>
    </>
  );
}

/** The project's contacts, newest first: search by address, filter by list, segment or consent, create. */
export default function Contacts() {
  const { project } = useProject();
  const search = route.useSearch();
  const page = search.page ?? 1;
  const subscribed = search.subscribed === undefined ? undefined : search.subscribed === 'yes';
  const list = useQuery({
    ...contactsQuery(project.id, {
      search: search.q,
      list: search.list,
      segment: search.segment,
      subscribed,
      page,
    }),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <PageHeader title="Contacts">
        <CreateContactDialog />
      </PageHeader>
      <Filters />
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading contacts…</p>
      ) : list.data && list.data.data.length === 0 ? (
        <p>
          No contacts match. Add one here, import a file with <code>POST /v1/contacts/import</code>, or track
          an event with <code>POST /v1/events</code>.
        </p>
      ) : (
        list.data && (
          <>
            <ContactRows list={list.data.data} />
            <Pager page={page} total={list.data.total} />
          </>
        )
      )}
    </>
  );
}
