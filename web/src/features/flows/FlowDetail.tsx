import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { type Flow, flowQuery, flows } from '../../api/flows.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';
import { FlowEnrollments } from './FlowEnrollments.tsx';
import { FlowBuilder } from './flow-builder.tsx';
import '../campaigns/campaigns.css';
import './flows.css';

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

function Actions({ flow }: { flow: Flow }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const act = useMutation({
    mutationFn: (action: 'activate' | 'pause' | 'archive' | 'delete') =>
      action === 'delete' ? flows.remove(project.id, flow.id) : flows[action](project.id, flow.id),
    onSuccess: async (updated, action) => {
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'flows'] });
      if (action === 'delete') navigate({ to: '/flows' });
      else queryClient.setQueryData(['project', project.id, 'flow', flow.id], updated);
    },
  });
  const button = (action: 'activate' | 'pause' | 'archive' | 'delete', label: string, danger?: string) => (
    <button
      type="button"
      className={action === 'activate' ? 'btn primary' : danger ? 'btn danger' : 'btn'}
      disabled={act.isPending}
      onClick={() => {
        if (!danger || window.confirm(danger)) act.mutate(action);
      }}
    >
      {label}
    </button>
  );
  return (
    <div className="flow-actions">
      <div className="actions">
        {(flow.status === 'draft' || flow.status === 'paused') && button('activate', 'Activate')}
        {flow.status === 'active' && button('pause', 'Pause')}
        {(flow.status === 'draft' || flow.status === 'paused') &&
          button(
            'archive',
            'Archive',
            'Archive the flow? It becomes read-only and running enrollments are cancelled.',
          )}
        {flow.status !== 'active' &&
          button('delete', 'Delete', 'Delete the flow and all its enrollments? This cannot be undone.')}
      </div>
      <ErrorMessage error={act.error} />
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
