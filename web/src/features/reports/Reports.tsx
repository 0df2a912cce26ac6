import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { campaignsQuery } from '../../api/campaigns.ts';
import { type RevenueGroup, revenueQuery } from '../../api/overview.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { SelectField } from '../../components/Field.tsx';
import { formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';

const route = getRouteApi('/app/reports');

/** A row's currency: null for values tracked without one. */
const currencyOf = (row: { currency?: string | number | null }) =>
  row.currency == null ? null : String(row.currency);

const LABELS: Record<RevenueGroup, string> = {
  day: 'Day',
  event: 'Event',
  campaign: 'Campaign',
  flow: 'Flow',
};

function money(amount: number, currency: string | null): string {
  if (currency === null) return `${formatNumber(amount)} (no currency)`;
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
  } catch {
    return `${formatNumber(amount)} ${currency}`;
  }
}

/** The group's cell: a campaign by its name (linked), others as they are; none for events outside any. */
function GroupCell({
  by,
  value,
  names,
}: {
  by: RevenueGroup;
  value: string | null;
  names: Map<string, string>;
}) {
  if (value === null) return <span className="muted">{by === 'campaign' ? 'no campaign' : 'no flow'}</span>;
  if (by === 'campaign')
    return (
      <Link to="/campaigns/$campaignId" params={{ campaignId: value }}>
        {names.get(value) ?? value}
      </Link>
    );
  return <>{value}</>;
}

/** Revenue from tracked events with a value: by day, event, campaign (attributed) or flow, per currency. */
export default function Reports() {
  const { project } = useProject();
  const by = route.useSearch().by ?? 'day';
  const navigate = useNavigate({ from: '/reports' });
  const report = useQuery({ ...revenueQuery(project.id, by), placeholderData: keepPreviousData });
  const camps = useQuery({ ...campaignsQuery(project.id, 1), enabled: by === 'campaign' });
  const names = new Map((camps.data?.data ?? []).map((c) => [c.id, c.name]));
  const rows = report.data?.data ?? [];
  const totals = new Map<string | null, number>();
  for (const r of rows) totals.set(currencyOf(r), (totals.get(currencyOf(r)) ?? 0) + Number(r.revenue));
  return (
    <>
      <PageHeader title="Reports" />
      <p className="muted">
        Revenue is the value your app gives the events it tracks (with a value and a currency; a value tracked
        without a currency is shown apart); a campaign or flow is credited when a person clicked its email
        within 7 days before.
      </p>
      <div className="filters">
        <SelectField
          label="Revenue by"
          value={by}
          onChange={(next) =>
            navigate({ search: { by: next === 'day' ? undefined : (next as RevenueGroup) } })
          }
          options={(Object.keys(LABELS) as RevenueGroup[]).map((g) => ({ value: g, label: LABELS[g] }))}
        />
      </div>
      <ErrorMessage error={report.error} />
      {report.isPending ? (
        <p role="status">Loading revenue…</p>
      ) : rows.length === 0 ? (
        <p>No revenue yet: track events with a value to see it here.</p>
      ) : (
        <>
          <p>
            Total:{' '}
            <strong>{[...totals].map(([currency, amount]) => money(amount, currency)).join(' · ')}</strong>
          </p>
          <DataTable
            caption={`Revenue by ${LABELS[by].toLowerCase()}`}
            rows={rows}
            rowKey={(r) => `${r[by]}-${r.currency}`}
            columns={[
              {
                label: LABELS[by],
                cell: (r) => (
                  <GroupCell by={by} value={r[by] === null ? null : String(r[by])} names={names} />
                ),
              },
              { label: 'Currency', cell: (r) => currencyOf(r) ?? <span className="muted">none</span> },
              { label: 'Revenue', cell: (r) => money(Number(r.revenue), currencyOf(r)) },
              { label: 'Events', cell: (r) => formatNumber(Number(r.events)) },
            ]}
          />
        </>
      )}
    </>
  );
}
