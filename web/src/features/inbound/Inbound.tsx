import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { accountStatusQuery } from '../../api/endpoints.ts';
import { INBOUND_PER_PAGE, type InboundSummary, inboundListQuery } from '../../api/sending.ts';
import { CopyField } from '../../components/CopyButton.tsx';
import { type Column, PagedTable, paging } from '../../components/DataTable.tsx';
import { AddressSearch, FilterForm } from '../../components/Form.tsx';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';

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

const messageColumns: Column<InboundSummary>[] = [
  {
    label: 'Subject',
    className: 'break',
    cell: (m) => (
      <>
        <Link to="/inbound/$inboundId" params={{ inboundId: m.id }}>
          {m.subject || '(no subject)'}
        </Link>
        {m.spam.flagged && (
          <>
            {' '}
            <span className="badge badge-warn">spam?</span>
          </>
        )}
      </>
    ),
  },
  { label: 'From', cell: (m) => m.from ?? m.envelope.mail_from ?? '—', className: 'break' },
  {
    label: 'To',
    cell: (m) => (m.envelope.rcpt_to.length ? m.envelope.rcpt_to : m.to).join(', '),
    className: 'break',
  },
  { label: 'DMARC', cell: (m) => <StatusBadge status={m.auth.dmarc} /> },
  { label: 'Received', cell: (m) => formatDateTime(m.created_at) },
];

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
  return (
    <>
      <PageHeader title="Inbound" />
      <InboundAddress />
      <FilterForm
        label="Filter received mail"
        onSearch={() => {
          setFilter(from.trim() || undefined);
          setPage(1);
        }}
      >
        <AddressSearch label="Sender" name="from" value={from} onChange={setFrom} />
      </FilterForm>
      <Loaded
        query={list}
        loading="Loading received mail…"
        isEmpty={(data) => data.total === 0}
        empty={<p>No mail received{filter ? ' from this sender' : ' yet'}.</p>}
      >
        {(data) => (
          <PagedTable
            caption="Received messages, newest first"
            rows={data.data}
            columns={messageColumns}
            pager={paging(page, data.total, INBOUND_PER_PAGE, ['message', 'messages'], { onPage: setPage })}
          />
        )}
      </Loaded>
    </>
  );
}
