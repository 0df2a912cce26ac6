import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { EMAIL_STATUSES, EMAILS_PER_PAGE, type Email, emailsQuery } from '../../api/endpoints.ts';
import { type Column, PagedTable, pageLink } from '../../components/DataTable.tsx';
import { DialogButton } from '../../components/Dialog.tsx';
import { SelectField } from '../../components/Field.tsx';
import { AddressSearch, FilterForm } from '../../components/Form.tsx';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';
import { TestEmailForm } from './TestEmail.tsx';

const route = getRouteApi('/app/emails');

function Filters() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: '/emails' });
  const [to, setTo] = useState(search.to ?? '');
  return (
    <FilterForm
      label="Filter emails"
      onSearch={() => navigate({ search: (s) => ({ ...s, to: to.trim() || undefined, page: undefined }) })}
    >
      <SelectField
        label="Status"
        name="status"
        value={search.status ?? ''}
        onChange={(status) =>
          navigate({ search: (s) => ({ ...s, status: status || undefined, page: undefined }) })
        }
        options={[{ value: '', label: 'Any status' }, ...EMAIL_STATUSES.map((s) => ({ value: s, label: s }))]}
      />
      <AddressSearch label="Recipient" name="to" value={to} onChange={setTo} />
    </FilterForm>
  );
}

const emailColumns: Column<Email>[] = [
  {
    label: 'Subject',
    cell: (email) => (
      <Link to="/emails/$emailId" params={{ emailId: email.id }}>
        {email.subject || '(no subject)'}
      </Link>
    ),
  },
  { label: 'To', cell: (email) => email.to.join(', '), className: 'break' },
  { label: 'Status', cell: (email) => <StatusBadge status={email.status} /> },
  { label: 'Created', cell: (email) => formatDateTime(email.created_at) },
];

/** Every message of the project, newest first, filtered by status or recipient; a test email to send. */
export default function Emails() {
  const { project } = useProject();
  const search = route.useSearch();
  const page = search.page ?? 1;
  const list = useQuery({
    ...emailsQuery(project.id, { status: search.status, to: search.to, page }),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <PageHeader title="Emails">
        <DialogButton label="Send a test email" title="Send a test email">
          {() => <TestEmailForm />}
        </DialogButton>
      </PageHeader>
      <Filters />
      <Loaded
        query={list}
        loading="Loading emails…"
        isEmpty={(data) => data.data.length === 0}
        empty={
          <p>
            No emails match. Send one with <strong>Send a test email</strong> above. Mail also shows here once
            it is sent: from a <Link to="/campaigns">campaign</Link>, a <Link to="/flows">flow</Link>, a
            template's test send in <Link to="/templates">Templates</Link>, <Link to="/smtp">SMTP</Link>, or
            your app through the API with a <Link to="/keys">key</Link>.
          </p>
        }
      >
        {(data) => (
          <PagedTable
            caption="Emails, newest first"
            rows={data.data}
            columns={emailColumns}
            pager={{
              page,
              total: data.total,
              perPage: EMAILS_PER_PAGE,
              noun: ['email', 'emails'],
              // over a large range a status filter's total is estimated, and says so
              estimated: data.total_estimated,
              full: data.data.length === EMAILS_PER_PAGE,
              link: pageLink,
            }}
          />
        )}
      </Loaded>
    </>
  );
}
