import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { FLOWS_PER_PAGE, flowsQuery } from '../../api/flows.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { PageButtons } from '../../components/sending-parts.tsx';
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
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading flows…</p>
      ) : list.data && list.data.data.length === 0 ? (
        <p>
          No flows yet. A flow sends messages over time: a trigger (a new contact, an event, a list) enrols a
          contact, who then goes through waits, branches and sends.
        </p>
      ) : (
        list.data && (
          <>
            <table className="table">
              <caption className="visually-hidden">Flows</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Trigger</th>
                  <th scope="col">In the flow</th>
                  <th scope="col">Entered</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((f) => (
                  <tr key={f.id}>
                    <th scope="row" data-label="Name">
                      <Link to="/flows/$flowId" params={{ flowId: f.id }}>
                        {f.name}
                      </Link>
                    </th>
                    <td data-label="Status">
                      <StatusBadge status={f.status} />
                    </td>
                    <td data-label="Trigger">{TRIGGER_LABELS[f.trigger.type] ?? f.trigger.type}</td>
                    <td data-label="In the flow">{formatNumber(f.stats.active)}</td>
                    <td data-label="Entered">{formatNumber(f.stats.entered)}</td>
                    <td data-label="Created">{formatDate(f.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <PageButtons
              page={page}
              total={list.data.total}
              perPage={FLOWS_PER_PAGE}
              noun={['flow', 'flows']}
              onPage={setPage}
            />
          </>
        )
      )}
    </>
  );
}
