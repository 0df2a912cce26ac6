import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { sessionQuery } from '../../api/endpoints.ts';
import {
  MAILBOX_PER_PAGE,
  MAILBOX_REFRESH_MS,
  type MailboxSummary,
  mailboxListQuery,
  mailboxStatusQuery,
} from '../../api/mailbox.ts';
import { Notice } from '../../components/Alert.tsx';
import { type Column, PagedTable, pageLink, paging } from '../../components/DataTable.tsx';
import { AddressSearch, FilterForm } from '../../components/Form.tsx';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { MailboxMessageView } from './MailboxMessage.tsx';
import './mailbox.css';
import { shownInPeoplesWords } from '../../api/words.ts';

const route = getRouteApi('/mailbox');

/** The page's own frame: it is read signed out too (a person signing up reads the code here). */
function Frame({ children }: { children: ReactNode }) {
  const session = useQuery(sessionQuery);
  return (
    <div className="mailbox-page">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar mailbox-top">
        <span className="brand">
          <img className="brand-mark" src="./favicon.svg" alt="" width="24" height="24" /> Posthorn
        </span>
        {session.data ? (
          <Link to="/" className="btn">
            Back to the dashboard
          </Link>
        ) : (
          <Link to="/sign-in" className="btn">
            Sign in
          </Link>
        )}
      </header>
      <main id="main" className="mailbox-main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

function columns(selected: string | undefined): Column<MailboxSummary>[] {
  return [
    {
      label: 'Subject',
      className: 'break',
      cell: (m) => (
        <Link
          to="/mailbox"
          search={(s) => ({ ...s, id: m.id })}
          aria-current={m.id === selected ? 'true' : undefined}
        >
          {m.subject || '(no subject)'}
        </Link>
      ),
    },
    { label: 'To', cell: (m) => m.envelope.to.join(', '), className: 'break' },
    { label: 'Captured', cell: (m) => formatDateTime(m.created_at) },
  ];
}

/** The captured messages, newest first, asked again every few seconds while shown. */
function MessageList() {
  const { to, page = 1, id } = route.useSearch();
  const navigate = useNavigate();
  const [recipient, setRecipient] = useState(to ?? '');
  const headingId = useId();
  const list = useQuery({
    ...mailboxListQuery({ to, page }),
    placeholderData: keepPreviousData,
    refetchInterval: MAILBOX_REFRESH_MS,
  });
  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>Messages</h2>
      <FilterForm
        label="Find captured mail"
        onSearch={() =>
          navigate({
            to: '/mailbox',
            search: (s) => ({ ...s, to: recipient.trim() || undefined, page: undefined }),
          })
        }
      >
        <AddressSearch label="Recipient" name="to" value={recipient} onChange={setRecipient} />
      </FilterForm>
      <Loaded
        query={list}
        loading="Loading captured mail…"
        isEmpty={(data) => data.total === 0}
        empty={
          <p>
            No mail captured{to ? ' for this recipient' : ' yet'}. New mail shows here within a few seconds.
          </p>
        }
      >
        {(data) => (
          <PagedTable
            caption="Captured messages, newest first"
            rows={data.data}
            columns={columns(id)}
            pager={paging(page, data.total, MAILBOX_PER_PAGE, ['message', 'messages'], { link: pageLink })}
          />
        )}
      </Loaded>
    </section>
  );
}

/** The list beside the chosen message; choosing one moves the focus (and a phone's view) to it. */
function MailboxContent() {
  const { id } = route.useSearch();
  const heading = useRef<HTMLHeadingElement>(null);
  const shown = useRef(id);
  useEffect(() => {
    if (id && id !== shown.current) heading.current?.focus();
    shown.current = id;
  }, [id]);
  return (
    <>
      <p className="muted">
        No relay is configured, so the mail this server sends is kept here instead: nothing leaves this
        machine.
      </p>
      <div className="mailbox">
        <MessageList />
        {id ? (
          <MailboxMessageView id={id} heading={heading} />
        ) : (
          <p className="card muted">Choose a message to read it.</p>
        )}
      </div>
    </>
  );
}

/**
 * The dev mailbox: the mail this server would have sent, kept here because no relay is configured.
 * The server says whether this browser may see it (by default only on the server's own machine).
 */
export default function Mailbox() {
  const status = useQuery(mailboxStatusQuery);
  return (
    <Frame>
      <PageHeader title="Dev mailbox" />
      <Loaded query={status} loading="Checking the dev mailbox…">
        {(s) =>
          s.available ? <MailboxContent /> : <Notice tone="warning">{shownInPeoplesWords(s.reason)}</Notice>
        }
      </Loaded>
    </Frame>
  );
}
