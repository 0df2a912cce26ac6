import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { FLOWS_PER_PAGE, flowsQuery } from '../../api/flows.ts';
import { PagedTable, paging } from '../../components/DataTable.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';
import { TRIGGER_LABELS } from './flow-model.ts';

/** Flows (journeys): each with its trigger, status and how many contacts are in it. */
export default function Flows() {
  const { project } = useProject();
  const [page, setPage] = useState(1);
  const list = useQuery({ ...flowsQuery(project.id, page), placeholderData: keepPreviousData });
  return (
    <>
      <PageHeader title="Flows">
        <Link to="/flows/$flowId" params={{ flowId: 'new' }} className="btn primary">
          New flow
        </Link>
      </PageHeader>
      <Loaded
        query={list}
        loading="Loading flows…"
        isEmpty={(data) => data.data.length === 0}
        empty={
          <p>
            No flows yet. A flow sends messages over time: a trigger (a new contact, an event, a list) enrols
            a contact, who then goes through waits, branches and sends.
          </p>
        }
      >
        {(data) => (
          <PagedTable
            caption="Flows"
            rows={data.data}
            columns={[
              {
                label: 'Name',
                cell: (f) => (
                  <Link to="/flows/$flowId" params={{ flowId: f.id }}>
                    {f.name}
                  </Link>
                ),
              },
              { label: 'Status', cell: (f) => <StatusBadge status={f.status} /> },
              { label: 'Trigger', cell: (f) => TRIGGER_LABELS[f.trigger.type] ?? f.trigger.type },
              { label: 'In the flow', cell: (f) => formatNumber(f.stats.active) },
              { label: 'Entered', cell: (f) => formatNumber(f.stats.entered) },
              { label: 'Created', cell: (f) => formatDate(f.created_at) },
            ]}
            pager={paging(page, data.total, FLOWS_PER_PAGE, ['flow', 'flows'], { onPage: setPage })}
          />
        )}
      </Loaded>
    </>
  );
}
