import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { accountStatusQuery } from '../../api/endpoints.ts';
import { INBOUND_PER_PAGE, type InboundSummary, inboundListQuery } from '../../api/sending.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { formatDateTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { CopyField, PageButtons } from '../../components/sending-parts.tsx';
import { useProject } from '../../project.tsx';

/** Where to send mail to this project (GET /v1/me `inbound`): any local part works. */
function InboundAddress() {
  const { project } = useProject();
  const me = useQuery(accountStatusQuery(project.id));
  const inbound = me.data?.inbound;
  if (!inbound) return null;
  return (
    <CopyField
      label="Inbound address"
      value={inbound.address}
      hint={
        <>
          Any address at <code>{inbound.domain}</code> reaches this project, as does mail to your verified
          domains with inbound turned on.
        </>
      }
    />
  );
}

function MessageRows({ list }: { list: InboundSummary[] }) {
  return (
    <table className="table">
      <caption className="visually-hidden">Received messages, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Subject</th>
          <th scope="col">From</th>
          <th scope="col">To</th>
          <th scope="col">DMARC</th>
          <th scope="col">Received</th>
        </tr>
      </thead>
      <tbody>
        {list.map((m) => (
          <tr key={m.id}>
            <th scope="row" data-label="Subject" className="break">
              <Link to="/inbound/$inboundId" params={{ inboundId: m.id }}>
                {m.subject || '(no subject)'}
              </Link>
              {m.spam.flagged && (
                <>
                  {' '}
                  <span className="badge badge-warn">spam?</span>
                </>
              )}
            </th>
            <td data-label="From" className="break">
              {m.from ?? m.envelope.mail_from ?? '—'}
            </td>
            <td data-label="To" className="break">
              {(m.envelope.rcpt_to.length ? m.envelope.rcpt_to : m.to).join(', ')}
            </td>
            <td data-label="DMARC">
              <StatusBadge status={m.auth.dmarc} />
            </td>
            <td data-label="Received">{formatDateTime(m.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Mail received by the project, newest first, with a sender filter. */
export default function Inbound() {
  const { project } = useProject();
  const [from, setFrom] = useState('');
  const [filter, setFilter] = useState<string | undefined>();
  const [page, setPage] = useState(1);
  const list = useQuery({
    ...inboundListQuery(project.id, { from: filter, page }),
    placeholderData: keepPreviousData,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setFilter(from.trim() || undefined);
    setPage(1);
  };
  return (
    <>
      <PageHeader title="Inbound" />
      <InboundAddress />
      <form className="filters" onSubmit={submit} aria-label="Filter received mail">
        <Field
          label="Sender"
          type="search"
          name="from"
          placeholder="someone@example.com"
          value={from}
          onChange={(e) => setFrom(e.target.value)}
        />
        <button type="submit" className="btn">
          Search
        </button>
      </form>
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading received mail…</p>
      ) : list.data && list.data.total === 0 ? (
        <p>No mail received{filter ? ' from this sender' : ' yet'}.</p>
      ) : (
        list.data && (
          <>
            <MessageRows list={list.data.data} />
            <PageButtons
              page={page}
              total={list.data.total}
              perPage={INBOUND_PER_PAGE}
              noun={['message', 'messages']}
              onPage={setPage}
            />
          </>
        )
      )}
    </>
  );
}
