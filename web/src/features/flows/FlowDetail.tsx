import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { type Flow, flowQuery, flows } from '../../api/flows.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { ConfirmButton } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';
import { FlowEnrollments } from './FlowEnrollments.tsx';
import { FlowBuilder } from './flow-builder.tsx';
import '../campaigns/campaigns.css';
import './flows.css';
import { inPeoplesWords } from '../../api/words.ts';

const route = getRouteApi('/app/flows/$flowId');

function Counts({ flow }: { flow: Flow }) {
  const s = flow.stats;
  const items: [string, number | undefined][] = [
    ['Entered', s.entered],
    ['Active', s.active],
    ['Completed', s.completed],
    ['Exited', s.exited],
    ['Converted', s.converted],
    ['Failed', s.failed],
    ['Sent', s.sent],
    ['Opened', s.opened],
    ['Clicked', s.clicked],
  ];
  return (
    <dl className="counts" aria-label="Enrollment counts">
      {items.map(([label, value]) => (
        <div className="count" key={label}>
          <dt>{label}</dt>
          <dd>{value === undefined ? '—' : formatNumber(value)}</dd>
        </div>
      ))}
    </dl>
  );
}

type FlowAction = 'activate' | 'pause' | 'archive' | 'delete';

/** Moves the flow to another status, or deletes it (and leaves its page). */
function useFlowAction(flow: Flow, action: FlowAction) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  return useMutation({
    mutationFn: (reason?: string) =>
      action === 'delete'
        ? flows.remove(project.id, flow.id)
        : action === 'activate'
          ? flows.activate(project.id, flow.id, reason)
          : flows[action](project.id, flow.id),
    onSuccess: async (updated) => {
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'flows'] });
      if (updated === null) navigate({ to: '/flows' });
      else queryClient.setQueryData(flowQuery(project.id, flow.id).queryKey, updated);
    },
  });
}

function Actions({ flow }: { flow: Flow }) {
  const activate = useFlowAction(flow, 'activate');
  const pause = useFlowAction(flow, 'pause');
  const archive = useFlowAction(flow, 'archive');
  const remove = useFlowAction(flow, 'delete');
  const [reason, setReason] = useState('');
  const busy = [activate, pause, archive, remove].some((a) => a.isPending);
  const stopped = flow.status === 'draft' || flow.status === 'paused';
  // the circuit breaker paused it: an admin activates it again with a reason, which is recorded
  const tripped = flow.status === 'paused' && flow.status_reason?.startsWith('Paused by the circuit breaker');
  return (
    <div className="flow-actions">
      {flow.status === 'paused' && flow.status_reason && (
        <Notice tone="warning">{inPeoplesWords(flow.status_reason)}</Notice>
      )}
      {tripped && (
        <Field
          label="Why activate it again?"
          hint="Recorded with your name: what was fixed, or why the flow should go on."
          value={reason}
          onChange={(e) => setReason(e.target.value)}
          maxLength={1000}
        />
      )}
      <div className="actions">
        {stopped && (
          <button
            type="button"
            className="btn primary"
            disabled={busy || (tripped && !reason.trim())}
            onClick={() => activate.mutate(tripped ? reason : undefined)}
          >
            Activate
          </button>
        )}
        {flow.status === 'active' && (
          <button type="button" className="btn" disabled={busy} onClick={() => pause.mutate(undefined)}>
            Pause
          </button>
        )}
        {stopped && (
          <ConfirmButton
            label="Archive"
            disabled={busy}
            title="Archive the flow?"
            description="It becomes read-only and running enrollments are cancelled."
            confirm="Archive"
            pendingLabel="Archiving…"
            action={archive}
          />
        )}
        {flow.status !== 'active' && (
          <ConfirmButton
            label="Delete"
            disabled={busy}
            title="Delete the flow and all its enrollments?"
            description="This cannot be undone."
            confirm="Delete"
            pendingLabel="Deleting…"
            action={remove}
          />
        )}
      </div>
      <ErrorMessage error={activate.error ?? pause.error} />
    </div>
  );
}

/** One flow: the builder with per-step counts on the graph, its controls, and its enrollments. */
export default function FlowDetail() {
  const { project } = useProject();
  const { flowId } = route.useParams();
  const isNew = flowId === 'new';
  const flow = useQuery({ ...flowQuery(project.id, flowId), enabled: !isNew });
  const f = flow.data;
  return (
    <>
      <PageHeader title={isNew ? 'New flow' : (f?.name ?? 'Flow')}>
        {f && (
          <>
            <StatusBadge status={f.status} />
            <span className="muted small">version {f.version}</span>
          </>
        )}
      </PageHeader>
      <p>
        <Link to="/flows">All flows</Link>
      </p>
      {isNew ? (
        <FlowBuilder flow={null} />
      ) : (
        <>
          <ErrorMessage error={flow.error} />
          {flow.isPending && <p role="status">Loading the flow…</p>}
          {f && (
            <>
              {f.status === 'active' && (
                <Notice>Active: contacts enter as the trigger fires. Counts refresh every 5 seconds.</Notice>
              )}
              {f.status === 'archived' && <Notice>Archived: read-only.</Notice>}
              <Actions flow={f} />
              <Counts flow={f} />
              {f.status !== 'archived' && <FlowBuilder key={`${f.id}-${f.version}`} flow={f} />}
              <FlowEnrollments flow={f} />
            </>
          )}
        </>
      )}
    </>
  );
}
