import { useQuery } from '@tanstack/react-query';
import { ROUTES_REFRESH_MS, type RouteStatus, routesReportQuery } from '../../api/operator.ts';
import { type Column, DataTable } from '../../components/DataTable.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';

const rate = (r: RouteStatus) =>
  [
    r.rate_per_second === null ? null : `${r.rate_per_second}/s`,
    r.rate_per_hour === null ? null : `${r.rate_per_hour}/h`,
  ]
    .filter(Boolean)
    .join(', ') || 'no limit';

const columns: Column<RouteStatus>[] = [
  { label: 'Route', cell: (r) => r.name },
  { label: 'Leads to', cell: (r) => `${r.type}: ${r.target}` },
  {
    label: 'Health',
    cell: (r) =>
      r.nodes.length === 0 ? 'no traffic yet' : <StatusBadge status={r.healthy ? 'healthy' : 'unhealthy'} />,
  },
  { label: 'Taken', cell: (r) => formatNumber(r.taken) },
  {
    label: 'Not taken',
    cell: (r) => formatNumber(r.not_taken),
    title: () => 'failures that moved a message to the next route (no connection, greeting or login refused)',
  },
  { label: 'Rate', cell: rate },
  { label: 'Tags', cell: (r) => r.tags ?? '—' },
];

/** Each worker process's view of one route: health, traffic, the last error and when it wrote. */
function Nodes({ route }: { route: RouteStatus }) {
  if (route.nodes.length === 0) return null;
  return (
    <DataTable
      caption={`Route ${route.name}, per worker process`}
      rows={route.nodes}
      rowKey={(n) => n.node}
      columns={[
        { label: 'Process', cell: (n) => n.node },
        { label: 'Health', cell: (n) => <StatusBadge status={n.healthy ? 'healthy' : 'unhealthy'} /> },
        { label: 'Taken', cell: (n) => formatNumber(n.taken) },
        { label: 'Not taken', cell: (n) => formatNumber(n.not_taken) },
        { label: 'Ambiguous', cell: (n) => formatNumber(n.ambiguous) },
        { label: 'Last error', cell: (n) => n.last_error ?? '—' },
        { label: 'As of', cell: (n) => formatDateTime(n.updated_at) },
      ]}
    />
  );
}

/**
 * The operator's Routes screen (issue 31): the ways mail leaves this server, their health and
 * traffic as each worker process last wrote them, and the rules that choose among them.
 */
export default function Routes() {
  const report = useQuery({ ...routesReportQuery, refetchInterval: ROUTES_REFRESH_MS });
  return (
    <>
      <PageHeader title="Routes" />
      <Loaded query={report}>
        {(data) => (
          <>
            <p className="muted">
              {data.file ? (
                <>
                  From <code>{data.file}</code> (<code>POSTHORN_ROUTES</code>).
                </>
              ) : (
                <>
                  One route, <code>default</code>: set <code>POSTHORN_ROUTES</code> for more.
                </>
              )}{' '}
              Refreshed every {ROUTES_REFRESH_MS / 1000} seconds.
            </p>
            <DataTable caption="Routes" rows={data.routes} rowKey={(r) => r.name} columns={columns} />
            {data.routes.map((route) => (
              <Nodes key={route.name} route={route} />
            ))}
            <h2>Rules, in order</h2>
            <ol>
              {data.rules.map((rule, i) => {
                const match = Object.entries(rule.match).map(([k, v]) => `${k} = ${v}`);
                return (
                  // biome-ignore lint/suspicious/noArrayIndexKey: the rules' order is their identity
                  <li key={i}>
                    {match.length ? match.join(', ') : 'every message'} → {rule.routes.join(', then ')}
                  </li>
                );
              })}
            </ol>
          </>
        )}
      </Loaded>
    </>
  );
}
