import { useQuery } from '@tanstack/react-query';
import { sessionQuery } from '../../api/endpoints.ts';
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

/** Messages whose outcome is unknown: the connection ended after the data without an answer (tried again). */
const unknownOutcome = (r: RouteStatus) => r.nodes.reduce((sum, n) => sum + n.ambiguous, 0);

/** The last error any worker process met on the route, the newest first. */
const lastError = (r: RouteStatus) =>
  r.nodes.filter((n) => n.last_error).sort((a, b) => b.updated_at.localeCompare(a.updated_at))[0]
    ?.last_error ?? '—';

const DELIVERED = 'messages the route accepted';
const REFUSED =
  'messages the route refused or could not take (no connection, greeting or login refused): each went on to the next route or was tried again';
const UNKNOWN =
  'messages sent whose answer never came (the connection ended after the message): each is tried again, so a copy may arrive twice';

const columns: Column<RouteStatus>[] = [
  { label: 'Route', cell: (r) => r.name },
  { label: 'Leads to', cell: (r) => `${r.type}: ${r.target}` },
  {
    label: 'Health',
    cell: (r) =>
      r.nodes.length === 0 ? 'no traffic yet' : <StatusBadge status={r.healthy ? 'healthy' : 'unhealthy'} />,
  },
  { label: 'Delivered', cell: (r) => formatNumber(r.taken), title: () => DELIVERED },
  { label: 'Refused', cell: (r) => formatNumber(r.not_taken), title: () => REFUSED },
  { label: 'Unknown outcome', cell: (r) => formatNumber(unknownOutcome(r)), title: () => UNKNOWN },
  { label: 'Last error', cell: lastError },
  { label: 'Rate', cell: rate },
  { label: 'Tags', cell: (r) => r.tags ?? '—' },
];

/** For a diagnosis: each worker process's part of one route's figures, folded away. */
function Processes({ routes }: { routes: RouteStatus[] }) {
  if (routes.every((r) => r.nodes.length === 0)) return null;
  return (
    <details>
      <summary>Each worker process's part</summary>
      {routes
        .filter((route) => route.nodes.length > 0)
        .map((route) => (
          <DataTable
            key={route.name}
            caption={`Route ${route.name}, per worker process`}
            rows={route.nodes}
            rowKey={(n) => n.node}
            columns={[
              { label: 'Process', cell: (n) => n.node },
              { label: 'Health', cell: (n) => <StatusBadge status={n.healthy ? 'healthy' : 'unhealthy'} /> },
              { label: 'Delivered', cell: (n) => formatNumber(n.taken) },
              { label: 'Refused', cell: (n) => formatNumber(n.not_taken) },
              { label: 'Unknown outcome', cell: (n) => formatNumber(n.ambiguous) },
              { label: 'Last error', cell: (n) => n.last_error ?? '—' },
              { label: 'As of', cell: (n) => formatDateTime(n.updated_at) },
            ]}
          />
        ))}
    </details>
  );
}

/**
 * The operator's Routes screen (issue 31): the ways mail leaves this server, their health and
 * traffic over the whole server (each worker process's part folded away), and the rules that
 * choose among them. Only the server's operator is shown it (issue 48).
 */
export default function Routes() {
  const session = useQuery(sessionQuery);
  const report = useQuery({
    ...routesReportQuery,
    refetchInterval: ROUTES_REFRESH_MS,
    enabled: session.data?.operator === true,
  });
  if (!session.data?.operator)
    return (
      <>
        <PageHeader title="Routes" />
        <p>This screen is for the operator of this server, who set it up: ask them how mail leaves it.</p>
      </>
    );
  return (
    <>
      <PageHeader title="Routes" />
      <Loaded query={report}>
        {(data) => (
          <>
            <p>
              The ways mail leaves this server, for every project on it: what each route delivered, refused
              and left with an unknown outcome since the server's worker processes started.
            </p>
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
            <Processes routes={data.routes} />
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
