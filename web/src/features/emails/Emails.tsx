import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import {
  EMAIL_STATUSES,
  EMAILS_PER_PAGE,
  type Email,
  type EmailStatus,
  emailsQuery,
} from '../../api/endpoints.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

const route = getRouteApi('/app/emails');

function Filters() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: '/emails' });
  const [to, setTo] = useState(search.to ?? '');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    navigate({ search: (s) => ({ ...s, to: to.trim() || undefined, page: undefined }) });
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="Filter emails">
      <SelectField
        label="Status"
        name="status"
        value={search.status ?? ''}
        onChange={(status) =>
          navigate({
            search: (s) => ({
              ...s,
              status: (status || undefined) as EmailStatus | undefined,
              page: undefined,
            }),
          })
        }
        options={[{ value: '', label: 'Any status' }, ...EMAIL_STATUSES.map((s) => ({ value: s, label: s }))]}
      />
      <Field
        label="Recipient"
        type="search"
        name="to"
        placeholder="someone@example.com"
        value={to}
        onChange={(e) => setTo(e.target.value)}
      />
      <button type="submit" className="btn">
        Search
      </button>
    </form>
  );
}

function EmailRows({ emails }: { emails: Email[] }) {
  return (
    <table className="table">
      <caption className="visually-hidden">Emails, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Subject</th>
          <th scope="col">To</th>
          <th scope="col">Status</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {emails.map((email) => (
          <tr key={email.id}>
            <th scope="row" data-label="Subject">
              <Link to="/emails/$emailId" params={{ emailId: email.id }}>
                {email.subject || '(no subject)'}
              </Link>
            </th>
            <td data-label="To" className="break">
              {email.to.join(', ')}
            </td>
            <td data-label="Status">
              <StatusBadge status={email.status} />
            </td>
            <td data-label="Created">{formatDateTime(email.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Pages of the log; over a large range a status filter's total is estimated, and says so. */
function Pager({
  page,
  total,
  estimated,
  full,
}: {
  page: number;
  total: number;
  estimated: boolean;
  full: boolean;
}) {
  const pages = Math.max(1, Math.ceil(total / EMAILS_PER_PAGE));
  const about = estimated ? 'about ' : '';
  const older = estimated ? full : page < pages;
  return (
    <nav className="pager" aria-label="Pages">
      <p>
        {about}
        {formatNumber(total)} {total === 1 ? 'email' : 'emails'} · page {page} of {about}
        {formatNumber(pages)}
      </p>
      <div className="actions">
        {page > 1 && (
          <Link
            from="/emails"
            search={(s) => ({ ...s, page: page - 1 > 1 ? page - 1 : undefined })}
            className="btn"
          >
            Newer
          </Link>
        )}
        {older && (
          <Link from="/emails" search={(s) => ({ ...s, page: page + 1 })} className="btn">
            Older
          </Link>
        )}
      </div>
    </nav>
  );
}

/** Every message of the project, newest first, filtered by status or recipient. */
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
      <PageHeader title="Emails" />
      <Filters />
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading emails…</p>
      ) : list.data && list.data.data.length === 0 ? (
        <p>
          No emails match. Send one with <code>POST /v1/emails</code>, SMTP or the CLI.
        </p>
      ) : (
        list.data && (
          <>
            <EmailRows emails={list.data.data} />
            <Pager
              page={page}
              total={list.data.total}
              estimated={list.data.total_estimated}
              full={list.data.data.length === EMAILS_PER_PAGE}
            />
          </>
        )
      )}
    </>
  );
}
