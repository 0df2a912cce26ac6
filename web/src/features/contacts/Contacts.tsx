import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import {
  CONTACTS_PER_PAGE,
  type Contact,
  contacts as contactsApi,
  contactsQuery,
  listsQuery,
  segmentsQuery,
} from '../../api/audience.ts';
import { type Column, PagedTable, pageLink, paging } from '../../components/DataTable.tsx';
import { DialogButton } from '../../components/Dialog.tsx';
import { CheckboxField, Field, SelectField } from '../../components/Field.tsx';
import { ActionForm, FilterForm } from '../../components/Form.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
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
  return (
    <FilterForm label="Search contacts" onSearch={() => set({ q: text.trim() || undefined })}>
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
    </FilterForm>
  );
}

const nameOf = (c: Contact) => [c.first_name, c.last_name].filter(Boolean).join(' ');

const contactColumns: Column<Contact>[] = [
  {
    label: 'Email',
    className: 'break',
    cell: (c) => (
      <Link to="/contacts/$contactId" params={{ contactId: c.id }}>
        {c.email}
      </Link>
    ),
  },
  { label: 'Name', cell: (c) => nameOf(c) || '—' },
  {
    label: 'Marketing',
    cell: (c) => (
      <span className={`badge ${c.subscribed ? 'badge-good' : 'badge-muted'}`}>
        {c.subscribed ? 'subscribed' : 'unsubscribed'}
      </span>
    ),
  },
  { label: 'Lists', cell: (c) => formatNumber(c.lists.length) },
  { label: 'Created', cell: (c) => formatDateTime(c.created_at) },
];

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
  return (
    <ActionForm label="New contact" action={create} submit="Create contact" pendingLabel="Creating…" close>
      <Field label="Email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
      <Field label="First name" maxLength={200} value={first} onChange={(e) => setFirst(e.target.value)} />
      <Field label="Last name" maxLength={200} value={last} onChange={(e) => setLast(e.target.value)} />
      <CheckboxField
        label="Consented to marketing (recorded as consent from the dashboard)"
        checked={subscribed}
        onChange={setSubscribed}
      />
    </ActionForm>
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
        <Link to="/contacts/import" className="btn">
          Import CSV
        </Link>
        <DialogButton label="New contact" title="New contact">
          {() => <CreateContactForm />}
        </DialogButton>
      </PageHeader>
      <Filters />
      <Loaded
        query={list}
        loading="Loading contacts…"
        isEmpty={(data) => data.data.length === 0}
        empty={
          <p>
            No contacts match. Add one with <strong>New contact</strong> or import a file with{' '}
            <strong>Import CSV</strong> above. Contacts also appear when your app tracks their events or adds
            them through the API (see the API reference).
          </p>
        }
      >
        {(data) => (
          <PagedTable
            caption="Contacts, newest first"
            rows={data.data}
            columns={contactColumns}
            pager={paging(page, data.total, CONTACTS_PER_PAGE, ['contact', 'contacts'], { link: pageLink })}
          />
        )}
      </Loaded>
    </>
  );
}
